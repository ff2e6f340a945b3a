// Addresses as bigints, for arithmetic over ranges (IPAM: next address, broadcast, range bounds).
// Parsing and text form come from addr.ts, so both views agree on every input.
import { type Family, familyBits, formatIpBytes, parseAddrWithLen, parseIpAddr } from './addr.js';

export interface ParsedIP {
  family: Family;
  value: bigint;
}

export interface Cidr {
  family: Family;
  /** The address as written (may have host bits set, e.g. an interface address). */
  ip: bigint;
  prefix: number;
}

export function bytesToBigInt(b: Uint8Array): bigint {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return v;
}

export function bigIntToBytes(family: Family, v: bigint): Uint8Array {
  const n = family === 4 ? 4 : 16;
  const out = new Uint8Array(n);
  let x = v;
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

export function parseIP(s: string): ParsedIP | undefined {
  const ip = parseIpAddr(s);
  return ip ? { family: ip.family, value: bytesToBigInt(ip.bytes) } : undefined;
}

export function formatIP(family: Family, v: bigint): string {
  return formatIpBytes(bigIntToBytes(family, v), 0, family);
}

/** `addr/len` with the address kept as written; undefined without a `/` or on a bad length. */
export function parseCidr(s: string): Cidr | undefined {
  if (typeof s !== 'string' || !s.includes('/')) return undefined;
  const a = parseAddrWithLen(s);
  return a ? { family: a.ip.family, ip: bytesToBigInt(a.ip.bytes), prefix: a.len } : undefined;
}

export function mask(family: Family, prefix: number): bigint {
  const b = BigInt(familyBits(family));
  return ((1n << b) - 1n) ^ ((1n << (b - BigInt(prefix))) - 1n);
}

export function networkOf(c: Cidr): bigint {
  return c.ip & mask(c.family, c.prefix);
}

export function broadcastOf(c: Cidr): bigint {
  return networkOf(c) | (((1n << BigInt(familyBits(c.family))) - 1n) ^ mask(c.family, c.prefix));
}

export function contains(c: Cidr, family: Family, ip: bigint): boolean {
  return c.family === family && (ip & mask(c.family, c.prefix)) === networkOf(c);
}

export function formatCidr(c: Cidr): string {
  return `${formatIP(c.family, c.ip)}/${c.prefix}`;
}

/** Canonical network form: `10.1.2.0/24` for `10.1.2.3/24`. */
export function canonicalNetwork(c: Cidr): string {
  return `${formatIP(c.family, networkOf(c))}/${c.prefix}`;
}
