import { CniError, CniErrorCode } from './errors.js';
import { parseCidr, parseIP } from '@kemu/ip';

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

const resultError = (what: string): CniError => new CniError(CniErrorCode.DecodingFailure, `invalid result: ${what}`);
const optional = (o: Record<string, unknown>, key: string, ok: (v: unknown) => boolean, where: string, want: string): void => {
  if (o[key] !== undefined && !ok(o[key])) throw resultError(`${where}.${key} must be ${want}, got ${JSON.stringify(o[key])?.slice(0, 80)}`);
};
const isStr = (v: unknown) => typeof v === 'string';
const isInt = (v: unknown) => Number.isInteger(v);
const isIPText = (v: unknown) => typeof v === 'string' && parseIP(v) !== undefined;
const isCidrText = (v: unknown) => typeof v === 'string' && parseCidr(v) !== undefined;
const isStrList = (v: unknown) => Array.isArray(v) && v.every(isStr);

function listOf(raw: Record<string, unknown>, key: string): Record<string, unknown>[] | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw resultError(`${key} must be a list`);
  return v.map((x, i) => {
    if (!isObj(x)) throw resultError(`${key}[${i}] must be an object`);
    return x;
  });
}

/**
 * Reads a result of any supported version (e.g. a prevResult or a delegate's stdout) into the current shape,
 * checking each field's type and that addresses parse: code 6 naming the field otherwise.
 */
export function parseResult(raw: unknown): CniResult {
  if (!isObj(raw)) throw new CniError(CniErrorCode.DecodingFailure, 'result is not a JSON object');
  const version = requireVersion(raw.cniVersion ?? '', SUPPORTED_VERSIONS);
  const out: CniResult = { cniVersion: version };
  const interfaces = listOf(raw, 'interfaces');
  if (interfaces) {
    out.interfaces = interfaces.map((i, n) => {
      const w = `interfaces[${n}]`;
      if (typeof i.name !== 'string' || i.name === '') throw resultError(`${w}.name must be a non-empty string`);
      for (const k of ['mac', 'sandbox', 'socketPath', 'pciID']) optional(i, k, isStr, w, 'a string');
      optional(i, 'mtu', isInt, w, 'an integer');
      return { ...(i as unknown as CniInterface) };
    });
  }
  const ips = listOf(raw, 'ips');
  if (ips) {
    out.ips = ips.map((ip, n) => {
      const w = `ips[${n}]`;
      if (!isCidrText(ip.address)) throw resultError(`${w}.address must be an address with a prefix length, got ${JSON.stringify(ip.address)?.slice(0, 80)}`);
      optional(ip, 'gateway', isIPText, w, 'an IP address');
      optional(ip, 'interface', (v) => isInt(v) && (v as number) >= 0, w, 'an interface index');
      const { version: _v, ...rest } = ip as unknown as CniIPConfig & { version?: string };
      return rest;
    });
  }
  const routes = listOf(raw, 'routes');
  if (routes) {
    out.routes = routes.map((r, n) => {
      const w = `routes[${n}]`;
      if (!isCidrText(r.dst)) throw resultError(`${w}.dst must be a network, got ${JSON.stringify(r.dst)?.slice(0, 80)}`);
      optional(r, 'gw', isIPText, w, 'an IP address');
      for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope']) optional(r, k, isInt, w, 'an integer');
      return { ...(r as unknown as CniRoute) };
    });
  }
  if (raw.dns !== undefined && raw.dns !== null) {
    if (!isObj(raw.dns)) throw resultError('dns must be an object');
    optional(raw.dns, 'domain', isStr, 'dns', 'a string');
    for (const k of ['nameservers', 'search', 'options']) optional(raw.dns, k, isStrList, 'dns', 'a list of strings');
    out.dns = { ...(raw.dns as CniDNS) };
  }
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
