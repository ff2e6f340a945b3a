// BGP identifiers and address ordering on top of @kemu/ip: router IDs as 32-bit numbers, one shared
// string per IPv4 address seen on the wire, and the address comparison the decision process uses.
import { compareIpAddr, type Family, formatIPv4, parseIPv4, parseIpAddr } from '@kemu/ip';

/** Address family as BGP speaks of it (AFI 1 = 4, AFI 2 = 6). */
export type Afi = Family;

const v4Text = new Map<number, string>();

/**
 * The text of the IPv4 address at `b[off]`, memoised by value: routers see the same few thousand next
 * hops and identifiers in every UPDATE, and one shared string per address keeps large RIBs small.
 */
export function internIPv4(b: Uint8Array, off = 0): string {
  const n = ((b[off]! << 24) >>> 0) + (b[off + 1]! << 16) + (b[off + 2]! << 8) + b[off + 3]!;
  let t = v4Text.get(n);
  if (t === undefined) {
    t = formatIPv4(b, off);
    if (v4Text.size < 1_000_000) v4Text.set(n, t);
  }
  return t;
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

/** Compares two addresses as unsigned byte strings (IPv4 sorts before IPv6); non-addresses as text. */
export function compareAddresses(a: string, b: string): number {
  if (a === b) return 0;
  const na = routerIdToNumber(a);
  const nb = routerIdToNumber(b);
  if (na !== undefined && nb !== undefined) return na - nb;
  const pa = parseIpAddr(a);
  const pb = parseIpAddr(b);
  if (!pa || !pb) return a < b ? -1 : a > b ? 1 : 0;
  return compareIpAddr(pa, pb);
}
