// What both rule engines (iptables-style tables and nftables) need of a packet in a namespace: its view
// (protocol, ports, address offsets), conntrack state, locality of addresses, deterministic randomness,
// and NAT bound to the first packet of a connection.
import { type Family, formatIpBytes, ipKeyAt } from '@kemu/ip';
import { ipDstOffset, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP, ipSrcOffset } from './packet.js';
import { rec } from './world-capture.js';
import type { CtRef, Link, Ns } from './world-model.js';
import { rewrite } from './world-nat.js';
import type { WorldState } from './world-state.js';

/** What travels with one packet through one namespace: its conntrack entry, mark and devices. */
export interface Skb {
  ct: CtRef | null;
  mark: number;
  inDev: Link | null;
  outDev: Link | null;
}

export type Verdict = 'accept' | 'drop';

export const MAX_DEPTH = 64;

/** Deterministic randomness for `statistic --mode random`, seeded from the world. */
const rngs = new WeakMap<WorldState, { s: number }>();
export function random(w: WorldState): number {
  let r = rngs.get(w);
  if (!r) {
    r = { s: (0x9e3779b9 ^ (w.seed * 0x01000193)) >>> 0 || 1 };
    rngs.set(w, r);
  }
  // xorshift32
  let x = r.s;
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  r.s = x >>> 0;
  return r.s / 0x100000000;
}

export function ifMatch(pattern: string, dev: Link | null): boolean {
  if (!dev) return false;
  return pattern.endsWith('+') ? dev.name.startsWith(pattern.slice(0, -1)) : dev.name === pattern;
}

export interface PktView {
  proto: number;
  l4: number;
  sport: number;
  dport: number;
  sOff: number;
  dOff: number;
}

export function view(p: Buffer, family: Family): PktView {
  const proto = family === 4 ? p[9]! : p[6]!;
  const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
  const ports = (proto === IPPROTO_TCP || proto === IPPROTO_UDP || proto === 132) && p.length >= l4 + 4;
  return {
    proto,
    l4,
    sport: ports ? p.readUInt16BE(l4) : -1,
    dport: ports ? p.readUInt16BE(l4 + 2) : -1,
    sOff: ipSrcOffset(family),
    dOff: ipDstOffset(family),
  };
}

export const protoName = (n: number) => (n === IPPROTO_TCP ? 'tcp' : n === IPPROTO_UDP ? 'udp' : n === 132 ? 'sctp' : String(n));

export function isLocal(ns: Ns, p: Buffer, off: number, family: Family): boolean {
  if (ns.local.has(ipKeyAt(p, off, family))) return true;
  return family === 4 ? p[off] === 127 : false;
}

export function ctStates(skb: Skb, v: PktView, p: Buffer, family: Family): string[] {
  const ct = skb.ct;
  if (!ct) {
    const icmp = family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
    // ICMP errors belong to the connection they report on.
    if (v.proto === icmp && !(family === 4 ? [0, 8].includes(p[v.l4]!) : [128, 129].includes(p[v.l4]!))) return ['RELATED'];
    return ['INVALID'];
  }
  const s = [ct.isNew && !ct.conn.confirmed ? 'NEW' : 'ESTABLISHED'];
  if (ct.conn.dnat) s.push('DNAT');
  if (ct.conn.snat) s.push('SNAT');
  return s;
}


/** DNAT of a new connection's first packet (to `port`, or the original port); later packets follow conntrack. */
export function applyDnat(w: WorldState, ns: Ns, skb: Skb, p: Buffer, family: Family, v: PktView, addr: Uint8Array, toPort: number | undefined, where: string): Verdict {
  const ct = skb.ct;
  // NAT binds the first packet of a connection; anything untracked passes the nat table as is.
  if (!ct || !ct.isNew || ct.conn.confirmed) return 'accept';
  const c = ct.conn;
  const dev = skb.outDev ?? skb.inDev;
  const port = toPort ?? c.orig.dport;
  const keepPort = v.sport < 0;
  c.dnat = true;
  c.reply = { ...c.reply, src: Uint8Array.from(addr), sport: keepPort ? c.reply.sport : port };
  rewrite(p, family, 'dst', addr, keepPort ? v.dport : port);
  if (w.tr) rec(w, 'nat', ns, dev, `${where}: ${formatIpBytes(c.orig.dst, 0, family)}:${c.orig.dport} -> ${formatIpBytes(addr, 0, family)}:${port}`, p, family);
  return 'accept';
}

/** SNAT to `addr`, or MASQUERADE (addr null: the output device's address), of a new connection. */
export function applySnat(w: WorldState, ns: Ns, skb: Skb, p: Buffer, family: Family, addr: Uint8Array | null, toPort: number | undefined, where: string): Verdict {
  const ct = skb.ct;
  if (!ct || !ct.isNew || ct.conn.confirmed) return 'accept';
  const c = ct.conn;
  const dev = skb.outDev ?? skb.inDev;
  let to = addr;
  if (!to) {
    const a = ns.addrs.find((x) => x.dev === skb.outDev && x.ip.family === family && x.scope === 'global');
    to = a ? a.ip.bytes : null;
  }
  if (!to) {
    rec(w, 'drop', ns, dev, where, p, family, 'MASQUERADE: no address on the output device');
    return 'drop';
  }
  const port = toPort ?? c.reply.dport;
  c.snat = true;
  c.reply = { ...c.reply, dst: Uint8Array.from(to), dport: port };
  rewrite(p, family, 'src', to, port);
  if (w.tr) rec(w, 'nat', ns, dev, `${where}: source -> ${formatIpBytes(to, 0, family)}`, p, family);
  return 'accept';
}
