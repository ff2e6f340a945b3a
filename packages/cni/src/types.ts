import { CniError, CniErrorCode } from './errors.js';

/** Versions this implementation reads and writes; results are converted between them. */
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;
export const CURRENT_VERSION = '1.1.0';

export interface CniInterface {
  name: string;
  mac?: string;
  mtu?: number;
  sandbox?: string;
  socketPath?: string;
  pciID?: string;
}

export interface CniIPConfig {
  address: string;
  gateway?: string;
  interface?: number;
}

export interface CniRoute {
  dst: string;
  gw?: string;
  mtu?: number;
  advmss?: number;
  priority?: number;
  table?: number;
  scope?: number;
}

export interface CniDNS {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

/** A result in the current (1.1.0) shape; {@link convertResult} renders any supported version. */
export interface CniResult {
  cniVersion: string;
  interfaces?: CniInterface[];
  ips?: CniIPConfig[];
  routes?: CniRoute[];
  dns?: CniDNS;
}

/** A network configuration as a plugin receives it on stdin. */
export interface NetConf {
  cniVersion: string;
  name: string;
  type: string;
  capabilities?: Record<string, boolean>;
  ipam?: { type?: string; [k: string]: unknown };
  dns?: CniDNS;
  args?: Record<string, unknown>;
  runtimeConfig?: Record<string, unknown>;
  prevResult?: unknown;
  [k: string]: unknown;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

export function isSupportedVersion(v: unknown): v is string {
  return typeof v === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(v);
}

function versionError(v: unknown, supported: readonly string[]): CniError {
  return new CniError(
    CniErrorCode.IncompatibleVersion,
    `incompatible CNI versions; config is ${JSON.stringify(v ?? '')}, plugin supports ${JSON.stringify(supported)}`,
  );
}

export function requireVersion(v: unknown, supported: readonly string[] = SUPPORTED_VERSIONS): string {
  if (typeof v !== 'string' || !supported.includes(v)) throw versionError(v, supported);
  return v;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Reads a result of any supported version (e.g. a prevResult or a delegate's stdout) into the current shape. */
export function parseResult(raw: unknown): CniResult {
  if (!isObj(raw)) throw new CniError(CniErrorCode.DecodingFailure, 'result is not a JSON object');
  const version = requireVersion(raw.cniVersion ?? '', SUPPORTED_VERSIONS);
  const out: CniResult = { cniVersion: version };
  if (Array.isArray(raw.interfaces)) out.interfaces = raw.interfaces.map((i) => ({ ...(i as CniInterface) }));
  if (Array.isArray(raw.ips)) {
    out.ips = raw.ips.map((ip) => {
      const { version: _v, ...rest } = ip as CniIPConfig & { version?: string };
      return rest;
    });
  }
  if (Array.isArray(raw.routes)) out.routes = raw.routes.map((r) => ({ ...(r as CniRoute) }));
  if (isObj(raw.dns)) out.dns = { ...(raw.dns as CniDNS) };
  return out;
}

/** Renders a result in the requested version's shape (ip `version` fields before 1.0.0; 1.1-only fields dropped). */
export function convertResult(result: CniResult, toVersion: string): Record<string, unknown> {
  requireVersion(toVersion);
  const v1_1 = compareVersions(toVersion, '1.1.0') >= 0;
  const pre1 = compareVersions(toVersion, '1.0.0') < 0;
  const out: Record<string, unknown> = { cniVersion: toVersion };
  if (result.interfaces) {
    out.interfaces = result.interfaces.map((i) => {
      const o: CniInterface = { name: i.name };
      if (i.mac !== undefined) o.mac = i.mac;
      if (v1_1 && i.mtu !== undefined) o.mtu = i.mtu;
      if (i.sandbox !== undefined) o.sandbox = i.sandbox;
      if (v1_1 && i.socketPath !== undefined) o.socketPath = i.socketPath;
      if (v1_1 && i.pciID !== undefined) o.pciID = i.pciID;
      return o;
    });
  }
  if (result.ips) {
    out.ips = result.ips.map((ip) => {
      const o: Record<string, unknown> = {};
      if (pre1) o.version = ip.address.includes(':') ? '6' : '4';
      if (ip.interface !== undefined) o.interface = ip.interface;
      o.address = ip.address;
      if (ip.gateway !== undefined) o.gateway = ip.gateway;
      return o;
    });
  }
  if (result.routes) {
    out.routes = result.routes.map((r) => {
      const o: CniRoute = { dst: r.dst };
      if (r.gw !== undefined) o.gw = r.gw;
      if (v1_1) {
        for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope'] as const) if (r[k] !== undefined) o[k] = r[k];
      }
      return o;
    });
  }
  out.dns = result.dns ?? {};
  return out;
}
