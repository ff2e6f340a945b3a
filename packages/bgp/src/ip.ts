/** Address and prefix helpers working on the wire's byte form. */
import { isIPv4, isIPv6 } from 'node:net';

export type Afi = 4 | 6;

export interface Prefix {
  afi: Afi;
  /** Network address bytes (4 or 16), host bits zero. */
  addr: Uint8Array;
  len: number;
}

export function parseIPv4(s: string): Uint8Array | undefined {
  if (!isIPv4(s)) return undefined;
  return Uint8Array.from(s.split('.').map(Number));
}

export function parseIPv6(s: string): Uint8Array | undefined {
  if (!isIPv6(s)) return undefined;
  let str = s;
  const out = new Uint8Array(16);
  // An embedded dotted quad (::ffff:1.2.3.4) becomes two hextets.
  const m = /(\d+\.\d+\.\d+\.\d+)$/.exec(str);
  if (m) {
    const v4 = parseIPv4(m[1]!)!;
    str = `${str.slice(0, m.index)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const [head, tail] = str.includes('::') ? str.split('::') : [str, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  groups.forEach((g, i) => {
    const v = Number.parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}

export function parseIP(s: string): { afi: Afi; bytes: Uint8Array } | undefined {
  const v4 = parseIPv4(s);
  if (v4) return { afi: 4, bytes: v4 };
  const v6 = parseIPv6(s);
  if (v6) return { afi: 6, bytes: v6 };
  return undefined;
}

const v4Text = new Map<number, string>();

export function formatIPv4(b: Uint8Array, off = 0): string {
  // Memoised by value: routers see the same few thousand next hops and identifiers in every UPDATE,
  // and one shared string per address keeps large RIBs small.
  const n = ((b[off]! << 24) >>> 0) + (b[off + 1]! << 16) + (b[off + 2]! << 8) + b[off + 3]!;
  let t = v4Text.get(n);
  if (t === undefined) {
    t = `${b[off]}.${b[off + 1]}.${b[off + 2]}.${b[off + 3]}`;
    if (v4Text.size < 1_000_000) v4Text.set(n, t);
  }
  return t;
}

/** RFC 5952 text form: lower case, longest zero run (of 2+) compressed. */
export function formatIPv6(b: Uint8Array, off = 0): string {
  const g: number[] = [];
  for (let i = 0; i < 8; i++) g.push((b[off + i * 2]! << 8) | b[off + i * 2 + 1]!);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `::ffff:${b[off + 12]}.${b[off + 13]}.${b[off + 14]}.${b[off + 15]}`;
  }
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

export function formatIP(afi: Afi, b: Uint8Array, off = 0): string {
  return afi === 4 ? formatIPv4(b, off) : formatIPv6(b, off);
}

/** Parses `10.0.0.0/24` or `fd00::/64`; host bits must be zero (a route names a network). */
export function parsePrefix(s: string): Prefix | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIP(s.slice(0, slash));
  const lenStr = s.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(lenStr)) return undefined;
  const len = Number(lenStr);
  if (len > (ip.afi === 4 ? 32 : 128)) return undefined;
  const masked = maskBytes(ip.bytes, len);
  if (!masked.every((v, i) => v === ip.bytes[i])) return undefined;
  return { afi: ip.afi, addr: masked, len };
}

export function maskBytes(b: Uint8Array, len: number): Uint8Array {
  const out = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) {
    const bits = Math.max(0, Math.min(8, len - i * 8));
    out[i] = b[i]! & ((0xff << (8 - bits)) & 0xff);
  }
  return out;
}

export function formatPrefix(p: Prefix): string {
  return `${formatIP(p.afi, p.addr)}/${p.len}`;
}

/** Whether `ip` lies inside `prefix` (same family). */
export function prefixContains(prefix: Prefix, ip: { afi: Afi; bytes: Uint8Array }): boolean {
  if (prefix.afi !== ip.afi) return false;
  const m = maskBytes(ip.bytes, prefix.len);
  return m.every((v, i) => v === prefix.addr[i]);
}

const idCache = new Map<string, number>();

/** Router IDs are dotted quads; returns the 32-bit value. */
export function routerIdToNumber(s: string): number | undefined {
  const hit = idCache.get(s);
  if (hit !== undefined) return hit;
  const b = parseIPv4(s);
  if (!b) return undefined;
  const n = ((b[0]! << 24) >>> 0) + (b[1]! << 16) + (b[2]! << 8) + b[3]!;
  // The decision process compares the same few thousand identifiers over and over.
  if (idCache.size < 100_000) idCache.set(s, n);
  return n;
}

export function numberToRouterId(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
}

/** Compares two addresses as unsigned byte strings (IPv4 sorts before IPv6). */
export function compareAddresses(a: string, b: string): number {
  if (a === b) return 0;
  const na = routerIdToNumber(a);
  const nb = routerIdToNumber(b);
  if (na !== undefined && nb !== undefined) return na - nb;
  const pa = parseIP(a);
  const pb = parseIP(b);
  if (!pa || !pb) return a < b ? -1 : a > b ? 1 : 0;
  if (pa.afi !== pb.afi) return pa.afi - pb.afi;
  for (let i = 0; i < pa.bytes.length; i++) {
    if (pa.bytes[i] !== pb.bytes[i]) return pa.bytes[i]! - pb.bytes[i]!;
  }
  return 0;
}
