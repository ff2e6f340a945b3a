// Routing: per-namespace tables (main and local; there are no policy rules), longest-prefix match with
// metrics, `ip route add|replace|del|get` semantics and source address selection (net/ipv4/fib_*).
import { bytesEqual, type Family, formatIpAddr, formatIpBytes, type IpAddr, ipKey, ipKeyAt, prefixContains, prefixEquals, toPrefix } from '@kemu/ip';
import { formatPrefixIproute, isLinkLocalV6, mustParseIp, parseCidr } from './addr.js';
import { NetsimError } from './errors.js';
import type { RouteInfo, RouteSpec } from './types.js';
import {
  type Addr,
  type Ns,
  type Route,
  type RouteTable,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
} from './world-model.js';
import { linkByName, nsByName, type WorldState } from './world-state.js';

export function compileRoute(ns: Ns, spec: RouteSpec): Route {
  if (!spec || typeof spec !== 'object') throw new NetsimError('EINVAL', 'route spec missing');
  const via = spec.via === undefined ? null : mustParseIp(spec.via, 'gateway');
  const hint = spec.family ?? via?.family;
  const { ip, len } = parseCidr(spec.dst, hint);
  const family = ip.family;
  if (spec.family !== undefined && spec.family !== family)
    throw new NetsimError('EINVAL', `prefix ${spec.dst} is not IPv${spec.family}`);
  if (via && via.family !== family)
    throw new NetsimError('EINVAL', `gateway ${spec.via} is not IPv${family}`);
  const type = spec.type ?? 'unicast';
  if (!['unicast', 'blackhole', 'unreachable', 'prohibit', 'local'].includes(type))
    throw new NetsimError('EINVAL', `route type ${type}`);
  const dev = spec.dev === undefined ? null : linkByName(ns, spec.dev);
  const table = spec.table ?? RT_TABLE_MAIN;
  if (!Number.isInteger(table) || table < 1 || table > 0xffffffff)
    throw new NetsimError('EINVAL', `table ${table}`);
  const src = spec.src === undefined ? null : mustParseIp(spec.src, 'source');
  if (src && !ns.local.has(ipKey(src)))
    throw new NetsimError('EINVAL', `preferred source ${spec.src} is not a local address`);
  const metric = spec.metric ?? (family === 6 ? 1024 : 0);
  let resolvedDev = dev;
  if (type === 'unicast' || type === 'local') {
    if (!dev && !via) throw new NetsimError('EINVAL', 'route needs a gateway or a device');
    if (dev && family === 4 && !dev.up && !spec.onlink)
      throw new NetsimError('ENETDOWN', `Nexthop device ${dev.name} is not up`);
    if (via && !spec.onlink) {
      // The gateway must be reachable through a connected route (on that device when one is named).
      const r = lookupTable(ns.table(RT_TABLE_MAIN), via.bytes, 0, family);
      const connected = r && r.type === 'unicast' && !r.via && (!dev || r.dev === dev);
      if (!connected) throw new NetsimError('ENETUNREACH', `Nexthop has invalid gateway ${spec.via}`);
      resolvedDev = dev ?? r.dev;
    }
    if (via && spec.onlink && !dev) throw new NetsimError('EINVAL', 'onlink route needs a device');
  }
  const prefix = toPrefix(ip, len);
  const r: Route = {
    family,
    dst: prefix,
    type,
    dev: resolvedDev,
    via,
    onlink: spec.onlink ?? false,
    src,
    metric,
    table,
    proto: spec.proto ?? 'boot',
    scope:
      family === 6
        ? 'global'
        : (spec.scope ?? (type === 'local' ? 'host' : via || type !== 'unicast' ? 'global' : 'link')),
    net4: 0,
    mask4: 0,
  };
  return r;
}

export function insertRoute(ns: Ns, r: Route): void {
  if (r.family === 4) {
    r.mask4 = r.dst.len === 0 ? 0 : (0xffffffff << (32 - r.dst.len)) >>> 0;
    r.net4 = ipKeyAt(r.dst.bytes, 0, 4) as number;
  }
  const t = ns.table(r.table);
  const list = r.family === 4 ? t.v4 : t.v6;
  // Longest prefix first, then lowest metric: the first match is the answer.
  let i = 0;
  while (
    i < list.length &&
    (list[i]!.dst.len > r.dst.len || (list[i]!.dst.len === r.dst.len && list[i]!.metric <= r.metric))
  )
    i++;
  list.splice(i, 0, r);
}

export function findSame(ns: Ns, r: Route): Route | undefined {
  const t = ns.tables.get(r.table);
  if (!t) return undefined;
  return (r.family === 4 ? t.v4 : t.v6).find((x) => x.metric === r.metric && prefixEquals(x.dst, r.dst));
}

export function addRoute(w: WorldState, nsName: string, spec: RouteSpec): void {
  const ns = nsByName(w, nsName);
  const r = compileRoute(ns, spec);
  if (findSame(ns, r)) throw new NetsimError('EEXIST', `route ${formatPrefixIproute(r.dst)}`);
  insertRoute(ns, r);
}

export function replaceRoute(w: WorldState, nsName: string, spec: RouteSpec): void {
  const ns = nsByName(w, nsName);
  const r = compileRoute(ns, spec);
  const old = findSame(ns, r);
  if (old) dropRoute(ns, old);
  insertRoute(ns, r);
}

export function deleteRoute(w: WorldState, nsName: string, spec: RouteSpec): void {
  const ns = nsByName(w, nsName);
  const via = spec.via === undefined ? null : mustParseIp(spec.via, 'gateway');
  const { ip, len } = parseCidr(spec.dst, spec.family ?? via?.family);
  const dst = toPrefix(ip, len);
  const table = spec.table ?? RT_TABLE_MAIN;
  const dev = spec.dev === undefined ? null : linkByName(ns, spec.dev);
  const t = ns.tables.get(table);
  const list = t ? (ip.family === 4 ? t.v4 : t.v6) : [];
  const r = list.find(
    (x) =>
      prefixEquals(x.dst, dst) &&
      (spec.metric === undefined || x.metric === spec.metric) &&
      (!dev || x.dev === dev) &&
      (!via || (x.via !== null && bytesEqual(x.via.bytes, 0, via.bytes, 0, via.bytes.length))) &&
      (spec.type === undefined || x.type === spec.type),
  );
  if (!r) throw new NetsimError('ESRCH', `route ${spec.dst}`);
  dropRoute(ns, r);
}

export function dropRoute(ns: Ns, r: Route): void {
  const t = ns.tables.get(r.table)!;
  if (r.family === 4) t.v4 = t.v4.filter((x) => x !== r);
  else t.v6 = t.v6.filter((x) => x !== r);
}

export function routes(
  w: WorldState,
  nsName: string,
  opts: { table?: number; family?: 4 | 6 } = {},
): RouteInfo[] {
  const ns = nsByName(w, nsName);
  const out: RouteInfo[] = [];
  const ids = opts.table === undefined ? [...ns.tables.keys()].sort((a, b) => a - b) : [opts.table];
  for (const id of ids) {
    const t = ns.tables.get(id);
    if (!t) continue;
    for (const r of [...(opts.family === 6 ? [] : t.v4), ...(opts.family === 4 ? [] : t.v6)])
      out.push(routeInfo(r));
  }
  return out;
}

export function routeInfo(r: Route): RouteInfo {
  return {
    family: r.family,
    dst: r.dst.len === 0 ? 'default' : `${formatIpBytes(r.dst.bytes, 0, r.family)}/${r.dst.len}`,
    type: r.type,
    via: r.via ? formatIpAddr(r.via) : null,
    dev: r.dev?.name ?? null,
    onlink: r.onlink,
    src: r.src ? formatIpAddr(r.src) : null,
    metric: r.metric,
    table: r.table,
    proto: r.proto,
    scope: r.scope,
  };
}

export function getRoute(w: WorldState, nsName: string, dst: string): RouteInfo & { prefsrc: string | null } {
  const ns = nsByName(w, nsName);
  const ip = mustParseIp(dst, 'destination');
  const r = resolveRoute(w, ns, ip.bytes, 0, ip.family);
  if (!r) throw new NetsimError('ENETUNREACH', `route to ${dst}`);
  if (r.type !== 'unicast' && r.type !== 'local') {
    const code = r.type === 'blackhole' ? 'EINVAL' : r.type === 'prohibit' ? 'EACCES' : 'EHOSTUNREACH';
    throw new NetsimError(code, `route to ${dst} is ${r.type}`);
  }
  const src = selectSource(ns, r, ip.bytes, 0, ip.family);
  return { ...routeInfo(r), prefsrc: src ? formatIpAddr(src) : null };
}

export function lookupTable(t: RouteTable, b: Uint8Array, off: number, family: Family): Route | null {
  if (family === 4) {
    const k = ipKeyAt(b, off, 4) as number;
    for (const r of t.v4) if ((k & r.mask4) >>> 0 === r.net4) return r;
    return null;
  }
  for (const r of t.v6) if (prefixContains(r.dst, b, off)) return r;
  return null;
}

/** Local table first (own addresses go via lo), then main. */
export function resolveRoute(
  w: WorldState,
  ns: Ns,
  b: Uint8Array,
  off: number,
  family: Family,
): Route | null {
  const k = ipKeyAt(b, off, family);
  if (ns.local.has(k) || (family === 4 && b[off] === 127)) {
    let pair = w.localRoutes.get(ns);
    if (!pair) {
      pair = [null, null];
      w.localRoutes.set(ns, pair);
    }
    let lr = pair[family === 4 ? 0 : 1];
    if (!lr || lr.dev !== ns.links.get('lo')) {
      lr = {
        family,
        dst: { family, bytes: new Uint8Array(family === 4 ? 4 : 16), len: 0 },
        type: 'local',
        dev: ns.links.get('lo') ?? null,
        via: null,
        onlink: false,
        src: null,
        metric: 0,
        table: RT_TABLE_LOCAL,
        proto: 'kernel',
        scope: 'host',
        net4: 0,
        mask4: 0,
      };
      pair[family === 4 ? 0 : 1] = lr;
    }
    return lr;
  }
  const t = ns.tables.get(RT_TABLE_MAIN);
  return t ? lookupTable(t, b, off, family) : null;
}

/** Source address selection: the route's preferred source, else an address on the outgoing device. */
export function selectSource(ns: Ns, r: Route, dst: Uint8Array, off: number, family: Family): IpAddr | null {
  if (r.src) return r.src;
  if (r.type === 'local') {
    const k = ipKeyAt(dst, off, family);
    const a = ns.local.get(k);
    if (a) return a.ip;
    if (family === 4) return { family: 4, bytes: Uint8Array.of(127, 0, 0, 1) };
  }
  const nh = r.via ? r.via.bytes : dst;
  const nhOff = r.via ? 0 : off;
  let best: Addr | null = null;
  const wantLink = family === 6 && isLinkLocalV6(nh, nhOff);
  for (const a of ns.addrs) {
    if (a.dev !== r.dev || a.ip.family !== family) continue;
    if (family === 6 && (a.scope === 'link') !== wantLink) {
      if (!best) best = a;
      continue;
    }
    if (prefixContains(a.prefix, nh, nhOff)) return a.ip;
    if (!best || (best.scope === 'link' && a.scope !== 'link')) best = a;
  }
  if (best && !(family === 6 && best.scope === 'link' && !wantLink)) return best.ip;
  // Any global address in the namespace (the kernel's fallback for devices without one).
  for (const a of ns.addrs) if (a.ip.family === family && a.scope === 'global') return a.ip;
  return best?.ip ?? null;
}
