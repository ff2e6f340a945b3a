// Cluster IP allocation from a service CIDR (the API server's --service-cluster-ip-range): the network
// address is never handed out, nor the broadcast address of an IPv4 range; the first usable address is
// the `kubernetes` Service's by convention. Very large IPv6 ranges are capped as upstream caps them.
import { type Cidr, broadcastOf, formatIP, networkOf, parseCidr, parseIP } from '@kemu/ip';
import { RangeAllocator } from './range-allocator.js';

const MAX_STATIC = 256;
/** Upstream caps a range's bitmap at 2^16 addresses. */
const MAX_SIZE = 1n << 16n;

export type IPAllocateResult = { ok: true } | { ok: false; reason: 'not-in-range' | 'allocated' };

export class ServiceIPAllocator {
  readonly cidr: string;
  readonly family: 4 | 6;
  private readonly base: bigint;
  private readonly range: RangeAllocator;
  private readonly net: Cidr;

  constructor(cidr: string, random?: () => number) {
    const c = parseCidr(cidr);
    if (!c) throw new RangeError(`invalid service CIDR ${JSON.stringify(cidr)}`);
    this.net = c;
    this.family = c.family;
    this.cidr = `${formatIP(c.family, networkOf(c))}/${c.prefix}`;
    const first = networkOf(c) + 1n;
    let last = c.family === 4 ? broadcastOf(c) - 1n : broadcastOf(c);
    if (last - first + 1n > MAX_SIZE) last = first + MAX_SIZE - 1n;
    const size = last >= first ? Number(last - first + 1n) : 0;
    if (size < 1) throw new RangeError(`service CIDR ${cidr} has no usable addresses`);
    this.base = first;
    this.range = new RangeAllocator(size, MAX_STATIC, random);
  }

  get free(): number {
    return this.range.free;
  }

  private offsetOf(ip: string): number | undefined {
    const p = parseIP(ip);
    if (!p || p.family !== this.family) return undefined;
    const off = p.value - this.base;
    return off >= 0n && off < BigInt(this.range.size) ? Number(off) : undefined;
  }

  /** The address at offset 0: the `kubernetes` Service's cluster IP. */
  firstAddress(): string {
    return formatIP(this.family, this.base);
  }

  contains(ip: string): boolean {
    return this.offsetOf(ip) !== undefined;
  }

  allocate(ip: string): IPAllocateResult {
    const off = this.offsetOf(ip);
    if (off === undefined) return { ok: false, reason: 'not-in-range' };
    return this.range.allocate(off) ? { ok: true } : { ok: false, reason: 'allocated' };
  }

  allocateNext(): string | undefined {
    const off = this.range.allocateNext();
    return off === undefined ? undefined : formatIP(this.family, this.base + BigInt(off));
  }

  release(ip: string): void {
    const off = this.offsetOf(ip);
    if (off !== undefined) this.range.release(off);
  }

  isAllocated(ip: string): boolean {
    const off = this.offsetOf(ip);
    return off !== undefined && this.range.has(off);
  }

  toString(): string {
    return `${formatIP(this.family, this.net.ip)}/${this.net.prefix}`;
  }
}
