// Sockets: UDP and TCP listeners and what they receive, and the calls that drive the network from one
// namespace (ping, UDP send, TCP connect).
import { bytesEqual, type Family, formatIpAddr, formatIpBytes, type IpAddr, ipKey } from '@kemu/ip';
import { mustParseIp } from './addr.js';
import { NetsimError } from './errors.js';
import { icmpEcho, ipDstOffset, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP, ipSrcOffset, ipv4Packet, ipv6Packet, TCP_ACK, TCP_RST, TCP_SYN, tcpSegment, udpDatagram } from './packet.js';
import type { Trace } from './trace.js';
import type { Listener } from './types.js';
import { rec } from './world-capture.js';
import { advance } from './world-clock.js';
import { run } from './world-dev.js';
import { resolveRoute, selectSource } from './world-fib.js';
import { icmpErrorTo } from './world-icmp.js';
import { ipLocalOut } from './world-ip.js';
import type { Link, Ns } from './world-model.js';
import type {
  PingOptions,
  PingResult,
  SendOptions,
  TcpConnectResult,
  UdpExchangeResult,
  UdpSendResult,
} from './world-results.js';
import {
  nsByName,
  type PingSession,
  type TcpSession,
  type UdpProbe,
  type WorldState,
} from './world-state.js';
import { vxlanRcv } from './world-vxlan.js';
import { answerRcv, clearAnswerer, clientRcv, closeClient, openClient, setAnswerer, type UdpAnswer } from './world-udp-answer.js';

export function listen(w: WorldState, nsName: string, l: Listener): void {
  const ns = nsByName(w, nsName);
  if (l.proto !== 'tcp' && l.proto !== 'udp') throw new NetsimError('EINVAL', `proto ${String(l.proto)}`);
  if (!Number.isInteger(l.port) || l.port < 1 || l.port > 65535)
    throw new NetsimError('EINVAL', `port ${l.port}`);
  if (l.ip !== undefined) {
    const ip = mustParseIp(l.ip, 'bind address');
    if (!ns.local.has(ipKey(ip))) throw new NetsimError('EADDRNOTAVAIL', `bind ${l.ip}`);
  }
  if (
    ns.listeners.some(
      (x) =>
        x.proto === l.proto &&
        x.port === l.port &&
        (x.ip === undefined || l.ip === undefined || x.ip === l.ip),
    )
  ) {
    throw new NetsimError('EADDRINUSE', `bind ${l.proto} port ${l.port}`);
  }
  ns.listeners.push({ ...l });
}

export function unlisten(w: WorldState, nsName: string, l: Listener): void {
  const ns = nsByName(w, nsName);
  const before = ns.listeners.length;
  ns.listeners = ns.listeners.filter((x) => !(x.proto === l.proto && x.port === l.port && x.ip === l.ip));
  if (ns.listeners.length === before) throw new NetsimError('ENOENT', `listener ${l.proto}/${l.port}`);
  if (l.proto === 'udp') clearAnswerer(ns, l.port);
}

/** A UDP listener that answers every datagram with what `answer` returns (a server's socket). */
export function answerUdp(w: WorldState, nsName: string, l: { port: number; ip?: string }, answer: UdpAnswer): void {
  listen(w, nsName, { proto: 'udp', ...l });
  setAnswerer(nsByName(w, nsName), l.port, answer);
}

export function hasListener(
  ns: Ns,
  proto: 'tcp' | 'udp',
  port: number,
  dst: Uint8Array,
  off: number,
  family: Family,
): boolean {
  for (const l of ns.listeners) {
    if (l.proto !== proto || l.port !== port) continue;
    if (l.ip === undefined) return true;
    const ip = mustParseIp(l.ip);
    if (ip.family === family && bytesEqual(ip.bytes, 0, dst, off, ip.bytes.length)) return true;
  }
  return false;
}

/** A UDP datagram for this namespace: a VXLAN device's socket, a listener, or port unreachable. */
export function udpRcv(
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
  const dport = p.readUInt16BE(l4 + 2);
  const socks = ns.vxSock.get(dport);
  if (socks?.length && vxlanRcv(w, ns, socks, p, family, l4, end)) return;
  if (clientRcv(w, ns, l, p, family, l4, end)) return;
  if (hasListener(ns, 'udp', dport, p, dOff, family)) {
    if (w.udpProbe && !w.udpProbe.delivered) {
      w.udpProbe.delivered = {
        ns: ns.name,
        from: formatIpBytes(p, sOff, family),
        sport: p.readUInt16BE(l4),
      };
    }
    if (w.tr) rec(w, 'local', ns, l, `UDP datagram for a listener on port ${dport}`);
    answerRcv(w, ns, l, p, family, l4, end);
    return;
  }
  rec(w, 'drop', ns, l, `udp port ${dport}`, p, family, 'port unreachable');
  icmpErrorTo(w, ns, p, family, 'port-unreachable');
}

export function tcpRcv(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, l4: number): void {
  const flags = p[l4 + 13]!;
  const sOff = ipSrcOffset(family);
  const dOff = ipDstOffset(family);
  const sport = p.readUInt16BE(l4);
  const dport = p.readUInt16BE(l4 + 2);
  const seq = p.readUInt32BE(l4 + 4);
  const alen = family === 4 ? 4 : 16;
  const src = Uint8Array.from(p.subarray(dOff, dOff + alen));
  const dst = Uint8Array.from(p.subarray(sOff, sOff + alen));
  const build = (seg: Buffer) =>
    family === 4
      ? ipv4Packet({ src, dst, proto: IPPROTO_TCP, ttl: 64 }, seg)
      : ipv6Packet({ src, dst, nextHeader: IPPROTO_TCP, hopLimit: 64 }, seg);
  // Client side: our connect() gets its answer.
  const key = `${ns.name}|${formatIpBytes(p, dOff, family)}|${dport}|${formatIpBytes(p, sOff, family)}|${sport}`;
  const s = w.tcps.get(key);
  if (s && s.state === 'syn-sent') {
    if ((flags & (TCP_SYN | TCP_ACK)) === (TCP_SYN | TCP_ACK)) {
      s.state = 'established';
      const ack = build(
        tcpSegment({ sport: dport, dport: sport, seq: s.seq + 1, ack: seq + 1, flags: TCP_ACK }),
      );
      if (w.tr) rec(w, 'reply', ns, l, 'TCP connection established, ACK', ack, family);
      ipLocalOut(w, ns, ack, family, l);
    } else if (flags & TCP_RST) s.state = 'refused';
    return;
  }
  if ((flags & (TCP_SYN | TCP_ACK)) === TCP_SYN) {
    if (hasListener(ns, 'tcp', dport, p, dOff, family)) {
      // Deterministic initial sequence number derived from the 4-tuple.
      let h = 2166136261;
      for (const b of key) h = Math.imul(h ^ b.charCodeAt(0), 16777619);
      const synack = build(
        tcpSegment({
          sport: dport,
          dport: sport,
          seq: h >>> 0,
          ack: seq + 1,
          flags: TCP_SYN | TCP_ACK,
          mss: 1460,
        }),
      );
      if (w.tr) rec(w, 'reply', ns, l, `SYN-ACK from listener on port ${dport}`, synack, family);
      ipLocalOut(w, ns, synack, family, l);
    } else {
      const rst = build(
        tcpSegment({
          sport: dport,
          dport: sport,
          seq: 0,
          ack: seq + 1,
          flags: TCP_RST | TCP_ACK,
          window: 0,
        }),
      );
      if (w.tr) rec(w, 'reply', ns, l, `RST: nothing listens on port ${dport}`, rst, family);
      ipLocalOut(w, ns, rst, family, l);
    }
    return;
  }
  if (flags & TCP_ACK && w.tr) rec(w, 'local', ns, l, `TCP ACK on port ${dport}: connection accepted`);
}

export function pickSource(
  w: WorldState,
  ns: Ns,
  dst: IpAddr,
  srcStr: string | undefined,
): { src: IpAddr } | { error: { code: string; message: string } } {
  if (srcStr !== undefined) {
    const s = mustParseIp(srcStr, 'source');
    if (s.family !== dst.family)
      throw new NetsimError('EINVAL', `source ${srcStr} and destination differ in family`);
    if (!ns.local.has(ipKey(s)))
      return { error: { code: 'EADDRNOTAVAIL', message: `bind: Cannot assign requested address` } };
    return { src: s };
  }
  const r = resolveRoute(w, ns, dst.bytes, 0, dst.family);
  if (!r) return { error: { code: 'ENETUNREACH', message: 'connect: Network is unreachable' } };
  if (r.type !== 'unicast' && r.type !== 'local') {
    const m: Record<string, [string, string]> = {
      blackhole: ['EINVAL', 'connect: Invalid argument'],
      prohibit: ['EACCES', 'connect: Permission denied'],
      unreachable: ['EHOSTUNREACH', 'connect: No route to host'],
    };
    const [code, message] = m[r.type]!;
    return { error: { code, message } };
  }
  const s = selectSource(ns, r, dst.bytes, 0, dst.family);
  if (!s) return { error: { code: 'EADDRNOTAVAIL', message: 'connect: Cannot assign requested address' } };
  return { src: s };
}

export function ping(w: WorldState, fromNs: string, to: string, opts: PingOptions = {}): PingResult {
  const ns = nsByName(w, fromNs);
  const dst = mustParseIp(to, 'destination');
  const count = opts.count ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > 65535)
    throw new NetsimError('EINVAL', `bad count ${count}`);
  const size = opts.size ?? 56;
  if (!Number.isInteger(size) || size < 0 || size > 65000)
    throw new NetsimError('EINVAL', `bad packet size ${size}`);
  const ttl = opts.ttl ?? 64;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > 255) throw new NetsimError('EINVAL', `bad ttl ${ttl}`);
  const trace: Trace = [];
  w.tr = opts.trace === false ? null : trace;
  ns.echoId = (ns.echoId + 1) & 0xffff;
  const id = ns.echoId;
  const session: PingSession = { replies: [], errors: [] };
  const key = `${ns.name}|${id}`;
  w.pings.set(key, session);
  const result: PingResult = {
    reachable: false,
    transmitted: 0,
    received: 0,
    replies: [],
    errors: [],
    trace,
  };
  try {
    const data = echoPayload(size);
    for (let seq = 1; seq <= count; seq++) {
      if (seq > 1) advance(w, 1000);
      const s = pickSource(w, ns, dst, opts.src);
      if ('error' in s) {
        result.error = s.error;
        if (w.tr)
          trace.push({
            seq: trace.length + 1,
            timeUs: w.clockUs,
            ns: ns.name,
            dev: null,
            kind: 'drop',
            detail: `ping ${to}`,
            reason: s.error.message,
          });
        break;
      }
      const icmp = icmpEcho(dst.family === 4 ? 8 : 128, id, seq, data);
      const p =
        dst.family === 4
          ? ipv4Packet({ src: s.src.bytes, dst: dst.bytes, proto: IPPROTO_ICMP, ttl, id: seq }, icmp)
          : ipv6Packet({ src: s.src.bytes, dst: dst.bytes, nextHeader: IPPROTO_ICMPV6, hopLimit: ttl }, icmp);
      result.transmitted++;
      const err = ipLocalOut(w, ns, p, dst.family);
      run(w);
      if (err) {
        result.error = { code: err, message: errText(err) };
        break;
      }
    }
  } finally {
    w.tr = null;
    w.pings.delete(key);
  }
  result.replies = session.replies;
  result.errors = session.errors;
  result.received = new Set(session.replies.map((r) => r.seq)).size;
  result.reachable = result.received > 0;
  return result;
}

export function udpSend(
  w: WorldState,
  fromNs: string,
  to: string,
  port: number,
  payload: Uint8Array = new Uint8Array(0),
  opts: SendOptions = {},
): UdpSendResult {
  return sendDatagram(w, fromNs, to, port, payload, opts, false);
}

/**
 * One datagram from a connected UDP socket and the one reply it takes (a stub resolver's query): the reply
 * counts only when it comes back from the address and port the request went to.
 */
export function udpExchange(
  w: WorldState,
  fromNs: string,
  to: string,
  port: number,
  payload: Uint8Array,
  opts: SendOptions = {},
): UdpExchangeResult {
  return sendDatagram(w, fromNs, to, port, payload, opts, true);
}

function sendDatagram(
  w: WorldState,
  fromNs: string,
  to: string,
  port: number,
  payload: Uint8Array,
  opts: SendOptions,
  awaitReply: boolean,
): UdpExchangeResult {
  const ns = nsByName(w, fromNs);
  const dst = mustParseIp(to, 'destination');
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new NetsimError('EINVAL', `bad port ${port}`);
  if (!(payload instanceof Uint8Array) || payload.length > 65000)
    throw new NetsimError('EINVAL', 'bad UDP payload');
  const trace: Trace = [];
  w.tr = opts.trace === false ? null : trace;
  const probe: UdpProbe = {};
  w.udpProbe = probe;
  try {
    const s = pickSource(w, ns, dst, opts.src);
    if ('error' in s)
      return {
        delivered: null,
        local: null,
        error: { code: s.error.code, message: s.error.message.replace('connect: ', 'sendto: ') },
        trace,
      };
    const sport = ns.nextEphemeral;
    ns.nextEphemeral = ns.nextEphemeral >= 60999 ? 32768 : ns.nextEphemeral + 1;
    const udp = udpDatagram(sport, port, payload);
    const p =
      dst.family === 4
        ? ipv4Packet({ src: s.src.bytes, dst: dst.bytes, proto: IPPROTO_UDP, ttl: 64 }, udp)
        : ipv6Packet({ src: s.src.bytes, dst: dst.bytes, nextHeader: IPPROTO_UDP, hopLimit: 64 }, udp);
    const sock = { ns, local: s.src, localPort: sport, remote: dst, remotePort: port } as Parameters<typeof openClient>[1];
    if (awaitReply) openClient(w, sock);
    const err = ipLocalOut(w, ns, p, dst.family);
    run(w);
    const local = { ip: formatIpAddr(s.src), port: sport };
    if (err)
      return {
        delivered: null,
        local,
        error: { code: err, message: errText(err).replace('connect: ', 'sendto: ') },
        trace,
      };
    const out: UdpExchangeResult = { delivered: probe.delivered?.ns ?? null, local, trace };
    if (probe.error) out.icmpError = probe.error;
    if (sock.reply) out.reply = sock.reply;
    return out;
  } finally {
    w.tr = null;
    w.udpProbe = null;
    if (awaitReply) closeClient(w);
  }
}

export function tcpConnect(
  w: WorldState,
  fromNs: string,
  to: string,
  port: number,
  opts: SendOptions = {},
): TcpConnectResult {
  const ns = nsByName(w, fromNs);
  const dst = mustParseIp(to, 'destination');
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new NetsimError('EINVAL', `bad port ${port}`);
  const trace: Trace = [];
  w.tr = opts.trace === false ? null : trace;
  const remote = { ip: formatIpAddr(dst), port };
  try {
    const s = pickSource(w, ns, dst, opts.src);
    if ('error' in s) {
      return {
        state: s.error.code === 'ENETUNREACH' || s.error.code === 'EHOSTUNREACH' ? 'unreachable' : 'error',
        local: null,
        remote,
        error: s.error,
        trace,
      };
    }
    const sport = ns.nextEphemeral;
    ns.nextEphemeral = ns.nextEphemeral >= 60999 ? 32768 : ns.nextEphemeral + 1;
    const local = { ip: formatIpAddr(s.src), port: sport };
    const key = `${ns.name}|${local.ip}|${sport}|${remote.ip}|${port}`;
    let h = 2166136261;
    for (const c of key) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
    const isn = h >>> 0;
    const session: TcpSession = { state: 'syn-sent', seq: isn };
    w.tcps.set(key, session);
    try {
      const seg = tcpSegment({ sport, dport: port, seq: isn, ack: 0, flags: TCP_SYN, mss: 1460 });
      const p =
        dst.family === 4
          ? ipv4Packet({ src: s.src.bytes, dst: dst.bytes, proto: IPPROTO_TCP, ttl: 64 }, seg)
          : ipv6Packet({ src: s.src.bytes, dst: dst.bytes, nextHeader: IPPROTO_TCP, hopLimit: 64 }, seg);
      const err = ipLocalOut(w, ns, p, dst.family);
      run(w);
      if (err)
        return { state: 'unreachable', local, remote, error: { code: err, message: errText(err) }, trace };
      const st = session.state === 'syn-sent' ? 'timeout' : session.state;
      const out: TcpConnectResult = { state: st, local, remote, trace };
      if (st === 'refused') out.error = { code: 'ECONNREFUSED', message: 'connect: Connection refused' };
      if (st === 'timeout') out.error = { code: 'ETIMEDOUT', message: 'connect: Connection timed out' };
      if (st === 'unreachable') out.error = { code: 'EHOSTUNREACH', message: 'connect: No route to host' };
      return out;
    } finally {
      w.tcps.delete(key);
    }
  } finally {
    w.tr = null;
  }
}

const payloads = new Map<number, Buffer>();
/** ping(8)'s payload pattern; shared per size since packets copy it. */
function echoPayload(size: number): Buffer {
  let b = payloads.get(size);
  if (!b) {
    b = Buffer.alloc(size);
    for (let i = 0; i < size; i++) b[i] = (i + 0x10) & 0xff;
    if (payloads.size < 16) payloads.set(size, b);
  }
  return b;
}

function errText(code: string): string {
  const m: Record<string, string> = {
    ENETUNREACH: 'connect: Network is unreachable',
    EHOSTUNREACH: 'connect: No route to host',
    EINVAL: 'connect: Invalid argument',
    EACCES: 'connect: Permission denied',
  };
  return m[code] ?? code;
}
