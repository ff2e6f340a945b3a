// Interface addresses (`ip addr`): the kernel's prefix route that comes with each address and the
// cleanup when the last address of a subnet goes (net/ipv4/devinet.c, net/ipv6/addrconf.c).
import { bytesEqual, formatIpAddr, type IpAddr, ipKey, prefixEquals, toPrefix } from '@kemu/ip';
import { isLinkLocalV6, parseCidr } from './addr.js';
import { NetsimError } from './errors.js';
import type { AddressInfo } from './types.js';
import { insertRoute } from './world-fib.js';
import { type Addr, type Link, type Ns, type Route, RT_TABLE_MAIN } from './world-model.js';
import { linkByName, nsByName, type WorldState } from './world-state.js';

export function addAddress(w: WorldState, nsName: string, dev: string, cidr: string): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, dev);
  const { ip, len } = parseCidr(cidr);
  const key = ipKey(ip);
  if (ns.addrs.some((a) => a.dev === l && a.key === key))
    throw new NetsimError('EEXIST', `address ${cidr} on ${dev}`);
  if (ip.family === 4 && ip.bytes[0] === 0) throw new NetsimError('EINVAL', `invalid address ${cidr}`);
  if (ip.family === 6 && ip.bytes[0] === 0xff) throw new NetsimError('EINVAL', `multicast address ${cidr}`);
  const scope =
    ip.family === 4 ? (ip.bytes[0] === 127 ? 'host' : 'global') : isLinkLocalV6(ip.bytes) ? 'link' : 'global';
  insertAddr(ns, l, ip, len, scope);
}

export function insertAddr(ns: Ns, l: Link, ip: IpAddr, len: number, scope: Addr['scope']): Addr {
  const a: Addr = { ip, key: ipKey(ip), len, prefix: toPrefix(ip, len), dev: l, scope };
  ns.addrs.push(a);
  if (!ns.local.has(a.key)) ns.local.set(a.key, a);
  if (l.up) addPrefixRoute(ns, a);
  return a;
}

/** The kernel's "proto kernel scope link" route for an address's subnet. */
export function addPrefixRoute(ns: Ns, a: Addr): void {
  if (a.dev.kind === 'loopback') return;
  const max = a.ip.family === 4 ? 32 : 128;
  if (a.len === max) return;
  const dst = toPrefix(a.ip, a.len);
  const t = ns.table(RT_TABLE_MAIN);
  const list = a.ip.family === 4 ? t.v4 : t.v6;
  const metric = a.ip.family === 4 ? 0 : 256;
  if (list.some((r) => r.dev === a.dev && r.proto === 'kernel' && prefixEquals(r.dst, dst))) return;
  insertRoute(ns, {
    family: a.ip.family,
    dst,
    type: 'unicast',
    dev: a.dev,
    via: null,
    onlink: false,
    src: a.ip.family === 4 ? a.ip : null,
    metric,
    table: RT_TABLE_MAIN,
    proto: 'kernel',
    // IPv6 routes always report universe scope.
    scope: a.ip.family === 4 ? 'link' : 'global',
    net4: 0,
    mask4: 0,
  });
}

export function deleteAddress(w: WorldState, nsName: string, dev: string, cidr: string): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, dev);
  const { ip, len } = parseCidr(cidr);
  const key = ipKey(ip);
  const a = ns.addrs.find((x) => x.dev === l && x.key === key && (!cidr.includes('/') || x.len === len));
  if (!a) throw new NetsimError('EADDRNOTAVAIL', `address ${cidr} on ${dev}`);
  removeAddr(ns, a);
}

export function removeAddr(ns: Ns, a: Addr): void {
  ns.addrs = ns.addrs.filter((x) => x !== a);
  if (ns.local.get(a.key) === a) {
    ns.local.delete(a.key);
    const other = ns.addrs.find((x) => x.key === a.key);
    if (other) ns.local.set(a.key, other);
  }
  // The subnet route goes with the last address of that subnet on the device.
  const dst = toPrefix(a.ip, a.len);
  const still = ns.addrs.some(
    (x) => x.dev === a.dev && x.ip.family === a.ip.family && x.len === a.len && prefixEquals(x.prefix, dst),
  );
  if (!still) {
    for (const t of ns.tables.values()) {
      const keep = (r: Route) => !(r.dev === a.dev && r.proto === 'kernel' && prefixEquals(r.dst, dst));
      if (a.ip.family === 4) t.v4 = t.v4.filter(keep);
      else t.v6 = t.v6.filter(keep);
    }
  }
  // IPv4 routes whose preferred source was this address go too.
  if (a.ip.family === 4) {
    for (const t of ns.tables.values()) {
      t.v4 = t.v4.filter(
        (r) => !(r.src && bytesEqual(r.src.bytes, 0, a.ip.bytes, 0, 4) && r.proto === 'kernel'),
      );
    }
  }
}

export function addresses(w: WorldState, nsName: string, dev?: string): AddressInfo[] {
  const ns = nsByName(w, nsName);
  const l = dev === undefined ? null : linkByName(ns, dev);
  return ns.addrs
    .filter((a) => !l || a.dev === l)
    .map((a) => {
      const address = formatIpAddr(a.ip);
      return {
        dev: a.dev.name,
        cidr: `${address}/${a.len}`,
        address,
        prefixLen: a.len,
        family: a.ip.family,
        scope: a.scope,
      };
    });
}
