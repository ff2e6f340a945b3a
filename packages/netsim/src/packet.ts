// Wire formats as bytes: Ethernet II, ARP (RFC 826), IPv4 (RFC 791), IPv6 (RFC 8200), ICMP (RFC 792),
// ICMPv6 echo + neighbour discovery (RFC 4443, RFC 4861), UDP (RFC 768), TCP (RFC 9293) and VXLAN
// (RFC 7348). Builders produce complete, checksummed packets; `decodeFrame` reads them back.
import { type Family, formatIpBytes } from '@kemu/ip';
import { formatMac } from './addr.js';

export const ETH_P_IP = 0x0800;
export const ETH_P_ARP = 0x0806;
export const ETH_P_IPV6 = 0x86dd;
export const IPPROTO_ICMP = 1;
export const IPPROTO_TCP = 6;
export const IPPROTO_UDP = 17;
export const IPPROTO_ICMPV6 = 58;
export const VXLAN_PORT = 4789;

/** Where an IP header carries its source address: byte 12 of IPv4's, byte 8 of IPv6's. */
export const ipSrcOffset = (family: Family): number => (family === 4 ? 12 : 8);
/** Where an IP header carries its destination address: byte 16 of IPv4's, byte 24 of IPv6's. */
export const ipDstOffset = (family: Family): number => (family === 4 ? 16 : 24);

export const TCP_FIN = 0x01;
export const TCP_SYN = 0x02;
export const TCP_RST = 0x04;
export const TCP_PSH = 0x08;
export const TCP_ACK = 0x10;

export function ethFrame(dst: Uint8Array, src: Uint8Array, type: number, payload: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(14 + payload.length);
  b.set(dst, 0);
  b.set(src, 6);
  b.writeUInt16BE(type, 12);
  b.set(payload, 14);
  return b;
}

export function arpPacket(
  op: 1 | 2,
  sha: Uint8Array,
  spa: Uint8Array,
  tha: Uint8Array,
  tpa: Uint8Array,
): Buffer {
  const b = Buffer.alloc(28);
  b.writeUInt16BE(1, 0); // Ethernet
  b.writeUInt16BE(ETH_P_IP, 2);
  b[4] = 6;
  b[5] = 4;
  b.writeUInt16BE(op, 6);
  b.set(sha, 8);
  b.set(spa, 14);
  b.set(tha, 18);
  b.set(tpa, 24);
  return b;
}

/** One's-complement sum of 16-bit words, unfolded. */
function sum16(b: Uint8Array, off: number, len: number, acc = 0): number {
  let s = acc;
  const end = off + len - 1;
  let i = off;
  for (; i < end; i += 2) s += (b[i]! << 8) | b[i + 1]!;
  if (i === end) s += b[i]! << 8;
  return s;
}

function fold(s: number): number {
  let x = s;
  while (x > 0xffff) x = (x & 0xffff) + (x >>> 16);
  return ~x & 0xffff;
}

export function inetChecksum(b: Uint8Array, off = 0, len = b.length - off): number {
  return fold(sum16(b, off, len));
}

/** Pseudo-header sum for TCP/UDP/ICMPv6 over IPv4 or IPv6. */
function pseudoSum(family: Family, ip: Uint8Array, ipOff: number, proto: number, l4len: number): number {
  let s = 0;
  if (family === 4) {
    s = sum16(ip, ipOff + 12, 8);
  } else {
    s = sum16(ip, ipOff + 8, 32);
  }
  return s + proto + (l4len >>> 16) + (l4len & 0xffff);
}

export interface Ipv4Fields {
  src: Uint8Array;
  dst: Uint8Array;
  proto: number;
  ttl?: number;
  id?: number;
  df?: boolean;
  tos?: number;
}

export function ipv4Packet(f: Ipv4Fields, l4: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(20 + l4.length);
  b[0] = 0x45;
  b[1] = f.tos ?? 0;
  b.writeUInt16BE(20 + l4.length, 2);
  b.writeUInt16BE(f.id ?? 0, 4);
  b.writeUInt16BE(f.df === false ? 0 : 0x4000, 6);
  b[8] = f.ttl ?? 64;
  b[9] = f.proto;
  b.writeUInt16BE(0, 10);
  b.set(f.src, 12);
  b.set(f.dst, 16);
  b.writeUInt16BE(inetChecksum(b, 0, 20), 10);
  b.set(l4, 20);
  finishL4Checksum(b, 4, 0);
  return b;
}

export interface Ipv6Fields {
  src: Uint8Array;
  dst: Uint8Array;
  nextHeader: number;
  hopLimit?: number;
  flowLabel?: number;
}

export function ipv6Packet(f: Ipv6Fields, l4: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(40 + l4.length);
  b.writeUInt32BE((0x60000000 | ((f.flowLabel ?? 0) & 0xfffff)) >>> 0, 0);
  b.writeUInt16BE(l4.length, 4);
  b[6] = f.nextHeader;
  b[7] = f.hopLimit ?? 64;
  b.set(f.src, 8);
  b.set(f.dst, 24);
  b.set(l4, 40);
  finishL4Checksum(b, 6, 0);
  return b;
}

/**
 * (Re)computes the checksums of an IP packet in place: the IPv4 header checksum and the TCP, UDP,
 * ICMP or ICMPv6 checksum. A zero IPv4 UDP checksum means "none" (VXLAN's default) and stays zero.
 */
export function finishL4Checksum(b: Buffer, family: Family, off: number): void {
  let proto: number;
  let l4off: number;
  let l4len: number;
  if (family === 4) {
    const ihl = (b[off]! & 0x0f) * 4;
    b.writeUInt16BE(0, off + 10);
    b.writeUInt16BE(inetChecksum(b, off, ihl), off + 10);
    proto = b[off + 9]!;
    l4off = off + ihl;
    l4len = b.readUInt16BE(off + 2) - ihl;
  } else {
    proto = b[off + 6]!;
    l4off = off + 40;
    l4len = b.readUInt16BE(off + 4);
  }
  let csOff: number;
  let pseudo = true;
  if (proto === IPPROTO_TCP) csOff = 16;
  else if (proto === IPPROTO_UDP) csOff = 6;
  else if (proto === IPPROTO_ICMP) {
    csOff = 2;
    pseudo = false;
  } else if (proto === IPPROTO_ICMPV6) csOff = 2;
  else return;
  if (l4off + csOff + 2 > b.length) return;
  b.writeUInt16BE(0, l4off + csOff);
  const start = pseudo ? pseudoSum(family, b, off, proto, l4len) : 0;
  let c = fold(sum16(b, l4off, l4len, start));
  if (proto === IPPROTO_UDP && c === 0) c = 0xffff;
  b.writeUInt16BE(c, l4off + csOff);
}

/** Like finishL4Checksum, but leaves an IPv4 UDP checksum of zero alone (RFC 768 "no checksum"). */
export function refreshChecksums(b: Buffer, family: Family, off = 0): void {
  if (family === 4 && b[off + 9] === IPPROTO_UDP) {
    const ihl = (b[off]! & 0x0f) * 4;
    if (b.readUInt16BE(off + ihl + 6) === 0) {
      b.writeUInt16BE(0, off + 10);
      b.writeUInt16BE(inetChecksum(b, off, ihl), off + 10);
      return;
    }
  }
  finishL4Checksum(b, family, off);
}

export function icmpEcho(type: number, id: number, seq: number, data: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(8 + data.length);
  b[0] = type;
  b[1] = 0;
  b.writeUInt16BE(0, 2);
  b.writeUInt16BE(id, 4);
  b.writeUInt16BE(seq, 6);
  b.set(data, 8);
  return b;
}

/** ICMP/ICMPv6 error carrying as much of the offending packet as fits the minimum MTU. */
export function icmpError(type: number, code: number, offending: Uint8Array, family: Family): Buffer {
  const max = family === 4 ? 576 - 20 - 8 : 1280 - 40 - 8;
  const quote = offending.subarray(0, Math.min(offending.length, max));
  const b = Buffer.alloc(8 + quote.length);
  b[0] = type;
  b[1] = code;
  b.set(quote, 8);
  return b;
}

export function udpDatagram(sport: number, dport: number, payload: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(8 + payload.length);
  b.writeUInt16BE(sport, 0);
  b.writeUInt16BE(dport, 2);
  b.writeUInt16BE(8 + payload.length, 4);
  b.writeUInt16BE(0, 6);
  b.set(payload, 8);
  return b;
}

export interface TcpFields {
  sport: number;
  dport: number;
  seq: number;
  ack: number;
  flags: number;
  window?: number;
  mss?: number;
}

export function tcpSegment(f: TcpFields): Buffer {
  const optLen = f.mss ? 4 : 0;
  const b = Buffer.alloc(20 + optLen);
  b.writeUInt16BE(f.sport, 0);
  b.writeUInt16BE(f.dport, 2);
  b.writeUInt32BE(f.seq >>> 0, 4);
  b.writeUInt32BE(f.ack >>> 0, 8);
  b[12] = ((20 + optLen) / 4) << 4;
  b[13] = f.flags;
  b.writeUInt16BE(f.window ?? 64240, 14);
  if (f.mss) {
    b[20] = 2;
    b[21] = 4;
    b.writeUInt16BE(f.mss, 22);
  }
  return b;
}

export function vxlanHeader(vni: number): Buffer {
  const b = Buffer.alloc(8);
  b[0] = 0x08; // I flag: VNI valid
  b[4] = (vni >>> 16) & 0xff;
  b[5] = (vni >>> 8) & 0xff;
  b[6] = vni & 0xff;
  b[7] = 0;
  return b;
}

/** ICMPv6 neighbour solicitation (135) or advertisement (136) body with a link-layer address option. */
export function ndpMessage(
  type: 135 | 136,
  target: Uint8Array,
  lladdr: Uint8Array,
  flags: { solicited?: boolean; override?: boolean; router?: boolean } = {},
): Buffer {
  const b = Buffer.alloc(32);
  b[0] = type;
  b[1] = 0;
  if (type === 136) {
    b[4] = (flags.router ? 0x80 : 0) | (flags.solicited ? 0x40 : 0) | (flags.override ? 0x20 : 0);
  }
  b.set(target, 8);
  b[24] = type === 135 ? 1 : 2; // source / target link-layer address option
  b[25] = 1; // length in units of 8 octets
  b.set(lladdr, 26);
  return b;
}

// ---- decoding ----

export interface DecodedFrame {
  eth: { dst: string; src: string; type: number };
  arp?: { op: number; sha: string; spa: string; tha: string; tpa: string };
  ip?: {
    family: Family;
    src: string;
    dst: string;
    proto: number;
    ttl: number;
    length: number;
    checksumOk: boolean;
  };
  icmp?: { type: number; code: number; id?: number; seq?: number; target?: string; checksumOk: boolean };
  udp?: { sport: number; dport: number; length: number };
  tcp?: { sport: number; dport: number; seq: number; ack: number; flags: number };
  vxlan?: { flags: number; vni: number; inner: DecodedFrame };
  /** Set when the bytes do not parse as what their headers claim. */
  malformed?: string;
}

export function decodeFrame(f: Uint8Array): DecodedFrame {
  const buf = Buffer.from(f.buffer, f.byteOffset, f.byteLength);
  if (buf.length < 14) return { eth: { dst: '', src: '', type: 0 }, malformed: 'short ethernet frame' };
  const out: DecodedFrame = {
    eth: { dst: formatMac(buf, 0), src: formatMac(buf, 6), type: buf.readUInt16BE(12) },
  };
  const type = out.eth.type;
  if (type === ETH_P_ARP) {
    if (buf.length < 42) return { ...out, malformed: 'short ARP packet' };
    out.arp = {
      op: buf.readUInt16BE(20),
      sha: formatMac(buf, 22),
      spa: formatIpBytes(buf, 28, 4),
      tha: formatMac(buf, 32),
      tpa: formatIpBytes(buf, 38, 4),
    };
    return out;
  }
  if (type === ETH_P_IP || type === ETH_P_IPV6) decodeIp(buf, 14, type === ETH_P_IP ? 4 : 6, out);
  return out;
}

function decodeIp(buf: Buffer, off: number, family: Family, out: DecodedFrame): void {
  let proto: number;
  let l4: number;
  let end: number;
  if (family === 4) {
    if (buf.length < off + 20) {
      out.malformed = 'short IPv4 header';
      return;
    }
    const ihl = (buf[off]! & 0xf) * 4;
    const total = buf.readUInt16BE(off + 2);
    proto = buf[off + 9]!;
    l4 = off + ihl;
    end = off + total;
    out.ip = {
      family,
      src: formatIpBytes(buf, off + 12, 4),
      dst: formatIpBytes(buf, off + 16, 4),
      proto,
      ttl: buf[off + 8]!,
      length: total,
      checksumOk: inetChecksum(buf, off, ihl) === 0,
    };
  } else {
    if (buf.length < off + 40) {
      out.malformed = 'short IPv6 header';
      return;
    }
    proto = buf[off + 6]!;
    l4 = off + 40;
    end = l4 + buf.readUInt16BE(off + 4);
    out.ip = {
      family,
      src: formatIpBytes(buf, off + 8, 6),
      dst: formatIpBytes(buf, off + 24, 6),
      proto,
      ttl: buf[off + 7]!,
      length: end - off,
      checksumOk: true,
    };
  }
  if (end > buf.length) {
    out.malformed = 'IP length exceeds frame';
    return;
  }
  const l4len = end - l4;
  const pseudoOk = () => fold(sum16(buf, l4, l4len, pseudoSum(family, buf, off, proto, l4len))) === 0;
  if (proto === IPPROTO_ICMP || proto === IPPROTO_ICMPV6) {
    const ok = proto === IPPROTO_ICMP ? inetChecksum(buf, l4, l4len) === 0 : pseudoOk();
    const t = buf[l4]!;
    out.icmp = { type: t, code: buf[l4 + 1]!, checksumOk: ok };
    if (t === 8 || t === 0 || t === 128 || t === 129) {
      out.icmp.id = buf.readUInt16BE(l4 + 4);
      out.icmp.seq = buf.readUInt16BE(l4 + 6);
    }
    if ((t === 135 || t === 136) && proto === IPPROTO_ICMPV6) out.icmp.target = formatIpBytes(buf, l4 + 8, 6);
  } else if (proto === IPPROTO_UDP) {
    out.udp = {
      sport: buf.readUInt16BE(l4),
      dport: buf.readUInt16BE(l4 + 2),
      length: buf.readUInt16BE(l4 + 4),
    };
    if (l4len >= 16 && (buf[l4 + 8]! & 0x08) !== 0 && isVxlanPort(out.udp.dport)) {
      const vni = (buf[l4 + 12]! << 16) | (buf[l4 + 13]! << 8) | buf[l4 + 14]!;
      out.vxlan = { flags: buf[l4 + 8]!, vni, inner: decodeFrame(buf.subarray(l4 + 16, end)) };
    }
  } else if (proto === IPPROTO_TCP) {
    out.tcp = {
      sport: buf.readUInt16BE(l4),
      dport: buf.readUInt16BE(l4 + 2),
      seq: buf.readUInt32BE(l4 + 4),
      ack: buf.readUInt32BE(l4 + 8),
      flags: buf[l4 + 13]!,
    };
  }
}

const vxlanPorts = new Set<number>([VXLAN_PORT, 8472]);
/** Ports decoded as VXLAN by `decodeFrame` (the IANA port, the Linux legacy port, and any configured). */
export function registerVxlanPort(port: number): void {
  vxlanPorts.add(port);
}
function isVxlanPort(p: number): boolean {
  return vxlanPorts.has(p);
}

function tcpFlagText(f: number): string {
  let s = '';
  if (f & TCP_SYN) s += 'S';
  if (f & TCP_FIN) s += 'F';
  if (f & TCP_RST) s += 'R';
  if (f & TCP_PSH) s += 'P';
  if (f & TCP_ACK) s += '.';
  return s || 'none';
}

function icmpText(i: NonNullable<DecodedFrame['icmp']>, v6: boolean): string {
  const t = i.type;
  if (!v6) {
    if (t === 8) return `ICMP echo request, id ${i.id}, seq ${i.seq}`;
    if (t === 0) return `ICMP echo reply, id ${i.id}, seq ${i.seq}`;
    if (t === 3) {
      const names = ['net', 'host', 'protocol', 'port'];
      return `ICMP ${names[i.code] ?? `code ${i.code}`} unreachable`;
    }
    if (t === 11) return 'ICMP time exceeded in-transit';
    return `ICMP type ${t} code ${i.code}`;
  }
  if (t === 128) return `ICMP6 echo request, id ${i.id}, seq ${i.seq}`;
  if (t === 129) return `ICMP6 echo reply, id ${i.id}, seq ${i.seq}`;
  if (t === 135) return `ICMP6 neighbor solicitation, who has ${i.target}`;
  if (t === 136) return `ICMP6 neighbor advertisement, tgt is ${i.target}`;
  if (t === 1) return `ICMP6 destination unreachable code ${i.code}`;
  if (t === 3) return 'ICMP6 time exceeded in-transit';
  return `ICMP6 type ${t} code ${i.code}`;
}

/** One line in the spirit of tcpdump: what a person needs to recognise the packet. */
export function summarizeFrame(f: Uint8Array): string {
  return summarize(decodeFrame(f));
}

export function summarize(d: DecodedFrame): string {
  if (d.malformed && !d.ip && !d.arp) return `malformed: ${d.malformed}`;
  if (d.arp) {
    return d.arp.op === 1
      ? `ARP, Request who-has ${d.arp.tpa} tell ${d.arp.spa}`
      : `ARP, Reply ${d.arp.spa} is-at ${d.arp.sha}`;
  }
  if (d.ip) {
    const ip = d.ip;
    const v = ip.family === 4 ? 'IP' : 'IP6';
    if (d.vxlan) {
      return `${v} ${ip.src}.${d.udp!.sport} > ${ip.dst}.${d.udp!.dport}: VXLAN vni ${d.vxlan.vni} [${d.vxlan.inner.eth.src} > ${d.vxlan.inner.eth.dst} ${summarize(d.vxlan.inner)}]`;
    }
    if (d.icmp) return `${v} ${ip.src} > ${ip.dst}: ${icmpText(d.icmp, ip.family === 6)}, ttl ${ip.ttl}`;
    if (d.udp)
      return `${v} ${ip.src}.${d.udp.sport} > ${ip.dst}.${d.udp.dport}: UDP, length ${d.udp.length - 8}`;
    if (d.tcp) {
      return `${v} ${ip.src}.${d.tcp.sport} > ${ip.dst}.${d.tcp.dport}: Flags [${tcpFlagText(d.tcp.flags)}], seq ${d.tcp.seq}${d.tcp.flags & TCP_ACK ? `, ack ${d.tcp.ack}` : ''}`;
    }
    return `${v} ${ip.src} > ${ip.dst}: proto ${ip.proto}`;
  }
  return `ethertype 0x${d.eth.type.toString(16).padStart(4, '0')}`;
}
