import { readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { CniError, CniErrorCode, invalidConfig } from './errors.js';
import { ExecInvoker, type Invoker } from './invoke-inprocess.js';
import { interpretOutput } from './invoke-exec.js';
import { parseJson } from './parse-json.js';
import { READ_LIMITS } from './read-bounded.js';
import { readFileBounded } from './read-file-bounded.js';
import { DiskResultCache, MemoryResultCache, type ResultCache } from './result-cache.js';
import { validateIfname } from './skeleton.js';
import { type CniResult, compareVersions, convertResult, requireVersion } from './types.js';

export interface NetworkConfig {
  type: string;
  capabilities?: Record<string, boolean>;
  [k: string]: unknown;
}

/** A network (conflist) as loaded from the conf dir; a single `.conf` is wrapped into a one-plugin list. */
export interface NetworkConfigList {
  name: string;
  cniVersion: string;
  disableCheck?: boolean;
  disableGC?: boolean;
  plugins: NetworkConfig[];
  /** The file it came from and its raw bytes (stored in the result cache like libcni does). */
  file?: string;
  bytes: Buffer;
}

/** One attachment of a container to a network. */
export interface RuntimeConf {
  containerId: string;
  /** Path of the container's network namespace. */
  netns: string;
  ifname: string;
  /** CNI_ARGS as pairs, e.g. [['IgnoreUnknown', 'true'], ['K8S_POD_NAME', 'web-0']]. */
  args?: [string, string][];
  /** Values for declared capabilities: portMappings, ips, mac, bandwidth, ipRanges, ... */
  capabilityArgs?: Record<string, unknown>;
}

export interface CniRuntimeOptions {
  /** Directory with .conflist/.conf/.json files (NETCONFPATH). Default /etc/cni/net.d. */
  confDir?: string;
  /** CNI_PATH directories. Default [/opt/cni/bin]. */
  binDirs?: string[];
  /** libcni cache dir. Default /var/lib/cni. */
  cacheDir?: string;
  /** Default: exec from binDirs. Pass an InProcessInvoker to run plugin objects directly. */
  invoker?: Invoker;
  /** Per-plugin timeout for the exec invoker. */
  timeoutMs?: number;
  /** Exec invoker only: run plugins through this argument-array prefix (e.g. `ip netns exec NODE`). */
  execWrapper?: string[];
  /**
   * Where ADD results are kept. Default: the invoker's own cache if it has one (an in-process invoker
   * made with `resultCache: 'memory'`), else libcni's files under `cacheDir`.
   */
  resultCache?: 'disk' | 'memory' | ResultCache;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

export function parseConfList(bytes: Buffer, file?: string): NetworkConfigList {
  const raw = parseJson(bytes.toString('utf8'), file ?? 'configuration list');
  if (!isObj(raw)) throw new CniError(CniErrorCode.DecodingFailure, `${file ?? 'configuration list'} is not a JSON object`);
  const where = file ?? 'configuration list';
  if (!Array.isArray(raw.plugins)) {
    // A single-plugin .conf file.
    if (typeof raw.type !== 'string') throw invalidConfig(`${where}: missing "type"`);
    if (typeof raw.name !== 'string' || !NAME_RE.test(raw.name)) throw invalidConfig(`${where}: missing or invalid "name"`);
    const cniVersion = requireVersion(raw.cniVersion);
    return { name: raw.name, cniVersion, plugins: [raw as NetworkConfig], file, bytes };
  }
  if (typeof raw.name !== 'string' || !NAME_RE.test(raw.name)) throw invalidConfig(`${where}: missing or invalid "name"`);
  const cniVersion = requireVersion(raw.cniVersion);
  if (raw.plugins.length === 0) throw invalidConfig(`${where}: "plugins" is empty`);
  const plugins = raw.plugins.map((p, i) => {
    if (!isObj(p) || typeof p.type !== 'string' || !p.type) throw invalidConfig(`${where}: "plugins"[${i}] missing "type"`);
    return p as NetworkConfig;
  });
  return {
    name: raw.name,
    cniVersion,
    disableCheck: raw.disableCheck === true,
    disableGC: raw.disableGC === true,
    plugins,
    file,
    bytes,
  };
}

function validateRt(rt: RuntimeConf): void {
  if (!NAME_RE.test(rt.containerId)) {
    throw new CniError(CniErrorCode.InvalidEnvironment, `invalid container ID ${JSON.stringify(rt.containerId)}`);
  }
  const bad = validateIfname(rt.ifname);
  if (bad) throw new CniError(CniErrorCode.InvalidEnvironment, bad);
  if (rt.netns && (!rt.netns.startsWith('/') || rt.netns.includes('\0'))) {
    throw new CniError(CniErrorCode.InvalidEnvironment, `netns must be an absolute path, got ${JSON.stringify(rt.netns)}`);
  }
  for (const [k, v] of rt.args ?? []) {
    if (/[;=\0]/.test(k) || /[;\0]/.test(v)) throw new CniError(CniErrorCode.InvalidEnvironment, `invalid CNI_ARGS pair ${k}=${v}`);
  }
}

/**
 * What a container runtime does with libcni: load network lists, run their plugin chains for an
 * attachment (ADD in order, DEL in reverse), keep the result cache in libcni's layout, and answer
 * CHECK, STATUS and GC.
 */
export class CniRuntime {
  readonly confDir: string;
  readonly binDirs: string[];
  readonly cacheDir: string;
  readonly invoker: Invoker;
  readonly resultCache: ResultCache;

  constructor(opts: CniRuntimeOptions = {}) {
    this.confDir = opts.confDir ?? '/etc/cni/net.d';
    this.binDirs = opts.binDirs ?? ['/opt/cni/bin'];
    this.cacheDir = opts.cacheDir ?? '/var/lib/cni';
    this.invoker = opts.invoker ?? new ExecInvoker(this.binDirs, opts.timeoutMs, opts.execWrapper);
    const rc = opts.resultCache ?? this.invoker.resultCache ?? 'disk';
    this.resultCache = rc === 'disk' ? new DiskResultCache(this.cacheDir) : rc === 'memory' ? new MemoryResultCache() : rc;
  }

  /** All network lists in the conf dir: `.conflist` files first, then `.conf`/`.json`, each sorted by name. */
  async listConfLists(): Promise<NetworkConfigList[]> {
    let names: string[];
    try {
      // Directories are skipped, as libcni skips them; any other non-regular file is refused when read.
      names = (await readdir(this.confDir, { withFileTypes: true }))
        .filter((d) => !d.isDirectory())
        .map((d) => d.name)
        .sort();
    } catch (e) {
      throw new CniError(CniErrorCode.IOFailure, `cannot read conf dir ${this.confDir}: ${(e as Error).message}`);
    }
    const lists = names.filter((n) => extname(n) === '.conflist');
    const singles = names.filter((n) => extname(n) === '.conf' || extname(n) === '.json');
    const out: NetworkConfigList[] = [];
    for (const n of [...lists, ...singles]) {
      const file = join(this.confDir, n);
      out.push(parseConfList(readFileBounded(file, { what: 'conf file', maxBytes: READ_LIMITS.config }), file));
    }
    return out;
  }

  /** The named network, or the first one (what containerd picks) when no name is given. */
  async loadConfList(name?: string): Promise<NetworkConfigList> {
    const all = await this.listConfLists();
    const found = name === undefined ? all[0] : all.find((l) => l.name === name);
    if (!found) {
      throw new CniError(
        CniErrorCode.InvalidNetworkConfig,
        name === undefined ? `no network configuration found in ${this.confDir}` : `no network named "${name}" in ${this.confDir}`,
      );
    }
    return found;
  }

  private env(command: string, rt: Partial<RuntimeConf>): Record<string, string> {
    const env: Record<string, string> = { CNI_COMMAND: command, CNI_PATH: this.binDirs.join(':') };
    if (rt.containerId) env.CNI_CONTAINERID = rt.containerId;
    if (rt.netns) env.CNI_NETNS = rt.netns;
    if (rt.ifname) env.CNI_IFNAME = rt.ifname;
    if (rt.args?.length) env.CNI_ARGS = rt.args.map(([k, v]) => `${k}=${v}`).join(';');
    return env;
  }

  /** libcni's injection: name, cniVersion, runtimeConfig for declared capabilities, prevResult. */
  private pluginConf(list: NetworkConfigList, plugin: NetworkConfig, rt: Partial<RuntimeConf>, prev?: CniResult): string {
    const conf: Record<string, unknown> = { ...plugin, name: list.name, cniVersion: list.cniVersion };
    const runtimeConfig: Record<string, unknown> = {};
    for (const [cap, on] of Object.entries(plugin.capabilities ?? {})) {
      if (on && rt.capabilityArgs && rt.capabilityArgs[cap] !== undefined) runtimeConfig[cap] = rt.capabilityArgs[cap];
    }
    if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
    else delete conf.runtimeConfig;
    if (prev) conf.prevResult = convertResult(prev, list.cniVersion);
    else delete conf.prevResult;
    return JSON.stringify(conf);
  }

  private async run(
    list: NetworkConfigList,
    plugin: NetworkConfig,
    command: string,
    rt: Partial<RuntimeConf>,
    prev?: CniResult,
  ): Promise<CniResult | undefined> {
    const out = await this.invoker.invoke(plugin.type, this.env(command, rt), this.pluginConf(list, plugin, rt, prev));
    return interpretOutput(plugin.type, { exitCode: out.exitCode, stdout: out.stdout, stderr: out.stderr ?? '' }, command === 'ADD');
  }

  /** `<cacheDir>/results/<network>-<containerID>-<ifname>`, as libcni names it (used by the disk cache). */
  cachePath(list: NetworkConfigList, rt: RuntimeConf): string {
    return join(this.cacheDir, 'results', `${list.name}-${rt.containerId}-${rt.ifname}`);
  }

  /** The cached ADD result of an attachment, if any. */
  getCachedResult(list: NetworkConfigList, rt: RuntimeConf): Promise<CniResult | undefined> {
    return this.resultCache.get(list, rt);
  }

  /** Cached attachments of a network: what GC compares with the runtime's valid list. */
  cachedAttachments(list: NetworkConfigList): Promise<RuntimeConf[]> {
    return this.resultCache.attachments(list);
  }

  /** ADD every plugin in order, each getting the previous result; on failure the chain is rolled back with DEL. */
  async addNetworkList(list: NetworkConfigList, rt: RuntimeConf): Promise<CniResult> {
    validateRt(rt);
    let prev: CniResult | undefined;
    for (const [i, p] of list.plugins.entries()) {
      try {
        prev = await this.run(list, p, 'ADD', rt, prev);
      } catch (e) {
        // Undo the plugins that succeeded (and the failing one, which may have half-applied state).
        for (let j = i; j >= 0; j--) {
          await this.run(list, list.plugins[j]!, 'DEL', rt, prev).catch(() => undefined);
        }
        throw e;
      }
    }
    const result = prev ?? { cniVersion: list.cniVersion };
    await this.resultCache.put(list, rt, result);
    return result;
  }

  /** DEL in reverse order with the cached result as prevResult; the cache entry goes last. */
  async delNetworkList(list: NetworkConfigList, rt: RuntimeConf): Promise<void> {
    validateRt(rt);
    const cached = await this.getCachedResult(list, rt);
    for (const p of [...list.plugins].reverse()) await this.run(list, p, 'DEL', rt, cached);
    await this.resultCache.delete(list, rt);
  }

  async checkNetworkList(list: NetworkConfigList, rt: RuntimeConf): Promise<void> {
    validateRt(rt);
    if (compareVersions(list.cniVersion, '0.4.0') < 0) {
      throw new CniError(CniErrorCode.IncompatibleVersion, `configuration version "${list.cniVersion}" does not support the CHECK command`);
    }
    if (list.disableCheck) return;
    const cached = await this.getCachedResult(list, rt);
    if (!cached) throw new CniError(CniErrorCode.UnknownContainer, `no cached result for ${list.name}/${rt.containerId}/${rt.ifname}`);
    for (const p of list.plugins) await this.run(list, p, 'CHECK', rt, cached);
  }

  /** STATUS on every plugin (1.1.0 lists only); the first plugin error is the network's status. */
  async getStatus(list: NetworkConfigList): Promise<void> {
    if (compareVersions(list.cniVersion, '1.1.0') < 0) return;
    for (const p of list.plugins) await this.run(list, p, 'STATUS', {});
  }

  /**
   * Removes every attachment of this network that is not in `valid`: cached ones get a DEL, then each
   * plugin gets GC with `cni.dev/valid-attachments` so it can release what no cache remembers.
   */
  async gcNetworkList(list: NetworkConfigList, valid: { containerId: string; ifname: string }[]): Promise<void> {
    const keep = new Set(valid.map((v) => `${v.containerId}\0${v.ifname}`));
    const errors: unknown[] = [];
    for (const a of await this.cachedAttachments(list)) {
      if (keep.has(`${a.containerId}\0${a.ifname}`)) continue;
      await this.delNetworkList(list, a).catch((e) => errors.push(e));
    }
    if (compareVersions(list.cniVersion, '1.1.0') >= 0 && !list.disableGC) {
      const va = valid.map((v) => ({ containerID: v.containerId, ifname: v.ifname }));
      for (const p of list.plugins) {
        const conf = JSON.parse(this.pluginConf(list, p, {})) as Record<string, unknown>;
        conf['cni.dev/valid-attachments'] = va;
        const out = await this.invoker.invoke(p.type, this.env('GC', {}), JSON.stringify(conf));
        try {
          interpretOutput(p.type, { exitCode: out.exitCode, stdout: out.stdout, stderr: out.stderr ?? '' }, false);
        } catch (e) {
          errors.push(e);
        }
      }
    }
    if (errors.length > 0) throw errors[0];
  }
}
