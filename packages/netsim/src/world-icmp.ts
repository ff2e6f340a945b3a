// ICMP and ICMPv6: echo replies, errors sent back for dropped packets (never about ICMP errors), and
// errors received, reported to the local ping / UDP / TCP call that caused them (net/ipv4/icmp.c).
import { type Family, formatIpAddr, formatIpBytes } from '@kemu/ip';
import { icmpError, ipDstOffset, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP, ipSrcOffset, ipv4Packet, ipv6Packet, refreshChecksums } from './packet.js';
import { rec } from './world-capture.js';
import { resolveRoute, selectSource } from './world-fib.js';
import { ipLocalOut } from './world-ip.js';
import type { IcmpErrorKind, Link, Ns } from './world-model.js';
import { ndiscRcv } from './world-neighbour.js';
import type { WorldState } from './world-state.js';

/** ICMP / ICMPv6 addressed to this namespace: echo, neighbour discovery, errors for local sockets. */
export function icmpRcv(
  w: WorldState,
  ns: Ns,
  l: Link,
  p: Buffer,
  family: Family,
  l4: number,
  end: number,
): void {
  const sOff = ipSrcOffset(family);
  const dOff = ipDstOffset(family);
  const type = p[l4]!;
  if (type === (family === 4 ? 8 : 128)) {
    if (family === 6 && p[dOff] === 0xff) return;
    // p is this namespace's private copy: turn it around in place (no IPv4 options survive ihl > 5).
    let reply: Buffer;
    if (family === 4 && l4 !== 20) {
      const body = Buffer.from(p.subarray(l4, end));
      body[0] = 0;
      reply = ipv4Packet(
        { src: p.subarray(16, 20), dst: p.subarray(12, 16), proto: IPPROTO_ICMP, ttl: 64, id: 0 },
        body,
      );
    } else {
      reply = p.subarray(0, end);
      const alen = family === 4 ? 4 : 16;
      for (let i = 0; i < alen; i++) {
        const t = reply[sOff + i]!;
        reply[sOff + i] = reply[dOff + i]!;
        reply[dOff + i] = t;
      }
      if (family === 4) {
        reply[8] = 64;
        reply.writeUInt16BE(0, 4);
      } else reply[7] = 64;
      reply[l4] = family === 4 ? 0 : 129;
      refreshChecksums(reply, family);
    }
    if (w.tr) rec(w, 'reply', ns, l, 'echo reply', reply, family);
    ipLocalOut(w, ns, reply, family, l);
    return;
  }
  if (type === (family === 4 ? 0 : 129)) {
    const s = w.pings.get(`${ns.name}|${p.readUInt16BE(l4 + 4)}`);
    if (s)
      s.replies.push({
        seq: p.readUInt16BE(l4 + 6),
        from: formatIpBytes(p, sOff, family),
        ttl: p[family === 4 ? 8 : 7]!,
      });
    return;
  }
  if (family === 6 && (type === 135 || type === 136)) {
    ndiscRcv(w, ns, l, p, l4, end, type);
    return;
  }
  const isErr = family === 4 ? type === 3 || type === 11 : type === 1 || type === 3;
  if (isErr) {
    icmpErrorRcv(w, ns, p, family, l4, end);
    return;
  }
}

export function icmpErrorRcv(
  w: WorldState,
  ns: Ns,
  p: Buffer,
  family: Family,
  l4: number,
  end: number,
): void {
  const type = p[l4]!;
  const code = p[l4 + 1]!;
  const inner = l4 + 8;
  if (end - inner < (family === 4 ? 28 : 48)) return;
  const innerProto = family === 4 ? p[inner + 9]! : p[inner + 6]!;
  const innerL4 = family === 4 ? inner + (p[inner]! & 0xf) * 4 : inner + 40;
  const from = formatIpBytes(p, ipSrcOffset(family), family);
  let msg: string;
  if (family === 4) {
    msg =
      type === 11
        ? 'Time to live exceeded'
        : ([
            'Destination Net Unreachable',
            'Destination Host Unreachable',
            'Destination Protocol Unreachable',
            'Destination Port Unreachable',
          ][code] ?? (code === 13 ? 'Packet filtered' : `Destination unreachable (code ${code})`));
  } else {
    msg =
      type === 3
        ? 'Time exceeded: Hop limit'
        : ([
            'No route',
            'Administratively prohibited',
            'Beyond scope',
            'Address unreachable',
            'Port unreachable',
          ][code] ?? `Destination unreachable (code ${code})`);
  }
  if (innerProto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
    const s = w.pings.get(`${ns.name}|${p.readUInt16BE(innerL4 + 4)}`);
    if (s) s.errors.push({ seq: p.readUInt16BE(innerL4 + 6), from, message: msg });
    return;
  }
  if (innerProto === IPPROTO_UDP && w.udpProbe && !w.udpProbe.error) {
    w.udpProbe.error = { from, message: msg };
    return;
  }
  if (innerProto === IPPROTO_TCP) {
    const sOff = ipSrcOffset(family);
    const dOff = ipDstOffset(family);
    const key = `${ns.name}|${formatIpBytes(p, inner + sOff, family)}|${p.readUInt16BE(innerL4)}|${formatIpBytes(p, inner + dOff, family)}|${p.readUInt16BE(innerL4 + 2)}`;
    const s = w.tcps.get(key);
    if (s && s.state === 'syn-sent') s.state = 'unreachable';
  }
}

export function failLocal(
  w: WorldState,
  ns: Ns,
  p: Buffer,
  family: Family,
  from: string,
  message: string,
): void {
  const proto = family === 4 ? p[9]! : p[6]!;
  const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
  if (proto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
    const s = w.pings.get(`${ns.name}|${p.readUInt16BE(l4 + 4)}`);
    if (s) s.errors.push({ seq: p.readUInt16BE(l4 + 6), from, message });
  } else if (proto === IPPROTO_TCP) {
    const sOff = ipSrcOffset(family);
    const dOff = ipDstOffset(family);
    const key = `${ns.name}|${formatIpBytes(p, sOff, family)}|${p.readUInt16BE(l4)}|${formatIpBytes(p, dOff, family)}|${p.readUInt16BE(l4 + 2)}`;
    const s = w.tcps.get(key);
    if (s && s.state === 'syn-sent') s.state = 'unreachable';
  }
}

/** ICMP error back to the source of `p` (never about ICMP errors, as RFC 1122 requires). */
export function icmpErrorTo(w: WorldState, ns: Ns, p: Buffer, family: Family, kind: IcmpErrorKind): void {
  const proto = family === 4 ? p[9]! : p[6]!;
  const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
  if (proto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
    const t = p[l4]!;
    const isErr = family === 4 ? t !== 0 && t !== 8 : t < 128;
    if (isErr || (family === 6 && (t === 135 || t === 136))) return;
  }
  const sOff = ipSrcOffset(family);
  const srcIp = Uint8Array.from(p.subarray(sOff, sOff + (family === 4 ? 4 : 16)));
  if (srcIp.every((x) => x === 0)) return;
  let type: number;
  let code: number;
  if (family === 4) {
    [type, code] =
      kind === 'ttl'
        ? [11, 0]
        : kind === 'net-unreachable'
          ? [3, 0]
          : kind === 'host-unreachable'
            ? [3, 1]
            : kind === 'port-unreachable'
              ? [3, 3]
              : [3, 13];
  } else {
    [type, code] =
      kind === 'ttl'
        ? [3, 0]
        : kind === 'net-unreachable'
          ? [1, 0]
          : kind === 'host-unreachable'
            ? [1, 3]
            : kind === 'port-unreachable'
              ? [1, 4]
              : [1, 1];
  }
  const r = resolveRoute(w, ns, srcIp, 0, family);
  if (!r || (r.type !== 'unicast' && r.type !== 'local')) return;
  const src = selectSource(ns, r, srcIp, 0, family);
  if (!src) return;
  const body = icmpError(type, code, p, family);
  const err =
    family === 4
      ? ipv4Packet({ src: src.bytes, dst: srcIp, proto: IPPROTO_ICMP, ttl: 64 }, body)
      : ipv6Packet({ src: src.bytes, dst: srcIp, nextHeader: IPPROTO_ICMPV6, hopLimit: 64 }, body);
  if (w.tr) rec(w, 'reply', ns, r.dev, `ICMP ${kind} to ${formatIpAddr({ family, bytes: srcIp })}`, err, family);
  ipLocalOut(w, ns, err, family);
}
