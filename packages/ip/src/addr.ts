// IPv4 and IPv6 addresses in their wire (byte) form: parsing, RFC 5952 text, masks and prefixes.
// Packets carry addresses as bytes, so this is the form every other view (bigint, table key) derives from.

export type Family = 4 | 6;

export interface IpAddr {
  family: Family;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

export interface Prefix {
  family: Family;
  /** Network address (host bits cleared), 4 or 16 bytes. */
  bytes: Uint8Array;
  len: number;
}

export const familyBits = (family: Family): number => (family === 4 ? 32 : 128);

/** Dotted quad, decimal octets without leading zeros (as inet_pton and net.isIPv4 accept). */
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

/** RFC 4291 text forms, including `::` and an embedded dotted quad; zone ids (`%eth0`) are refused. */
export function parseIPv6(s: string): Uint8Array | null {
  if (s.includes('%')) return null;
  let tail4: Uint8Array | null = null;
  let str = s;
  const lastColon = str.lastIndexOf(':');
  if (lastColon < 0) return null;
  if (str.slice(lastColon + 1).includes('.')) {
    tail4 = parseIPv4(str.slice(lastColon + 1));
    if (!tail4) return null;
    str = `${str.slice(0, lastColon + 1)}0:0`;
  }
  const halves = str.split('::');
  if (halves.length > 2) return null;
  const parseGroups = (h: string): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    for (const g of h.split(':')) {
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

export function parseIpAddr(s: string): IpAddr | null {
  if (typeof s !== 'string') return null;
  const v4 = parseIPv4(s);
  if (v4) return { family: 4, bytes: v4 };
  const v6 = parseIPv6(s);
  if (v6) return { family: 6, bytes: v6 };
  return null;
}

/** 4, 6, or 0 when `s` is not an address (net.isIP without zone ids). */
export function ipFamily(s: string): 0 | Family {
  return parseIpAddr(s)?.family ?? 0;
}

export function formatIPv4(b: Uint8Array, off = 0): string {
  return `${b[off]}.${b[off + 1]}.${b[off + 2]}.${b[off + 3]}`;
}

/** RFC 5952 canonical text: lower case, the longest run (2+) of zero groups as `::`, IPv4-mapped dotted. */
export function formatIPv6(b: Uint8Array, off = 0): string {
  const g: number[] = [];
  for (let i = 0; i < 8; i++) g.push((b[off + i * 2]! << 8) | b[off + i * 2 + 1]!);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `::ffff:${formatIPv4(b, off + 12)}`;
  }
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
  const hex = g.map((x) => x.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

export function formatIpBytes(b: Uint8Array, off: number, family: Family): string {
  return family === 4 ? formatIPv4(b, off) : formatIPv6(b, off);
}

export function formatIpAddr(ip: IpAddr): string {
  return formatIpBytes(ip.bytes, 0, ip.family);
}

/** The canonical text of an address, or undefined when `s` is not one. */
export function canonicalIP(s: string): string | undefined {
  const ip = parseIpAddr(s);
  return ip ? formatIpAddr(ip) : undefined;
}

export function maskBytes(bytes: Uint8Array, len: number): Uint8Array {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    const bits = Math.max(0, Math.min(8, len - i * 8));
    out[i] = bytes[i]! & ((0xff << (8 - bits)) & 0xff);
  }
  return out;
}

/** Splits `addr/len` (or a bare address, taken as a full-length prefix) without masking host bits. */
export function parseAddrWithLen(s: string): { ip: IpAddr; len: number } | null {
  if (typeof s !== 'string') return null;
  const slash = s.indexOf('/');
  const ip = parseIpAddr(slash >= 0 ? s.slice(0, slash) : s);
  if (!ip) return null;
  const max = familyBits(ip.family);
  if (slash < 0) return { ip, len: max };
  const l = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(l) || Number(l) > max) return null;
  return { ip, len: Number(l) };
}

/** A network in CIDR notation (`10.0.0.0/24`, `fd00::/64`); host bits must be zero. */
export function parsePrefix(s: string): Prefix | null {
  if (typeof s !== 'string' || !s.includes('/')) return null;
  const a = parseAddrWithLen(s);
  if (!a) return null;
  const p = toPrefix(a.ip, a.len);
  return bytesEqual(p.bytes, 0, a.ip.bytes, 0, p.bytes.length) ? p : null;
}

export function toPrefix(ip: IpAddr, len: number): Prefix {
  return { family: ip.family, bytes: maskBytes(ip.bytes, len), len };
}

export function formatPrefix(p: Prefix): string {
  return `${formatIpBytes(p.bytes, 0, p.family)}/${p.len}`;
}

/** Whether the address at `b[off]` (of the prefix's family) lies inside `p`. */
export function prefixContains(p: Prefix, b: Uint8Array, off = 0): boolean {
  const full = p.len >> 3;
  for (let i = 0; i < full; i++) if (p.bytes[i] !== b[off + i]) return false;
  const rem = p.len & 7;
  if (rem === 0) return true;
  const m = (0xff << (8 - rem)) & 0xff;
  return (b[off + full]! & m) === p.bytes[full];
}

export function prefixContainsIp(p: Prefix, ip: IpAddr): boolean {
  return p.family === ip.family && prefixContains(p, ip.bytes, 0);
}

export function prefixEquals(a: Prefix, b: Prefix): boolean {
  return a.family === b.family && a.len === b.len && bytesEqual(a.bytes, 0, b.bytes, 0, a.bytes.length);
}

/** Whether two prefixes share any address. */
export function prefixesOverlap(a: Prefix, b: Prefix): boolean {
  if (a.family !== b.family) return false;
  return a.len <= b.len ? prefixContains(a, b.bytes) : prefixContains(b, a.bytes);
}

export function bytesEqual(a: Uint8Array, ao: number, b: Uint8Array, bo: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (a[ao + i] !== b[bo + i]) return false;
  return true;
}

/** Orders addresses as unsigned byte strings, IPv4 before IPv6. */
export function compareIpAddr(a: IpAddr, b: IpAddr): number {
  if (a.family !== b.family) return a.family - b.family;
  for (let i = 0; i < a.bytes.length; i++) if (a.bytes[i] !== b.bytes[i]) return a.bytes[i]! - b.bytes[i]!;
  return 0;
}

/** Table key for an address inside a buffer: a uint32 for IPv4, hex for IPv6 (cheap Map keys). */
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
