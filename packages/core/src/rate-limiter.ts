// Rate limiters for work queues: how long an item waits before its next attempt.

export interface RateLimiter<T = string> {
  /** Delay (ms) before `item` may be processed again; counts as one more failure. */
  when(item: T): number;
  /** Stop tracking the item (call after it succeeded). */
  forget(item: T): void;
  /** Failures recorded for the item since it was last forgotten. */
  numRequeues(item: T): number;
}

/** baseDelay * 2^failures per item, capped at maxDelay. */
export class ItemExponentialFailureRateLimiter<T = string> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();

  constructor(
    readonly baseDelayMs = 5,
    readonly maxDelayMs = 1_000_000,
  ) {}

  when(item: T): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    const d = this.baseDelayMs * 2 ** n;
    return Number.isFinite(d) ? Math.min(d, this.maxDelayMs) : this.maxDelayMs;
  }

  forget(item: T): void {
    this.failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/** fastDelay for the first maxFastAttempts failures, slowDelay afterwards. */
export class ItemFastSlowRateLimiter<T = string> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();

  constructor(
    readonly fastDelayMs: number,
    readonly slowDelayMs: number,
    readonly maxFastAttempts: number,
  ) {}

  when(item: T): number {
    const n = (this.failures.get(item) ?? 0) + 1;
    this.failures.set(item, n);
    return n <= this.maxFastAttempts ? this.fastDelayMs : this.slowDelayMs;
  }

  forget(item: T): void {
    this.failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/** Overall token bucket (qps, burst) shared by all items. */
export class BucketRateLimiter<T = string> implements RateLimiter<T> {
  private tokens: number;
  private last: number;

  constructor(
    readonly qps = 10,
    readonly burst = 100,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  when(_item: T): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    // A negative balance is a reservation in the future.
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_item: T): void {}

  numRequeues(_item: T): number {
    return 0;
  }
}

/** The longest delay of several limiters. */
export class MaxOfRateLimiter<T = string> implements RateLimiter<T> {
  readonly limiters: RateLimiter<T>[];

  constructor(...limiters: RateLimiter<T>[]) {
    this.limiters = limiters;
  }

  when(item: T): number {
    let d = 0;
    for (const l of this.limiters) d = Math.max(d, l.when(item));
    return d;
  }

  forget(item: T): void {
    for (const l of this.limiters) l.forget(item);
  }

  numRequeues(item: T): number {
    let n = 0;
    for (const l of this.limiters) n = Math.max(n, l.numRequeues(item));
    return n;
  }
}

/** The controller default: per-item 5 ms..1000 s exponential, and 10 qps / 100 burst overall. */
export function defaultControllerRateLimiter<T = string>(): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(new ItemExponentialFailureRateLimiter<T>(5, 1_000_000), new BucketRateLimiter<T>(10, 100));
}
