// Carving a cluster's address plan out of its ranges: per-node pod CIDRs and node addresses.
import { type Cidr, broadcastOf, formatIP, networkOf, parseCidr } from './value.js';

function mustParse(base: string): Cidr {
  const c = parseCidr(base.includes('/') ? base : `${base}/${base.includes(':') ? 128 : 32}`);
  if (!c) throw new RangeError(`invalid subnet ${base}`);
  return c;
}

/**
 * The `index`-th subnet of length `len` inside `base` (`nthSubnet('10.244.0.0/16', 1, 24)` is
 * `10.244.1.0/24`). Throws a RangeError when `base` holds fewer than `index + 1` of them.
 */
export function nthSubnet(base: string, index: number, len: number): string {
  const c = mustParse(base);
  const bits = c.family === 4 ? 32 : 128;
  if (!Number.isInteger(len) || len < c.prefix || len > bits) throw new RangeError(`cannot carve /${len} subnets from ${base}`);
  if (!Number.isInteger(index) || index < 0) throw new RangeError(`invalid subnet index ${index}`);
  const count = 1n << BigInt(len - c.prefix);
  if (BigInt(index) >= count) throw new RangeError(`${base} holds only ${count} /${len} subnets, not ${index + 1}`);
  const net = networkOf(c) + (BigInt(index) << BigInt(bits - len));
  return `${formatIP(c.family, net)}/${len}`;
}

/** The address `offset` hosts above `base`'s network address; throws a RangeError past its end. */
export function nthAddress(base: string, offset: number): string {
  const c = mustParse(base);
  if (!Number.isInteger(offset) || offset < 0) throw new RangeError(`invalid address offset ${offset}`);
  const v = networkOf(c) + BigInt(offset);
  if (v > broadcastOf(c)) throw new RangeError(`${base} has no address at offset ${offset}`);
  return formatIP(c.family, v);
}
