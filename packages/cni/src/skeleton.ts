import { type ConfFields, canonicalConf, mergeFields, NETCONF_FIELDS } from './conf-decode.js';
import type { Datapath } from './datapath.js';
import { CniError, CniErrorCode, invalidConfig, toCniError } from './errors.js';
import { parseJson } from './parse-json.js';
import {
  type CniResult,
  CURRENT_VERSION,
  compareVersions,
  convertResult,
  type NetConf,
  parseResult,
  requireVersion,
  SUPPORTED_VERSIONS,
} from './types.js';

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC' | 'VERSION';
const COMMANDS: readonly CniCommand[] = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION'];

/** The spec's table of required environment variables per verb (CNI_ARGS is always optional). */
const REQUIRED_ENV: Record<CniCommand, readonly string[]> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_PATH'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  STATUS: ['CNI_PATH'],
  GC: ['CNI_PATH'],
  VERSION: [],
};

/** How a plugin calls another plugin (IPAM delegation): exec from CNI_PATH or an in-process registry. */
export type Delegate = (
  type: string,
  command: Exclude<CniCommand, 'VERSION'>,
  conf: Record<string, unknown>,
  ctx: PluginContext,
) => Promise<CniResult | undefined>;

export interface ValidAttachment {
  containerID: string;
  ifname: string;
}

export interface PluginContext {
  command: CniCommand;
  containerId: string;
  /** Container netns path (CNI_NETNS); empty on DEL when the runtime no longer has one, STATUS and GC. */
  netns: string;
  ifname: string;
  /** CNI_ARGS parsed (`K1=V1;K2=V2`). */
  args: Map<string, string>;
  /** CNI_PATH split on ':'. */
  path: string[];
  /** The network config from stdin, parsed and version-checked. */
  conf: NetConf;
  /** The cniVersion of the config; results are rendered in it. */
  version: string;
  /** prevResult converted to the current shape, if the config has one. */
  prevResult?: CniResult;
  /** GC only: the attachments the runtime still uses. */
  validAttachments?: ValidAttachment[];
  /** The environment the plugin was started with (passed on to delegates). */
  env: Record<string, string | undefined>;
  /** The datapath to program; created lazily so IPAM-only plugins never load it. */
  datapath(): Promise<Datapath>;
  delegate: Delegate;
}

export interface CniPlugin {
  /** Plugin type name, e.g. `kemu-bridge`; also the key in the in-process registry. */
  name: string;
  /** Versions this plugin accepts (default: all supported). */
  versions?: readonly string[];
  /**
   * The config fields this plugin reads beyond the common ones, nested as in the config. Keys that name one
   * case-insensitively (as the reference plugins' decoder matches them) reach the plugin spelled as here.
   */
  confFields?: ConfFields;
  add(ctx: PluginContext): Promise<CniResult>;
  del(ctx: PluginContext): Promise<void>;
  check?(ctx: PluginContext): Promise<void>;
  status?(ctx: PluginContext): Promise<void>;
  gc?(ctx: PluginContext): Promise<void>;
}

export interface InvocationInput {
  env: Record<string, string | undefined>;
  stdin: Buffer | string;
  datapath: () => Promise<Datapath>;
  delegate: Delegate;
}

export interface InvocationOutput {
  exitCode: number;
  /** What goes to stdout: a result, a VERSION answer, an error object, or nothing. */
  stdout: string;
  /** The result object on ADD success (in-process callers skip re-parsing). */
  result?: CniResult;
  error?: CniError;
}

const CONTAINER_ID_RE = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

export function validateIfname(name: string): string | undefined {
  if (name.length === 0) return 'interface name is empty';
  if (Buffer.byteLength(name) > 15) return `interface name is too long (${name}): max 15 bytes`;
  if (name === '.' || name === '..') return `interface name is . or ..`;
  if (/[/:\s\0]/.test(name)) return `interface name (${name}) contains / or : or whitespace characters`;
  return undefined;
}

export function parseCniArgs(s: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!s) return out;
  for (const pair of s.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new CniError(CniErrorCode.InvalidEnvironment, `ARGS: invalid pair "${pair}"`);
    out.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return out;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

const fieldsOf = new WeakMap<CniPlugin, ConfFields>();
function pluginFields(plugin: CniPlugin): ConfFields {
  if (!plugin.confFields) return NETCONF_FIELDS;
  let f = fieldsOf.get(plugin);
  if (!f) fieldsOf.set(plugin, (f = mergeFields(NETCONF_FIELDS, plugin.confFields)));
  return f;
}

function parseStdinJson(stdin: Buffer | string): Record<string, unknown> {
  const text = typeof stdin === 'string' ? stdin : stdin.toString('utf8');
  const v = parseJson(text, 'network config');
  if (!isObj(v)) throw new CniError(CniErrorCode.DecodingFailure, 'error parsing network config: not a JSON object');
  return v;
}

const isStringList = (x: unknown): boolean => Array.isArray(x) && x.every((v) => typeof v === 'string');

/**
 * The types of the config fields every plugin may read or pass on (the spec's `dns`, `capabilities`, `args`,
 * `runtimeConfig`): a wrong type is a config error naming the key (code 7), not something a plugin copies
 * into its result.
 */
function checkCommonFields(raw: Record<string, unknown>): void {
  for (const key of ['capabilities', 'args', 'runtimeConfig', 'ipam'] as const) {
    const v = raw[key];
    if (v !== undefined && v !== null && !isObj(v)) throw invalidConfig(`"${key}" must be an object, got ${JSON.stringify(v)?.slice(0, 100)}`);
  }
  const dns = raw.dns;
  if (dns === undefined || dns === null) return;
  if (!isObj(dns)) throw invalidConfig(`"dns" must be an object, got ${JSON.stringify(dns)?.slice(0, 100)}`);
  if (dns.domain !== undefined && typeof dns.domain !== 'string') throw invalidConfig('"dns.domain" must be a string');
  for (const k of ['nameservers', 'search', 'options'] as const) {
    if (dns[k] !== undefined && !isStringList(dns[k])) throw invalidConfig(`"dns.${k}" must be a list of strings`);
  }
}

/**
 * Runs one plugin invocation from its environment and stdin, exactly as an exec'd plugin would, but
 * returns the outcome instead of touching the process: `main()` and the in-process invoker share it.
 */
export async function invokePlugin(plugin: CniPlugin, input: InvocationInput): Promise<InvocationOutput> {
  const supported = plugin.versions ?? SUPPORTED_VERSIONS;
  let version: string = CURRENT_VERSION;
  try {
    const env = input.env;
    const command = env.CNI_COMMAND as CniCommand | undefined;
    if (!command) throw new CniError(CniErrorCode.InvalidEnvironment, 'required env variables [CNI_COMMAND] missing');
    if (!COMMANDS.includes(command)) {
      throw new CniError(CniErrorCode.InvalidEnvironment, `unknown CNI_COMMAND: ${command}`);
    }
    if (command === 'VERSION') {
      return {
        exitCode: 0,
        stdout: JSON.stringify({ cniVersion: CURRENT_VERSION, supportedVersions: supported }),
      };
    }
    const missing = REQUIRED_ENV[command].filter((k) => !env[k]);
    if (missing.length > 0) {
      throw new CniError(CniErrorCode.InvalidEnvironment, `required env variables [${missing.join(',')}] missing`);
    }
    const containerId = env.CNI_CONTAINERID ?? '';
    if (containerId && !CONTAINER_ID_RE.test(containerId)) {
      throw new CniError(
        CniErrorCode.InvalidEnvironment,
        `invalid characters in containerID: CNI_CONTAINERID=${JSON.stringify(containerId)} must match ${CONTAINER_ID_RE.source}`,
      );
    }
    const ifname = env.CNI_IFNAME ?? '';
    if (ifname) {
      const bad = validateIfname(ifname);
      if (bad) throw new CniError(CniErrorCode.InvalidEnvironment, `CNI_IFNAME: ${bad}`);
    }
    const netns = env.CNI_NETNS ?? '';
    if (netns && (!netns.startsWith('/') || netns.includes('\0'))) {
      throw new CniError(CniErrorCode.InvalidEnvironment, `CNI_NETNS must be an absolute path, got ${JSON.stringify(netns)}`);
    }
    const args = parseCniArgs(env.CNI_ARGS ?? '');

    const raw = canonicalConf(parseStdinJson(input.stdin), pluginFields(plugin)) as Record<string, unknown>;
    version = requireVersion(raw.cniVersion, supported);
    if (typeof raw.name !== 'string' || raw.name === '') throw invalidConfig('missing network name ("name")');
    if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/.test(raw.name)) {
      throw invalidConfig(`invalid network name ("name"): ${JSON.stringify(raw.name)}`);
    }
    if (typeof raw.type !== 'string' || raw.type === '') throw invalidConfig('missing plugin type ("type")');
    checkCommonFields(raw);

    if (command === 'CHECK' && compareVersions(version, '0.4.0') < 0) {
      throw new CniError(CniErrorCode.IncompatibleVersion, `config version ${version} does not allow CHECK`);
    }
    if ((command === 'STATUS' || command === 'GC') && compareVersions(version, '1.1.0') < 0) {
      throw new CniError(CniErrorCode.IncompatibleVersion, `config version ${version} does not allow ${command}`);
    }

    let prevResult: CniResult | undefined;
    if (raw.prevResult !== undefined && raw.prevResult !== null) {
      const pr = isObj(raw.prevResult) ? { cniVersion: version, ...raw.prevResult } : raw.prevResult;
      prevResult = parseResult(pr);
    }
    let validAttachments: ValidAttachment[] | undefined;
    if (command === 'GC') {
      const va = raw['cni.dev/valid-attachments'] ?? [];
      if (!Array.isArray(va) || !va.every((a) => isObj(a) && typeof a.containerID === 'string' && typeof a.ifname === 'string')) {
        throw invalidConfig('"cni.dev/valid-attachments" must be a list of {containerID, ifname}');
      }
      validAttachments = va as ValidAttachment[];
    }

    const ctx: PluginContext = {
      command,
      containerId,
      netns,
      ifname,
      args,
      path: (env.CNI_PATH ?? '').split(':').filter(Boolean),
      conf: raw as NetConf,
      version,
      prevResult,
      validAttachments,
      env,
      datapath: input.datapath,
      delegate: input.delegate,
    };

    switch (command) {
      case 'ADD': {
        const result = await plugin.add(ctx);
        return { exitCode: 0, stdout: JSON.stringify(convertResult(result, version)), result };
      }
      case 'DEL':
        await plugin.del(ctx);
        return { exitCode: 0, stdout: '' };
      case 'CHECK':
        if (plugin.check) await plugin.check(ctx);
        return { exitCode: 0, stdout: '' };
      case 'STATUS':
        if (plugin.status) await plugin.status(ctx);
        return { exitCode: 0, stdout: '' };
      case 'GC':
        if (plugin.gc) await plugin.gc(ctx);
        return { exitCode: 0, stdout: '' };
    }
  } catch (e) {
    const err = toCniError(e);
    return { exitCode: 1, stdout: JSON.stringify(err.toJSON(version)), error: err };
  }
  throw new Error('unreachable');
}
