// Node port allocation from the API server's --service-node-port-range (default 30000-32767).
import { RangeAllocator } from './range-allocator.js';

const MAX_STATIC = 128;
export const DEFAULT_NODE_PORT_RANGE = '30000-32767';

export class NodePortAllocator {
  readonly base: number;
  readonly last: number;
  private readonly range: RangeAllocator;

  constructor(spec: string = DEFAULT_NODE_PORT_RANGE, random?: () => number) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(spec.trim());
    const lo = m ? Number(m[1]) : NaN;
    const hi = m ? Number(m[2] ?? m[1]) : NaN;
    if (!m || lo < 1 || hi > 65535 || hi < lo) throw new RangeError(`invalid node port range ${JSON.stringify(spec)}`);
    this.base = lo;
    this.last = hi;
    this.range = new RangeAllocator(hi - lo + 1, MAX_STATIC, random);
  }

  /** `30000-32767`, as the API server words the range in its errors. */
  toString(): string {
    return `${this.base}-${this.last}`;
  }

  contains(port: number): boolean {
    return Number.isInteger(port) && port >= this.base && port <= this.last;
  }

  allocate(port: number): { ok: true } | { ok: false; reason: 'not-in-range' | 'allocated' } {
    if (!this.contains(port)) return { ok: false, reason: 'not-in-range' };
    return this.range.allocate(port - this.base) ? { ok: true } : { ok: false, reason: 'allocated' };
  }

  allocateNext(): number | undefined {
    const off = this.range.allocateNext();
    return off === undefined ? undefined : this.base + off;
  }

  release(port: number): void {
    if (this.contains(port)) this.range.release(port - this.base);
  }

  isAllocated(port: number): boolean {
    return this.contains(port) && this.range.has(port - this.base);
  }
}
