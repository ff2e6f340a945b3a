/**
 * The `kemu-bgp` settings, from a YAML/JSON config file and/or command-line flags, validated into
 * {@link SpeakerOptions} with a field path on every error.
 */
import fs from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { BgpConfigError } from './errors.js';
import { parseIpAddr, parsePrefix } from '@kemu/ip';
import { type Afi, routerIdToNumber } from './router-id.js';
import type { NeighborConfig } from './session.js';
import type { SpeakerOptions } from './speaker.js';

/** The file format (and what the flags build). Unknown keys are rejected so typos do not pass silently. */
export interface BgpConfig {
  routerId: string;
  /** Default 64512, the AS calico-style clusters use. */
  as?: number;
  /** `ADDR:PORT`, `[V6ADDR]:PORT`, or `{address, port}`; default `0.0.0.0:179`. */
  listen?: string | { address: string; port: number };
  holdTime?: number;
  keepaliveTime?: number;
  connectRetryTime?: number;
  routeReflector?: boolean;
  clusterId?: string;
  families?: ('ipv4' | 'ipv6')[];
  nextHop6?: string;
  /** `ADDR:PORT:AS` strings or objects. */
  peers?: (string | NeighborConfig)[];
  /** Route-reflector clients, same forms as `peers`. */
  rrClients?: (string | NeighborConfig)[];
  advertise?: string[];
  ribOut?: string;
  /** Program learned routes through the Datapath chosen by KEMU_DATAPATH (linux by default). */
  installRoutes?: boolean;
  tunnel?: { dev: string; mode: 'Always' | 'CrossSubnet'; localSubnet?: string };
}

export interface ResolvedConfig {
  speaker: SpeakerOptions;
  advertise: string[];
  ribOut?: string;
  installRoutes: boolean;
  tunnel?: BgpConfig['tunnel'];
}

const topKeys = new Set([
  'routerId',
  'as',
  'listen',
  'holdTime',
  'keepaliveTime',
  'connectRetryTime',
  'routeReflector',
  'clusterId',
  'families',
  'nextHop6',
  'peers',
  'rrClients',
  'advertise',
  'ribOut',
  'installRoutes',
  'tunnel',
]);
const peerKeys = new Set([
  'address',
  'port',
  'as',
  'rrClient',
  'passive',
  'localAddress',
  'nextHopSelf',
  'name',
]);

function fail(path: string, detail: string): never {
  throw new BgpConfigError(path, detail);
}

/** Splits `ADDR:PORT` / `[V6]:PORT` (and a trailing `:AS` when `withAs`). */
function splitHostPort(
  s: string,
  path: string,
  withAs: boolean,
): { address: string; port: number; as?: number } {
  const form = withAs ? 'ADDR:PORT:AS (IPv6 as [ADDR]:PORT:AS)' : 'ADDR:PORT (IPv6 as [ADDR]:PORT)';
  let address: string;
  let rest: string[];
  const m = /^\[([^\]]+)\]:(.*)$/.exec(s);
  if (m) {
    address = m[1]!;
    rest = m[2]!.split(':');
  } else {
    const parts = s.split(':');
    address = parts[0]!;
    rest = parts.slice(1);
  }
  if (rest.length !== (withAs ? 2 : 1)) fail(path, `${JSON.stringify(s)} is not ${form}`);
  if (!parseIpAddr(address))
    fail(path, `${JSON.stringify(address)} in ${JSON.stringify(s)} is not an IP address`);
  const port = parseIntStrict(rest[0]!, `${path}`, 'port', 0, 65535);
  const out: { address: string; port: number; as?: number } = { address, port };
  if (withAs) out.as = parseIntStrict(rest[1]!, path, 'AS number', 1, 0xffffffff);
  return out;
}

function parseIntStrict(s: string, path: string, what: string, min: number, max: number): number {
  if (!/^\d+$/.test(s)) fail(path, `${what} ${JSON.stringify(s)} is not a number`);
  const n = Number(s);
  if (n < min || n > max) fail(path, `${what} ${n} is out of range ${min}..${max}`);
  return n;
}

function num(v: unknown, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    fail(path, `must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}

function peer(v: unknown, path: string, rrClient: boolean): NeighborConfig {
  if (typeof v === 'string') {
    const p = splitHostPort(v, path, true);
    return { address: p.address, port: p.port, as: p.as!, ...(rrClient ? { rrClient: true } : {}) };
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    fail(path, 'must be "ADDR:PORT:AS" or an object with address, port, as');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!peerKeys.has(k)) fail(`${path}.${k}`, 'unknown field');
  if (typeof o.address !== 'string' || !parseIpAddr(o.address))
    fail(`${path}.address`, `must be an IP address, got ${JSON.stringify(o.address)}`);
  const n: NeighborConfig = { address: o.address, as: num(o.as, `${path}.as`, 1, 0xffffffff) };
  if (o.port !== undefined) n.port = num(o.port, `${path}.port`, 1, 65535);
  for (const b of ['rrClient', 'passive', 'nextHopSelf'] as const) {
    if (o[b] !== undefined) {
      if (typeof o[b] !== 'boolean') fail(`${path}.${b}`, 'must be true or false');
      n[b] = o[b] as boolean;
    }
  }
  if (rrClient) n.rrClient = true;
  if (o.localAddress !== undefined) {
    if (typeof o.localAddress !== 'string' || !parseIpAddr(o.localAddress))
      fail(`${path}.localAddress`, 'must be an IP address');
    n.localAddress = o.localAddress;
  }
  if (o.name !== undefined) {
    if (typeof o.name !== 'string') fail(`${path}.name`, 'must be a string');
    n.name = o.name;
  }
  return n;
}

/** Validates a parsed config object (file contents merged with flags). */
export function resolveConfig(raw: unknown): ResolvedConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) fail('', 'the configuration must be a mapping');
  const c = raw as Record<string, unknown>;
  for (const k of Object.keys(c)) if (!topKeys.has(k)) fail(k, 'unknown field');
  if (
    typeof c.routerId !== 'string' ||
    routerIdToNumber(c.routerId) === undefined ||
    c.routerId === '0.0.0.0'
  ) {
    fail(
      'routerId',
      `must be a non-zero dotted quad such as 10.0.0.1 (--router-id), got ${JSON.stringify(c.routerId)}`,
    );
  }
  const as = c.as === undefined ? 64512 : num(c.as, 'as', 1, 0xffffffff);
  let listen: { address: string; port: number } | false;
  if (c.listen === undefined) listen = { address: '0.0.0.0', port: 179 };
  else if (typeof c.listen === 'string') listen = splitHostPort(c.listen, 'listen', false);
  else if (c.listen && typeof c.listen === 'object') {
    const l = c.listen as Record<string, unknown>;
    if (typeof l.address !== 'string' || !parseIpAddr(l.address)) fail('listen.address', 'must be an IP address');
    listen = { address: l.address, port: num(l.port, 'listen.port', 0, 65535) };
  } else fail('listen', 'must be "ADDR:PORT" or {address, port}');
  const speaker: SpeakerOptions = { routerId: c.routerId, as, listen };
  if (c.holdTime !== undefined) {
    const h = num(c.holdTime, 'holdTime', 0, 65535);
    if (h === 1 || h === 2) fail('holdTime', 'must be 0 or at least 3 seconds (RFC 4271 §4.2)');
    speaker.holdTime = h;
  }
  if (c.keepaliveTime !== undefined) speaker.keepaliveTime = num(c.keepaliveTime, 'keepaliveTime', 1, 21845);
  if (c.connectRetryTime !== undefined)
    speaker.connectRetryTime = num(c.connectRetryTime, 'connectRetryTime', 1, 65535);
  if (c.routeReflector !== undefined && typeof c.routeReflector !== 'boolean')
    fail('routeReflector', 'must be true or false');
  if (c.clusterId !== undefined) {
    if (typeof c.clusterId !== 'string' || routerIdToNumber(c.clusterId) === undefined)
      fail('clusterId', 'must be a dotted quad');
    if (!c.routeReflector) fail('clusterId', 'only applies with routeReflector: true (--route-reflector)');
  }
  if (c.routeReflector) speaker.routeReflector = c.clusterId ? { clusterId: c.clusterId as string } : {};
  if (c.families !== undefined) {
    if (!Array.isArray(c.families) || c.families.length === 0)
      fail('families', 'must be a non-empty list of ipv4, ipv6');
    speaker.families = c.families.map((f, i): Afi => {
      if (f === 'ipv4') return 4;
      if (f === 'ipv6') return 6;
      return fail(`families[${i}]`, `must be ipv4 or ipv6, got ${JSON.stringify(f)}`);
    });
  }
  if (c.nextHop6 !== undefined) {
    if (typeof c.nextHop6 !== 'string' || parseIpAddr(c.nextHop6)?.family !== 6)
      fail('nextHop6', 'must be an IPv6 address');
    speaker.nextHop6 = c.nextHop6;
  }
  const neighbors: NeighborConfig[] = [];
  for (const [key, rr] of [
    ['peers', false],
    ['rrClients', true],
  ] as const) {
    const list = c[key];
    if (list === undefined) continue;
    if (!Array.isArray(list)) fail(key, 'must be a list');
    list.forEach((p, i) => {
      neighbors.push(peer(p, `${key}[${i}]`, rr));
    });
  }
  const seen = new Map<string, string>();
  neighbors.forEach((n, i) => {
    if (seen.has(n.address)) fail(`peers[${i}]`, `${n.address} is configured twice`);
    seen.set(n.address, 'x');
    if (n.rrClient && !c.routeReflector)
      fail('rrClients', 'route-reflector clients need routeReflector: true (--route-reflector)');
    if (n.rrClient && n.as !== as)
      fail('rrClients', `client ${n.address} has AS ${n.as}; route-reflector clients are iBGP (AS ${as})`);
  });
  speaker.neighbors = neighbors;
  const advertise: string[] = [];
  if (c.advertise !== undefined) {
    if (!Array.isArray(c.advertise)) fail('advertise', 'must be a list of CIDRs');
    c.advertise.forEach((a, i) => {
      if (typeof a !== 'string' || !parsePrefix(a)) {
        fail(
          `advertise[${i}]`,
          `${JSON.stringify(a)} is not a network in CIDR form such as 10.244.1.0/26 (host bits zero)`,
        );
      }
      advertise.push(a);
    });
  }
  const out: ResolvedConfig = { speaker, advertise, installRoutes: false };
  if (c.ribOut !== undefined) {
    if (typeof c.ribOut !== 'string' || c.ribOut === '' || c.ribOut.includes('\0'))
      fail('ribOut', 'must be a file path');
    out.ribOut = c.ribOut;
  }
  if (c.installRoutes !== undefined) {
    if (typeof c.installRoutes !== 'boolean') fail('installRoutes', 'must be true or false');
    out.installRoutes = c.installRoutes;
  }
  if (c.tunnel !== undefined) {
    const t = c.tunnel as Record<string, unknown>;
    if (!t || typeof t !== 'object') fail('tunnel', 'must be {dev, mode, localSubnet}');
    if (typeof t.dev !== 'string' || !/^[A-Za-z0-9_.-]{1,15}$/.test(t.dev))
      fail('tunnel.dev', 'must be an interface name (1-15 characters)');
    if (t.mode !== 'Always' && t.mode !== 'CrossSubnet') fail('tunnel.mode', 'must be Always or CrossSubnet');
    if (t.mode === 'CrossSubnet' && (typeof t.localSubnet !== 'string' || !parsePrefix(t.localSubnet))) {
      fail('tunnel.localSubnet', 'CrossSubnet needs the node subnet as a CIDR such as 192.168.1.0/24');
    }
    out.tunnel = {
      dev: t.dev,
      mode: t.mode,
      ...(typeof t.localSubnet === 'string' ? { localSubnet: t.localSubnet } : {}),
    };
  }
  return out;
}

/** Reads a YAML or JSON config file (JSON is YAML). */
export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new BgpConfigError(
      '--config',
      `cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  let v: unknown;
  try {
    v = parseYaml(text);
  } catch (e) {
    throw new BgpConfigError(
      '--config',
      `${file} is not valid YAML/JSON: ${(e as Error).message.split('\n')[0]}`,
    );
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new BgpConfigError('--config', `${file} must hold a mapping`);
  return v as Record<string, unknown>;
}

/** Splits `ADDR:PORT:AS` (exported for the CLI's flag parsing). */
export function parsePeerSpec(s: string, path = '--peer'): NeighborConfig {
  const p = splitHostPort(s, path, true);
  return { address: p.address, port: p.port, as: p.as! };
}
