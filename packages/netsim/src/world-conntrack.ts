// Connection tracking: tuples of the packets NAT sees, their original/reply entries, confirmation and
// idle timeouts (net/netfilter/nf_conntrack_*).
import { bytesEqual, type Family, formatIpBytes } from '@kemu/ip';
import { mustParseIp } from './addr.js';
import { ipDstOffset, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP, ipSrcOffset } from './packet.js';
import type { Conn, Ns, Tuple } from './world-model.js';
import { nsByName, type WorldState } from './world-state.js';

export function tupleKey(
  proto: number,
  src: Uint8Array,
  sport: number,
  dst: Uint8Array,
  dport: number,
): string {
  return `${proto}|${Buffer.from(src).toString('hex')}|${sport}|${Buffer.from(dst).toString('hex')}|${dport}`;
}

/** Marks the echo-request end of an ICMP tuple's id (ids are 16 bits; ports of TCP/UDP never get here). */
const ICMP_REQ = 0x10000;

/** Idle timeouts in ms (the kernel's defaults for ICMP, UDP "stream", TCP established). */
const CT_TIMEOUT_MS: Record<number, number> = { 1: 30_000, 58: 30_000, 17: 120_000, 6: 432_000_000 };

export function tupleOf(p: Buffer, family: Family): Tuple | null {
  const proto = family === 4 ? p[9]! : p[6]!;
  const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
  const alen = family === 4 ? 4 : 16;
  const sOff = ipSrcOffset(family);
  const dOff = ipDstOffset(family);
  let sport: number;
  let dport: number;
  if (proto === IPPROTO_TCP || proto === IPPROTO_UDP) {
    sport = p.readUInt16BE(l4);
    dport = p.readUInt16BE(l4 + 2);
  } else if (proto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
    const t = p[l4]!;
    const request = family === 4 ? t === 8 : t === 128;
    const echo = request || (family === 4 ? t === 0 : t === 129);
    if (!echo) return null;
    // The kernel keys ICMP on type as well as id: an echo request's reply tuple expects an echo reply, so
    // a request going the other way is a new connection. The request side of the id carries ICMP_REQ.
    const id = p.readUInt16BE(l4 + 4);
    sport = request ? id : id | ICMP_REQ;
    dport = request ? id | ICMP_REQ : id;
  } else return null;
  return { proto, src: p.subarray(sOff, sOff + alen), sport, dst: p.subarray(dOff, dOff + alen), dport };
}

export function ctConfirm(ns: Ns, c: Conn): void {
  if (c.confirmed) return;
  c.confirmed = true;
  ns.ct.set(tupleKey(c.reply.proto, c.reply.src, c.reply.sport, c.reply.dst, c.reply.dport), {
    conn: c,
    dir: 'reply',
  });
}

export function conntrack(
  w: WorldState,
  nsName: string,
): { proto: number; orig: string; reply: string; nat: ('dnat' | 'snat')[] }[] {
  const ns = nsByName(w, nsName);
  const t = (x: Tuple, f: Family) =>
    `${formatIpBytes(x.src, 0, f)}:${x.sport} -> ${formatIpBytes(x.dst, 0, f)}:${x.dport}`;
  const out = [];
  for (const e of ns.ct.values()) {
    if (e.dir !== 'orig') continue;
    const c = e.conn;
    const nat: ('dnat' | 'snat')[] = [];
    if (c.dnat) nat.push('dnat');
    if (c.snat) nat.push('snat');
    out.push({ proto: c.orig.proto, orig: t(c.orig, c.family), reply: t(c.reply, c.family), nat });
  }
  return out;
}

export function flushConntrack(w: WorldState, nsName: string): void {
  nsByName(w, nsName).ct.clear();
}

/**
 * `conntrack -D`: removes the connections whose original destination (`-d`) or reply source (`-r`, the
 * DNATed endpoint) is the given address, optionally of one protocol; returns how many went.
 */
export function deleteConntrack(w: WorldState, nsName: string, f: { proto?: number; origDst?: string; replySrc?: string }): number {
  const ns = nsByName(w, nsName);
  const dst = f.origDst === undefined ? undefined : mustParseIp(f.origDst);
  const src = f.replySrc === undefined ? undefined : mustParseIp(f.replySrc);
  const gone = new Set<Conn>();
  for (const e of ns.ct.values()) {
    const c = e.conn;
    if (f.proto !== undefined && c.orig.proto !== f.proto) continue;
    if (dst && (dst.family !== c.family || !bytesEqual(dst.bytes, 0, c.orig.dst, 0, dst.bytes.length))) continue;
    if (src && (src.family !== c.family || !bytesEqual(src.bytes, 0, c.reply.src, 0, src.bytes.length))) continue;
    gone.add(c);
  }
  for (const [k, e] of ns.ct) if (gone.has(e.conn)) ns.ct.delete(k);
  return gone.size;
}

/** Drops connections idle for longer than their protocol's timeout. */
export function ctExpire(w: WorldState, ns: Ns): void {
  for (const [k, e] of ns.ct) {
    if (w.clockUs - e.conn.lastUs > (CT_TIMEOUT_MS[e.conn.orig.proto] ?? 600_000) * 1000) ns.ct.delete(k);
  }
}
