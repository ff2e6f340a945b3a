// Address input and output the way iproute2 takes and prints them, over @kemu/ip's arithmetic, plus
// MAC addresses and the IPv6 link-layer derivations (EUI-64, solicited-node) the neighbour code needs.
import { type Family, formatIpBytes, type IpAddr, type Prefix, parseAddrWithLen, parseIpAddr } from '@kemu/ip';
import { NetsimError } from './errors.js';

/** Parses an address or throws EINVAL with the same wording iproute2 uses. */
export function mustParseIp(s: string, what = 'address'): IpAddr {
  const ip = typeof s === 'string' ? parseIpAddr(s) : null;
  if (!ip) throw new NetsimError('EINVAL', `invalid ${what} "${String(s)}"`);
  return ip;
}

/** Parses "a.b.c.d/len", "x::/len", a bare address (full-length prefix) or "default". */
export function parseCidr(s: string, familyHint?: Family): { ip: IpAddr; len: number } {
  if (typeof s !== 'string') throw new NetsimError('EINVAL', `invalid prefix "${String(s)}"`);
  if (s === 'default') {
    const family = familyHint ?? 4;
    return { ip: { family, bytes: new Uint8Array(family === 4 ? 4 : 16) }, len: 0 };
  }
  const a = parseAddrWithLen(s);
  if (a) return a;
  const slash = s.indexOf('/');
  mustParseIp(slash >= 0 ? s.slice(0, slash) : s, 'prefix');
  throw new NetsimError('EINVAL', `invalid prefix length in "${s}"`);
}

/** A route destination as `ip route` prints it: `default`, a bare host address, or `net/len`. */
export function formatPrefixIproute(p: Prefix): string {
  if (p.len === 0) return 'default';
  const max = p.family === 4 ? 32 : 128;
  const a = formatIpBytes(p.bytes, 0, p.family);
  return p.len === max ? a : `${a}/${p.len}`;
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
