import type { Datapath } from './datapath.js';
import { CniError, CniErrorCode } from './errors.js';
import { execDelegate, execPlugin, findInPath } from './invoke-exec.js';
import { type CniPlugin, type Delegate, invokePlugin } from './skeleton.js';
import { MemoryResultCache, type ResultCache } from './result-cache.js';

/** Runs a plugin for the runtime: `type` + env + stdin in, exit code + stdout out, whatever the mechanism. */
export interface Invoker {
  invoke(
    type: string,
    env: Record<string, string | undefined>,
    stdin: string,
  ): Promise<{ exitCode: number; stdout: string; stderr?: string }>;
  /** A result cache that goes with this invoker; a CniRuntime uses it unless told otherwise. */
  readonly resultCache?: ResultCache;
}

/** Spawns binaries found on the given directories (CNI_PATH), never through a shell. */
export class ExecInvoker implements Invoker {
  /**
   * @param wrapper argument array the plugin path is appended to, e.g. `['ip', 'netns', 'exec', 'node-1']`
   *   to run every plugin inside another namespace (how tests keep the real node untouched).
   */
  constructor(
    private readonly binDirs: readonly string[],
    private readonly timeoutMs = 60_000,
    private readonly wrapper: readonly string[] = [],
  ) {}

  async invoke(type: string, env: Record<string, string | undefined>, stdin: string) {
    const file = findInPath(type, this.binDirs);
    const fullEnv = { ...process.env, ...env };
    if (this.wrapper.length === 0) return execPlugin(file, fullEnv, stdin, this.timeoutMs);
    return execPlugin(this.wrapper[0]!, fullEnv, stdin, this.timeoutMs, [...this.wrapper.slice(1), file]);
  }
}

export interface InProcessInvokerOptions {
  /** Plugins by `type`. */
  plugins: Iterable<CniPlugin> | Record<string, CniPlugin>;
  /** The datapath every in-process plugin programs (linux, sim, or a test double). */
  datapath: Datapath;
  /** Directories to exec types that are not registered (reference plugins in a mixed chain). Default: none. */
  binDirs?: readonly string[];
  /**
   * `memory`: a CniRuntime given this invoker keeps ADD results in memory instead of libcni's cache
   * files (pass a ResultCache to share or inspect one). Default: the runtime's disk cache.
   */
  resultCache?: 'memory' | ResultCache;
}

/**
 * Calls plugin objects directly with the same skeleton as their executables (env/stdin semantics,
 * errors, version conversion), skipping process start-up. IPAM delegation stays in-process when the
 * delegate type is registered too.
 */
export class InProcessInvoker implements Invoker {
  private readonly plugins = new Map<string, CniPlugin>();
  readonly datapath: Datapath;
  readonly resultCache?: ResultCache;
  private readonly exec?: ExecInvoker;

  constructor(opts: InProcessInvokerOptions) {
    const entries: [string, CniPlugin][] =
      Symbol.iterator in opts.plugins
        ? [...(opts.plugins as Iterable<CniPlugin>)].map((p) => [p.name, p])
        : Object.entries(opts.plugins as Record<string, CniPlugin>);
    for (const [k, p] of entries) this.plugins.set(k, p);
    this.datapath = opts.datapath;
    if (opts.binDirs?.length) this.exec = new ExecInvoker(opts.binDirs);
    if (opts.resultCache) this.resultCache = opts.resultCache === 'memory' ? new MemoryResultCache() : opts.resultCache;
  }

  register(type: string, plugin: CniPlugin): void {
    this.plugins.set(type, plugin);
  }

  private readonly delegate: Delegate = async (type, command, conf, ctx) => {
    const p = this.plugins.get(type);
    if (!p) {
      if (!this.exec) throw new CniError(CniErrorCode.PluginNotFound, `plugin "${type}" is not registered in process`);
      return execDelegate(type, command, conf, ctx);
    }
    const out = await invokePlugin(p, {
      env: { ...ctx.env, CNI_COMMAND: command },
      stdin: JSON.stringify(conf),
      datapath: async () => this.datapath,
      delegate: this.delegate,
    });
    if (out.error) throw out.error;
    return out.result;
  };

  private readonly busy = new Map<string, number>();

  async invoke(type: string, env: Record<string, string | undefined>, stdin: string) {
    const p = this.plugins.get(type);
    if (!p) {
      if (this.exec) return this.exec.invoke(type, env, stdin);
      throw new CniError(CniErrorCode.PluginNotFound, `plugin "${type}" is not registered in process`);
    }
    const netns = env.CNI_NETNS;
    if (netns) this.busy.set(netns, (this.busy.get(netns) ?? 0) + 1);
    let out: Awaited<ReturnType<typeof invokePlugin>>;
    try {
      out = await invokePlugin(p, { env, stdin, datapath: async () => this.datapath, delegate: this.delegate });
    } finally {
      if (netns) {
        const n = (this.busy.get(netns) ?? 1) - 1;
        if (n > 0) this.busy.set(netns, n);
        else {
          this.busy.delete(netns);
          // Nothing else is using the pod's namespace: let the datapath drop what pins it.
          this.datapath.releaseNetns?.(netns);
        }
      }
    }
    // The skeleton's stdout, exactly as an exec'd plugin prints it (a result in the config's version).
    return { exitCode: out.exitCode, stdout: out.stdout };
  }
}
