// IP and MAC address parsing/formatting. Addresses travel as bytes inside packets; the model keys
// tables on cheap values (a uint32 for IPv4, a hex string for IPv6) to keep the hot path allocation-light.
import { NetsimError } from './errors.js';

export type Family = 4 | 6;

export interface IpAddr {
  family: Family;
  bytes: Uint8Array;
}

export interface Prefix {
  family: Family;
  /** Network address (host bits cleared). */
  bytes: Uint8Array;
  len: number;
}

export function parseIPv4(s: string): Uint8Array | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^\d{1,3}$/.test(p) || (p.length > 1 && p[0] === '0')) return null;
    const n = Number(p);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

export function parseIPv6(s: string): Uint8Array | null {
  if (s.includes('%')) return null;
  let tail4: Uint8Array | null = null;
  let str = s;
  const lastColon = str.lastIndexOf(':');
  if (lastColon >= 0 && str.slice(lastColon + 1).includes('.')) {
    tail4 = parseIPv4(str.slice(lastColon + 1));
    if (!tail4) return null;
    str = `${str.slice(0, lastColon + 1)}0:0`;
  }
  const halves = str.split('::');
  if (halves.length > 2) return null;
  const parseGroups = (h: string): number[] | null => {
    if (h === '') return [];
    const gs = h.split(':');
    const out: number[] = [];
    for (const g of gs) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(Number.parseInt(g, 16));
    }
    return out;
  };
  const head = parseGroups(halves[0]!);
  const tail = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (!head || !tail) return null;
  let groups: number[];
  if (halves.length === 2) {
    const fill = 8 - head.length - tail.length;
    if (fill < 1) return null;
    groups = [...head, ...new Array<number>(fill).fill(0), ...tail];
  } else {
    if (head.length !== 8) return null;
    groups = head;
  }
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[i * 2] = groups[i]! >> 8;
    out[i * 2 + 1] = groups[i]! & 0xff;
  }
  if (tail4) out.set(tail4, 12);
  return out;
}

export function parseIp(s: string): IpAddr | null {
  const v4 = parseIPv4(s);
  if (v4) return { family: 4, bytes: v4 };
  const v6 = parseIPv6(s);
  if (v6) return { family: 6, bytes: v6 };
  return null;
}

/** Parses an address or throws EINVAL with the same wording iproute2 uses. */
export function mustParseIp(s: string, what = 'address'): IpAddr {
  const ip = typeof s === 'string' ? parseIp(s) : null;
  if (!ip) throw new NetsimError('EINVAL', `invalid ${what} "${String(s)}"`);
  return ip;
}

export function formatIPv4(b: Uint8Array, off = 0): string {
  return `${b[off]}.${b[off + 1]}.${b[off + 2]}.${b[off + 3]}`;
}

/** RFC 5952 canonical text form. */
export function formatIPv6(b: Uint8Array, off = 0): string {
  const g: number[] = [];
  for (let i = 0; i < 8; i++) g.push((b[off + i * 2]! << 8) | b[off + i * 2 + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  // IPv4-mapped addresses keep the dotted tail, as the kernel tools print them.
  if (bestStart === 0 && bestLen === 5 && g[5] === 0xffff) return `::ffff:${formatIPv4(b, off + 12)}`;
  const hex = g.map((x) => x.toString(16));
  if (bestStart < 0) return hex.join(':');
  const left = hex.slice(0, bestStart).join(':');
  const right = hex.slice(bestStart + bestLen).join(':');
  return `${left}::${right}`;
}

export function formatIp(ip: IpAddr): string {
  return ip.family === 4 ? formatIPv4(ip.bytes) : formatIPv6(ip.bytes);
}

export function formatIpBytes(b: Uint8Array, off: number, family: Family): string {
  return family === 4 ? formatIPv4(b, off) : formatIPv6(b, off);
}

/** Table key for an address inside a buffer: uint32 for IPv4, hex for IPv6. */
export type IpKey = number | string;

export function ipKeyAt(b: Uint8Array, off: number, family: Family): IpKey {
  if (family === 4) return ((b[off]! << 24) | (b[off + 1]! << 16) | (b[off + 2]! << 8) | b[off + 3]!) >>> 0;
  return Buffer.from(b.buffer, b.byteOffset + off, 16).toString('hex');
}

export function ipKey(ip: IpAddr): IpKey {
  return ipKeyAt(ip.bytes, 0, ip.family);
}

export function ipKeyToIp(k: IpKey): IpAddr {
  if (typeof k === 'number') {
    return { family: 4, bytes: Uint8Array.of(k >>> 24, (k >>> 16) & 255, (k >>> 8) & 255, k & 255) };
  }
  return { family: 6, bytes: new Uint8Array(Buffer.from(k, 'hex')) };
}

export function maskBytes(bytes: Uint8Array, len: number): Uint8Array {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const bits = Math.max(0, Math.min(8, len - i * 8));
    out[i] = bytes[i]! & ((0xff << (8 - bits)) & 0xff);
  }
  return out;
}

/** Parses "a.b.c.d/len", "x::/len", a bare address (full-length prefix) or "default". */
export function parseCidr(s: string, familyHint?: Family): { ip: IpAddr; len: number } {
  if (typeof s !== 'string') throw new NetsimError('EINVAL', `invalid prefix "${String(s)}"`);
  if (s === 'default') {
    const family = familyHint ?? 4;
    return { ip: { family, bytes: new Uint8Array(family === 4 ? 4 : 16) }, len: 0 };
  }
  const slash = s.indexOf('/');
  const ip = mustParseIp(slash >= 0 ? s.slice(0, slash) : s, 'prefix');
  const max = ip.family === 4 ? 32 : 128;
  let len = max;
  if (slash >= 0) {
    const l = s.slice(slash + 1);
    if (!/^\d{1,3}$/.test(l) || Number(l) > max)
      throw new NetsimError('EINVAL', `invalid prefix length in "${s}"`);
    len = Number(l);
  }
  return { ip, len };
}

export function toPrefix(ip: IpAddr, len: number): Prefix {
  return { family: ip.family, bytes: maskBytes(ip.bytes, len), len };
}

export function formatPrefix(p: Prefix): string {
  if (p.len === 0) return 'default';
  const max = p.family === 4 ? 32 : 128;
  const a = formatIpBytes(p.bytes, 0, p.family);
  return p.len === max ? a : `${a}/${p.len}`;
}

export function prefixContains(p: Prefix, b: Uint8Array, off: number): boolean {
  const full = p.len >> 3;
  for (let i = 0; i < full; i++) if (p.bytes[i] !== b[off + i]) return false;
  const rem = p.len & 7;
  if (rem === 0) return true;
  const m = (0xff << (8 - rem)) & 0xff;
  return (b[off + full]! & m) === p.bytes[full];
}

export function prefixEquals(a: Prefix, b: Prefix): boolean {
  if (a.family !== b.family || a.len !== b.len) return false;
  for (let i = 0; i < a.bytes.length; i++) if (a.bytes[i] !== b.bytes[i]) return false;
  return true;
}

export function bytesEqual(a: Uint8Array, ao: number, b: Uint8Array, bo: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (a[ao + i] !== b[bo + i]) return false;
  return true;
}

// ---- MAC addresses ----

export function parseMac(s: string): Uint8Array | null {
  if (typeof s !== 'string') return null;
  const m =
    /^([0-9a-fA-F]{2})[:-]([0-9a-fA-F]{2})[:-]([0-9a-fA-F]{2})[:-]([0-9a-fA-F]{2})[:-]([0-9a-fA-F]{2})[:-]([0-9a-fA-F]{2})$/.exec(
      s,
    );
  if (!m) return null;
  return Uint8Array.from(m.slice(1).map((x) => Number.parseInt(x, 16)));
}

export function mustParseMac(s: string): Uint8Array {
  const m = parseMac(s);
  if (!m) throw new NetsimError('EINVAL', `invalid link-layer address "${String(s)}"`);
  return m;
}

export function formatMac(b: Uint8Array, off = 0): string {
  let s = '';
  for (let i = 0; i < 6; i++) {
    const h = b[off + i]!.toString(16);
    s += (i ? ':' : '') + (h.length === 1 ? `0${h}` : h);
  }
  return s;
}

/** 48-bit MAC as a number: exact in a double, cheap as a Map key. */
export function macKeyAt(b: Uint8Array, off: number): number {
  return (b[off]! * 0x10000000000 +
    b[off + 1]! * 0x100000000 +
    ((b[off + 2]! << 24) >>> 0) +
    (b[off + 3]! << 16) +
    (b[off + 4]! << 8) +
    b[off + 5]!) as number;
}

export function macKeyToBytes(k: number): Uint8Array {
  const out = new Uint8Array(6);
  let v = k;
  for (let i = 5; i >= 0; i--) {
    out[i] = v % 256;
    v = Math.floor(v / 256);
  }
  return out;
}

export const BROADCAST_MAC = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
export const ZERO_MAC = new Uint8Array(6);

export function isMulticastMac(b: Uint8Array, off = 0): boolean {
  return (b[off]! & 1) === 1;
}

/** Modified EUI-64 interface identifier, as the kernel derives IPv6 link-local addresses. */
export function linkLocalFromMac(mac: Uint8Array): Uint8Array {
  const out = new Uint8Array(16);
  out[0] = 0xfe;
  out[1] = 0x80;
  out[8] = mac[0]! ^ 0x02;
  out[9] = mac[1]!;
  out[10] = mac[2]!;
  out[11] = 0xff;
  out[12] = 0xfe;
  out[13] = mac[3]!;
  out[14] = mac[4]!;
  out[15] = mac[5]!;
  return out;
}

export function solicitedNodeAddr(target: Uint8Array, off = 0): Uint8Array {
  const out = new Uint8Array(16);
  out[0] = 0xff;
  out[1] = 0x02;
  out[11] = 0x01;
  out[12] = 0xff;
  out[13] = target[off + 13]!;
  out[14] = target[off + 14]!;
  out[15] = target[off + 15]!;
  return out;
}

export function multicastMacForIPv6(addr: Uint8Array, off = 0): Uint8Array {
  return Uint8Array.of(0x33, 0x33, addr[off + 12]!, addr[off + 13]!, addr[off + 14]!, addr[off + 15]!);
}

export function isLinkLocalV6(b: Uint8Array, off = 0): boolean {
  return b[off] === 0xfe && (b[off + 1]! & 0xc0) === 0x80;
}
