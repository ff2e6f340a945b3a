import { fstatSync, writeSync } from 'node:fs';
import type { Datapath } from './datapath.js';
import { CniError, CniErrorCode, toCniError } from './errors.js';
import { DYNAMIC_IMPORT, STDIN_HANDOVER } from './launcher.js';
import { execDelegate, findInPath } from './invoke-exec.js';
import { READ_LIMITS, readFdBounded, tooLarge } from './read-bounded.js';
import { type CniPlugin, type Delegate, invokePlugin } from './skeleton.js';
import { CURRENT_VERSION } from './types.js';

/**
 * Picks the datapath for an exec'd plugin: `KEMU_DATAPATH=linux` (default) or `sim` with
 * `KEMU_NETSIM_STATE=<state file>`. Loaded lazily so plugins that never touch the network stay fast.
 */
export async function datapathFromEnv(env: Record<string, string | undefined>): Promise<Datapath> {
  const kind = env.KEMU_DATAPATH || 'linux';
  if (kind === 'linux') {
    const { createLinuxDatapath } = await import('./datapath-linux.js');
    try {
      return createLinuxDatapath({ hostNetns: env.KEMU_HOST_NETNS || undefined });
    } catch (e) {
      throw new CniError(CniErrorCode.InvalidEnvironment, `KEMU_HOST_NETNS: ${(e as Error).message}`);
    }
  }
  if (kind === 'sim') {
    const statePath = env.KEMU_NETSIM_STATE;
    if (!statePath) {
      throw new CniError(CniErrorCode.InvalidEnvironment, 'KEMU_DATAPATH=sim needs KEMU_NETSIM_STATE=<state file>');
    }
    // Resolved through the package's own exports (works from bundled plugin executables too); a variable
    // specifier keeps the simulator optional: it is only loaded when asked for.
    const specifier = '@kemu/cni/datapath-sim';
    let mod: { createSimDatapath?: (o: { statePath: string }) => Datapath | Promise<Datapath> };
    try {
      // Started by the launcher, this code runs as a vm script, whose own import() is unavailable.
      const viaLauncher = (globalThis as Record<symbol, unknown>)[DYNAMIC_IMPORT] as
        | ((s: string) => Promise<typeof mod>)
        | undefined;
      mod = await (viaLauncher ? viaLauncher(specifier) : import(specifier));
    } catch (e) {
      throw new CniError(
        CniErrorCode.PluginNotAvailable,
        'the simulated datapath is not available in this build (KEMU_DATAPATH=sim)',
        (e as Error).message,
      );
    }
    if (typeof mod.createSimDatapath !== 'function') {
      throw new CniError(CniErrorCode.PluginNotAvailable, 'the simulated datapath module does not export createSimDatapath');
    }
    return mod.createSimDatapath({ statePath });
  }
  throw new CniError(CniErrorCode.InvalidEnvironment, `KEMU_DATAPATH must be "linux" or "sim", got ${JSON.stringify(kind)}`);
}

function stdinIsCharDevice(): boolean {
  try {
    return fstatSync(0).isCharacterDevice();
  } catch {
    return false;
  }
}

/**
 * Writes the result with blocking writes to fd 1: process.stdout on a pipe is a net.Socket, and building
 * it loads node:net and the stream machinery, a measurable part of a plugin start. A non-blocking fd 1
 * (EAGAIN) or any other failure takes the stream path for what is left.
 */
function writeStdout(text: string): void {
  let buf = Buffer.from(text);
  try {
    while (buf.length > 0) buf = buf.subarray(writeSync(1, buf));
    return;
  } catch (e) {
    // Nobody reads the result any more: nothing left to tell.
    if ((e as NodeJS.ErrnoException).code === 'EPIPE') return;
  }
  process.stdout.write(buf);
}


const STDIN_READ = { what: 'network config on stdin', maxBytes: READ_LIMITS.config };

async function readStdin(): Promise<Buffer> {
  const handed = (globalThis as Record<symbol, unknown>)[STDIN_HANDOVER];
  if (Buffer.isBuffer(handed)) return handed;
  // Blocking reads of a pipe or file on fd 0 avoid building process.stdin (a net.Socket for a pipe, with
  // node:net and the stream machinery behind it) on every plugin start. Terminals and other character
  // devices take the stream path, and so does the rest of a non-blocking pipe (what was read is kept).
  // Either way at most READ_LIMITS.config bytes are taken: stdin from /dev/zero is an error, not a hang.
  const chunks: Buffer[] = [];
  let total = 0;
  if (!stdinIsCharDevice()) {
    let r: { data: Buffer; eof: boolean };
    try {
      r = readFdBounded(0, STDIN_READ);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EBADF') return Buffer.alloc(0);
      throw e;
    }
    if (r.eof) return r.data;
    chunks.push(r.data);
    total = r.data.length;
  } else if (process.stdin.isTTY) {
    return Buffer.alloc(0);
  }
  for await (const c of process.stdin) {
    total += (c as Buffer).length;
    if (total > STDIN_READ.maxBytes) throw tooLarge(STDIN_READ);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

export interface MainOptions {
  /**
   * Plugins this executable carries and may run in process when asked to delegate to their type (e.g.
   * kemu-bridge carrying kemu-host-local). The type must still be found on CNI_PATH, as the spec requires,
   * so configuration errors are reported exactly as with exec; only the second process start is saved.
   */
  bundled?: CniPlugin[];
}

/**
 * Delegation that runs the carried plugins in process (after finding their type on CNI_PATH, as the spec
 * requires, so configuration errors read exactly as with exec) and hands every other type to `other`.
 */
export function bundledDelegate(bundled: ReadonlyMap<string, CniPlugin>, other: Delegate): Delegate {
  const delegate: Delegate = async (type, command, conf, ctx) => {
    const p = bundled.get(type);
    if (!p) return other(type, command, conf, ctx);
    findInPath(type, ctx.path);
    const out = await invokePlugin(p, {
      env: { ...ctx.env, CNI_COMMAND: command },
      stdin: JSON.stringify(conf),
      datapath: ctx.datapath,
      delegate,
    });
    if (out.error) throw out.error;
    return out.result;
  };
  return delegate;
}

/** Entry point of a plugin executable: env + stdin in, result or error JSON on stdout, exit status. */
export async function main(plugin: CniPlugin, opts: MainOptions = {}): Promise<void> {
  const env = process.env as Record<string, string | undefined>;
  let dp: Promise<Datapath> | undefined;
  const delegate = bundledDelegate(new Map((opts.bundled ?? []).map((p) => [p.name, p])), execDelegate);
  try {
    const stdin =
      env.CNI_COMMAND === 'VERSION' && !(globalThis as Record<symbol, unknown>)[STDIN_HANDOVER] && stdinIsCharDevice() && process.stdin.isTTY ? Buffer.from('{}') : await readStdin();
    const out = await invokePlugin(plugin, {
      env,
      stdin,
      datapath: () => {
        dp ??= datapathFromEnv(env);
        return dp;
      },
      delegate,
    });
    if (dp) await (await dp.catch(() => undefined))?.close?.();
    if (out.stdout) writeStdout(out.stdout);
    process.exitCode = out.exitCode;
  } catch (e) {
    // Anything outside the skeleton (stdin unreadable, close failing) still ends as a CNI error, never a trace.
    writeStdout(JSON.stringify(toCniError(e).toJSON(CURRENT_VERSION)));
    process.exitCode = 1;
  }
  // The work is done and the answer written (blocking writes): leave now rather than wait for Node to
  // close every handle it opened, which costs a plugin start a millisecond or two. 'exit' handlers
  // (the launcher's code cache) still run.
  process.exit();
}
