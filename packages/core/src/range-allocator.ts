// Allocation of offsets in [0, size), as the API server's bitmap allocator does it for service IPs and
// node ports: values named by the user come preferably from a lower "static" band, dynamic allocation
// picks a random free value from the upper band first and falls back to the lower band when it is full.

/** Size of the static band: size/16 clamped to [16, max]; 0 when the range is smaller than 16. */
export function staticBandSize(size: number, max: number): number {
  const MIN = 16;
  const STEP = 16;
  if (size < MIN) return 0;
  return Math.min(Math.max(MIN, Math.floor(size / STEP)), max);
}

export class RangeAllocator {
  private readonly used = new Set<number>();
  readonly offset: number;

  constructor(
    readonly size: number,
    staticMax: number,
    private readonly random: () => number = Math.random,
  ) {
    this.offset = staticBandSize(size, staticMax);
  }

  get free(): number {
    return this.size - this.used.size;
  }

  has(i: number): boolean {
    return this.used.has(i);
  }

  /** Take a specific offset; false when it is taken already. */
  allocate(i: number): boolean {
    if (i < 0 || i >= this.size || this.used.has(i)) return false;
    this.used.add(i);
    return true;
  }

  /** Take a free offset (upper band first), or undefined when the range is full. */
  allocateNext(): number | undefined {
    if (this.used.size >= this.size) return undefined;
    const pick = (lo: number, hi: number): number | undefined => {
      const n = hi - lo;
      if (n <= 0) return undefined;
      const start = Math.floor(this.random() * n);
      for (let k = 0; k < n; k++) {
        const i = lo + ((start + k) % n);
        if (!this.used.has(i)) return i;
      }
      return undefined;
    };
    const i = pick(this.offset, this.size) ?? pick(0, this.offset);
    if (i !== undefined) this.used.add(i);
    return i;
  }

  release(i: number): void {
    this.used.delete(i);
  }
}
