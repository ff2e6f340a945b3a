// IPv4/IPv6 input, forwarding, output and local delivery (net/ipv4/ip_input.c, ip_forward.c,
// ip_output.c): header checks, the netfilter hook points, TTL, route types, and the hand-off to the
// neighbour layer or to the protocol handlers.
import { type Family, formatIpAddr, formatIpBytes, ipKeyAt, prefixContains } from '@kemu/ip';
import { formatPrefixIproute, isLinkLocalV6 } from './addr.js';
import { ETH_P_IP, ETH_P_IPV6, ethFrame, inetChecksum, ipDstOffset, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP, refreshChecksums } from './packet.js';
import { rec } from './world-capture.js';
import { devXmit } from './world-dev.js';
import { resolveRoute } from './world-fib.js';
import { type Link, type Ns, type Route, RT_TABLE_LOCAL, RT_TABLE_MAIN } from './world-model.js';
import { neighOutput } from './world-neighbour.js';
import { nfForward, nfLocalIn, nfLocalOut, nfPostrouting, nfPrerouting, type Skb } from './world-netfilter.js';
import type { WorldState } from './world-state.js';

export function ipRcv(w: WorldState, l: Link, frame: Buffer, family: Family): void {
  const ns = l.ns;
  // Copy out of the frame: forwarding and NAT rewrite headers, and captured frames must stay intact.
  const p = Buffer.allocUnsafe(frame.length - 14);
  frame.copy(p, 0, 14);
  if (family === 4) {
    if (
      p.length < 20 ||
      p[0]! >> 4 !== 4 ||
      (p[0]! & 0xf) < 5 ||
      p.readUInt16BE(2) > p.length ||
      inetChecksum(p, 0, (p[0]! & 0xf) * 4) !== 0
    ) {
      rec(w, 'drop', ns, l, 'ip receive', frame, undefined, 'bad IPv4 header');
      return;
    }
  } else if (p.length < 40 || p[0]! >> 4 !== 6 || 40 + p.readUInt16BE(4) > p.length) {
    rec(w, 'drop', ns, l, 'ip receive', frame, undefined, 'bad IPv6 header');
    return;
  }
  const len = family === 4 ? p.readUInt16BE(2) : 40 + p.readUInt16BE(4);
  const pkt = len < p.length ? p.subarray(0, len) : p;
  const skb = nfPrerouting(w, ns, pkt, family, l);
  if (!skb) return;
  const dOff = ipDstOffset(family);
  if (isLocalDst(ns, pkt, dOff, family)) {
    localDeliver(w, ns, l, pkt, family, skb);
    return;
  }
  if (family === 6 && pkt[24] === 0xff) {
    rec(w, 'drop', ns, l, 'ip receive', pkt, family, 'multicast group not joined');
    return;
  }
  if (!(family === 4 ? ns.fwd4 : ns.fwd6)) {
    rec(
      w,
      'drop',
      ns,
      l,
      'ip receive',
      pkt,
      family,
      `not a local address and forwarding is off (net.${family === 4 ? 'ipv4.ip_forward' : 'ipv6.conf.all.forwarding'}=0)`,
    );
    return;
  }
  const ttlOff = family === 4 ? 8 : 7;
  if (pkt[ttlOff]! <= 1) {
    rec(w, 'drop', ns, l, 'forward', pkt, family, 'TTL exceeded');
    w.stack.icmpErrorTo(w, ns, pkt, family, 'ttl');
    return;
  }
  const r = resolveRoute(w, ns, pkt, dOff, family);
  if (!r) {
    rec(w, 'drop', ns, l, 'route lookup', pkt, family, 'no route to destination');
    w.stack.icmpErrorTo(w, ns, pkt, family, 'net-unreachable');
    return;
  }
  if (r.type !== 'unicast') {
    routeTypeDrop(w, ns, l, r, pkt, family, true);
    return;
  }
  if (!nfForward(w, ns, pkt, family, skb, r.dev)) return;
  pkt[ttlOff]!--;
  if (family === 4) refreshChecksums(pkt, 4);
  if (w.tr) rec(w, 'forward', ns, l, `forward to ${formatIpBytes(pkt, dOff, family)}`, pkt, family);
  ipRouteOutput(w, ns, pkt, family, r, true, skb);
}

export function routeTypeDrop(
  w: WorldState,
  ns: Ns,
  l: Link | null,
  r: Route,
  pkt: Buffer,
  family: Family,
  sendIcmp: boolean,
): void {
  const d = formatPrefixIproute(r.dst);
  rec(w, 'drop', ns, l, `route ${r.type} ${d}`, pkt, family, `${r.type} route`);
  if (!sendIcmp) return;
  if (r.type === 'unreachable') w.stack.icmpErrorTo(w, ns, pkt, family, 'host-unreachable');
  else if (r.type === 'prohibit') w.stack.icmpErrorTo(w, ns, pkt, family, 'prohibited');
}

export function isLocalDst(ns: Ns, p: Buffer, off: number, family: Family): boolean {
  if (ns.local.has(ipKeyAt(p, off, family))) return true;
  if (family === 4) {
    if (p[off] === 127) return true;
    if (p[off] === 255 && p[off + 1] === 255 && p[off + 2] === 255 && p[off + 3] === 255) return true;
    // Directed broadcast of a local subnet.
    for (const a of ns.addrs) {
      if (a.ip.family !== 4 || a.len >= 31) continue;
      const host = (0xffffffff >>> a.len) >>> 0;
      const k = ipKeyAt(p, off, 4) as number;
      if ((k & host) >>> 0 === host && prefixContains(a.prefix, p, off)) return true;
    }
    return false;
  }
  // Link-scope multicast: all-nodes and solicited-node groups are always joined.
  return p[off] === 0xff && (p[off + 1]! & 0x0f) === 0x02;
}

/** After the route is known: NAT POSTROUTING, then neighbour output. */
export function ipRouteOutput(
  w: WorldState,
  ns: Ns,
  p: Buffer,
  family: Family,
  r: Route,
  forwarded: boolean,
  skb: Skb | null,
): void {
  const dOff = ipDstOffset(family);
  if (w.tr) {
    const via = r.via ? ` via ${formatIpAddr(r.via)}` : '';
    rec(
      w,
      'route',
      ns,
      r.dev,
      `${r.type === 'local' ? 'local' : formatPrefixIproute(r.dst)}${via} dev ${r.dev?.name ?? '-'} (table ${r.table === RT_TABLE_MAIN ? 'main' : r.table === RT_TABLE_LOCAL ? 'local' : r.table})`,
    );
  }
  const dev = r.dev;
  if (!dev) {
    rec(w, 'drop', ns, null, 'output', p, family, 'route has no device');
    return;
  }
  if (!nfPostrouting(w, ns, p, family, dev, skb)) return;
  if (dev.kind === 'loopback') {
    const f = ethFrame(new Uint8Array(6), new Uint8Array(6), family === 4 ? ETH_P_IP : ETH_P_IPV6, p);
    devXmit(w, dev, f);
    return;
  }
  if (!dev.up) {
    rec(w, 'drop', ns, dev, 'output', p, family, 'link down');
    return;
  }
  const nh = r.via ? r.via.bytes : p;
  const nhOff = r.via ? 0 : dOff;
  neighOutput(w, dev, nh, nhOff, p, family, forwarded);
}

/** Locally generated packet: OUTPUT NAT, route, POSTROUTING, out. Returns an errno name on refusal. */
export function ipLocalOut(w: WorldState, ns: Ns, p: Buffer, family: Family, replyTo?: Link): string | null {
  const skb = nfLocalOut(w, ns, p, family);
  // A netfilter DROP in OUTPUT fails the send, as sendmsg() does with EPERM.
  if (!skb) return 'EPERM';
  const dOff = ipDstOffset(family);
  // Replies to link-local / multicast sources leave by the interface the request came in on.
  let r: Route | null;
  if (replyTo && family === 6 && (isLinkLocalV6(p, dOff) || p[dOff] === 0xff)) {
    r = { ...resolveRoute(w, ns, p, dOff, family)!, dev: replyTo, via: null, type: 'unicast' };
    if (!r.dev) return 'ENETUNREACH';
  } else r = resolveRoute(w, ns, p, dOff, family);
  if (!r) {
    rec(w, 'drop', ns, null, 'route lookup', p, family, 'Network is unreachable');
    return 'ENETUNREACH';
  }
  if (r.type !== 'unicast' && r.type !== 'local') {
    routeTypeDrop(w, ns, null, r, p, family, false);
    return r.type === 'blackhole' ? 'EINVAL' : r.type === 'prohibit' ? 'EACCES' : 'EHOSTUNREACH';
  }
  ipRouteOutput(w, ns, p, family, r, false, skb);
  return null;
}

export function localDeliver(
  w: WorldState,
  ns: Ns,
  l: Link,
  p: Buffer,
  family: Family,
  skb: Skb | null,
): void {
  if (!nfLocalIn(w, ns, l, p, family, skb)) return;
  const proto = family === 4 ? p[9]! : p[6]!;
  const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
  const end = family === 4 ? p.readUInt16BE(2) : 40 + p.readUInt16BE(4);
  if (w.tr) rec(w, 'local', ns, l, `deliver to ${ns.name} stack`, p, family);
  if ((proto === IPPROTO_ICMP && family === 4) || (proto === IPPROTO_ICMPV6 && family === 6)) {
    w.stack.icmpRcv(w, ns, l, p, family, l4, end);
    return;
  }
  if (proto === IPPROTO_UDP) {
    w.stack.udpRcv(w, ns, l, p, family, l4, end);
    return;
  }
  if (proto === IPPROTO_TCP) {
    w.stack.tcpRcv(w, ns, l, p, family, l4);
    return;
  }
  rec(w, 'drop', ns, l, 'deliver', p, family, `protocol ${proto} unreachable`);
}
