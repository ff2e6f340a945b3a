// UDP request and answer: a listener that answers each datagram it receives with one of its own (a DNS
// server's socket), and the client side, a connected UDP socket that takes the one reply from the address
// it sent to. Answerers are code, so they live beside the world rather than in it: a saved and reloaded
// world keeps the listener, which then receives without answering.
import { bytesEqual, type Family, formatIpBytes, type IpAddr } from '@kemu/ip';
import { ipDstOffset, IPPROTO_UDP, ipSrcOffset, ipv4Packet, ipv6Packet, udpDatagram } from './packet.js';
import { rec } from './world-capture.js';
import { ipLocalOut } from './world-ip.js';
import type { Link, Ns } from './world-model.js';
import type { WorldState } from './world-state.js';

/** The answer to one datagram, or undefined for none (a server that drops it). */
export type UdpAnswer = (payload: Buffer, from: { ip: string; port: number }) => Uint8Array | undefined;

/** The largest answer sent (an IPv4 datagram's payload limit, less headers). */
const MAX_ANSWER = 65_000;

const answerers = new WeakMap<Ns, Map<number, UdpAnswer>>();

export function setAnswerer(ns: Ns, port: number, answer: UdpAnswer): void {
  let m = answerers.get(ns);
  if (!m) answerers.set(ns, (m = new Map()));
  m.set(port, answer);
}

export function clearAnswerer(ns: Ns, port: number): void {
  answerers.get(ns)?.delete(port);
}

/** The socket a request waits on: bound to the local port, connected to the address it sent to. */
export interface ClientSocket {
  ns: Ns;
  local: IpAddr;
  localPort: number;
  remote: IpAddr;
  remotePort: number;
  reply?: { from: { ip: string; port: number }; payload: Buffer };
}

const clients = new WeakMap<WorldState, ClientSocket>();

export function openClient(w: WorldState, s: ClientSocket): void {
  clients.set(w, s);
}

export function closeClient(w: WorldState): void {
  clients.delete(w);
}

/**
 * A datagram for the waiting client socket: taken when it comes from the address the request went to, as
 * a connected socket only accepts its peer's datagrams (a reply whose NAT was not reversed is not one).
 */
export function clientRcv(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, l4: number, end: number): boolean {
  const s = clients.get(w);
  if (!s || s.ns !== ns || s.reply || s.remote.family !== family) return false;
  const sOff = ipSrcOffset(family);
  const dOff = ipDstOffset(family);
  if (p.readUInt16BE(l4 + 2) !== s.localPort || p.readUInt16BE(l4) !== s.remotePort) return false;
  if (!bytesEqual(s.remote.bytes, 0, p, sOff, s.remote.bytes.length)) return false;
  if (!bytesEqual(s.local.bytes, 0, p, dOff, s.local.bytes.length)) return false;
  const payload = Buffer.from(p.subarray(l4 + 8, Math.min(end, l4 + p.readUInt16BE(l4 + 4))));
  s.reply = { from: { ip: formatIpBytes(p, sOff, family), port: s.remotePort }, payload };
  if (w.tr) rec(w, 'local', ns, l, `UDP reply of ${payload.length} bytes from ${s.reply.from.ip}:${s.remotePort} for the socket on port ${s.localPort}`);
  return true;
}

/** Answers a datagram a listener received, when its socket has an answerer; the answer leaves as a reply. */
export function answerRcv(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, l4: number, end: number): void {
  const dport = p.readUInt16BE(l4 + 2);
  const answer = answerers.get(ns)?.get(dport);
  if (!answer) return;
  const sOff = ipSrcOffset(family);
  const dOff = ipDstOffset(family);
  const sport = p.readUInt16BE(l4);
  const payload = Buffer.from(p.subarray(l4 + 8, Math.min(end, l4 + p.readUInt16BE(l4 + 4))));
  let out: Uint8Array | undefined;
  try {
    out = answer(payload, { ip: formatIpBytes(p, sOff, family), port: sport });
  } catch (err) {
    rec(w, 'drop', ns, l, `UDP datagram for the listener on port ${dport}`, p, family, `the server failed: ${(err as Error).message}`);
    return;
  }
  if (!out) return;
  if (out.length > MAX_ANSWER) {
    rec(w, 'drop', ns, l, `UDP answer on port ${dport}`, p, family, `answer of ${out.length} bytes is too long`);
    return;
  }
  const alen = family === 4 ? 4 : 16;
  const src = Uint8Array.from(p.subarray(dOff, dOff + alen));
  const dst = Uint8Array.from(p.subarray(sOff, sOff + alen));
  const udp = udpDatagram(dport, sport, out);
  const reply =
    family === 4
      ? ipv4Packet({ src, dst, proto: IPPROTO_UDP, ttl: 64 }, udp)
      : ipv6Packet({ src, dst, nextHeader: IPPROTO_UDP, hopLimit: 64 }, udp);
  if (w.tr) rec(w, 'reply', ns, l, `UDP answer of ${out.length} bytes from the listener on port ${dport}`, reply, family);
  ipLocalOut(w, ns, reply, family, l);
}
