/** IPv4/IPv6 arithmetic on bigints: what IPAM and route handling need, nothing more. */
export interface ParsedIP {
  family: 4 | 6;
  value: bigint;
}

export interface Cidr {
  family: 4 | 6;
  /** The address as written (may have host bits set, e.g. an interface address). */
  ip: bigint;
  prefix: number;
}

const bits = (family: 4 | 6): number => (family === 4 ? 32 : 128);

const V4_OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const V4_RE = new RegExp(`^${V4_OCTET}(?:\\.${V4_OCTET}){3}$`);
const HEXTET_RE = /^[0-9a-fA-F]{1,4}$/;

/**
 * 4, 6 or 0 like net.isIP, minus IPv6 zone ids (no CNI field takes one). Kept here so a plugin start
 * does not load node:net just to validate addresses.
 */
export function ipFamily(s: string): 0 | 4 | 6 {
  if (V4_RE.test(s)) return 4;
  const lastColon = s.lastIndexOf(':');
  if (lastColon < 0) return 0;
  let str = s;
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    if (!V4_RE.test(tail)) return 0;
    str = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const dbl = str.indexOf('::');
  if (dbl < 0) {
    const g = str.split(':');
    return g.length === 8 && g.every((x) => HEXTET_RE.test(x)) ? 6 : 0;
  }
  if (str.indexOf('::', dbl + 1) >= 0 || str.includes(':::')) return 0;
  const head = str.slice(0, dbl);
  const rest = str.slice(dbl + 2);
  const h = head ? head.split(':') : [];
  const r = rest ? rest.split(':') : [];
  return h.length + r.length <= 7 && [...h, ...r].every((x) => HEXTET_RE.test(x)) ? 6 : 0;
}

export function parseIP(s: string): ParsedIP | undefined {
  const f = ipFamily(s);
  if (f === 4) {
    const p = s.split('.').map(Number);
    return { family: 4, value: BigInt(((p[0]! << 24) >>> 0) + (p[1]! << 16) + (p[2]! << 8) + p[3]!) };
  }
  if (f === 6) {
    let str = s;
    let tail: bigint | undefined;
    const lastColon = str.lastIndexOf(':');
    if (str.slice(lastColon + 1).includes('.')) {
      tail = parseIP(str.slice(lastColon + 1))!.value;
      str = `${str.slice(0, lastColon + 1)}0:0`;
    }
    const [head, rest] = str.split('::') as [string, string | undefined];
    const h = head ? head.split(':') : [];
    const r = rest !== undefined ? (rest ? rest.split(':') : []) : [];
    const groups = rest !== undefined ? [...h, ...Array(8 - h.length - r.length).fill('0'), ...r] : h;
    let v = 0n;
    for (const g of groups) v = (v << 16n) | BigInt(Number.parseInt(g, 16));
    if (tail !== undefined) v = (v & ~0xffffffffn) | tail;
    return { family: 6, value: v };
  }
  return undefined;
}

export function formatIP(family: 4 | 6, v: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => Number((v >> s) & 0xffn)).join('.');
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((v >> BigInt(i * 16)) & 0xffffn));
  // Longest run of zero groups (length >= 2) collapses to '::' (RFC 5952).
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

export function parseCidr(s: string): Cidr | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIP(s.slice(0, slash));
  const prefixStr = s.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(prefixStr)) return undefined;
  const prefix = Number(prefixStr);
  if (prefix > bits(ip.family)) return undefined;
  return { family: ip.family, ip: ip.value, prefix };
}

export function mask(family: 4 | 6, prefix: number): bigint {
  const b = BigInt(bits(family));
  return ((1n << b) - 1n) ^ ((1n << (b - BigInt(prefix))) - 1n);
}

export function networkOf(c: Cidr): bigint {
  return c.ip & mask(c.family, c.prefix);
}

export function broadcastOf(c: Cidr): bigint {
  return networkOf(c) | (((1n << BigInt(bits(c.family))) - 1n) ^ mask(c.family, c.prefix));
}

export function contains(c: Cidr, family: 4 | 6, ip: bigint): boolean {
  return c.family === family && (ip & mask(c.family, c.prefix)) === networkOf(c);
}

export function formatCidr(c: Cidr): string {
  return `${formatIP(c.family, c.ip)}/${c.prefix}`;
}

/** Canonical network form: `10.1.2.0/24` for `10.1.2.3/24`. */
export function canonicalNetwork(c: Cidr): string {
  return `${formatIP(c.family, networkOf(c))}/${c.prefix}`;
}

export function canonicalIP(s: string): string | undefined {
  const p = parseIP(s);
  return p ? formatIP(p.family, p.value) : undefined;
}
