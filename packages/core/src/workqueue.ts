// Work queues with client-go semantics: an item queued several times is processed once (dedup), an item
// is never handed to two workers at once (added again while processing, it is re-queued on done()),
// delayed adds, and per-item rate-limited retries.
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter.js';

export class WorkQueue<T = string> {
  private queue: T[] = [];
  private head = 0;
  private readonly dirty = new Set<T>();
  private readonly processing = new Set<T>();
  private readonly waiters: ((item: T | undefined) => void)[] = [];
  private shutting = false;
  private drainWaiters: (() => void)[] = [];

  /** Queue an item unless it is already waiting; if it is being processed, it is queued on done(). */
  add(item: T): void {
    if (this.shutting || this.dirty.has(item)) return;
    this.dirty.add(item);
    if (this.processing.has(item)) return;
    const w = this.waiters.shift();
    if (w) {
      this.dirty.delete(item);
      this.processing.add(item);
      w(item);
    } else this.queue.push(item);
  }

  /** Items waiting (not counting those being processed). */
  len(): number {
    return this.queue.length - this.head;
  }

  /**
   * Next item to process, waiting if none; `undefined` once the queue is shut down (and, for
   * shutDownWithDrain, empty). Call done(item) when finished with it.
   */
  get(): Promise<T | undefined> {
    if (this.head < this.queue.length) {
      const item = this.queue[this.head++];
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.dirty.delete(item);
      this.processing.add(item);
      return Promise.resolve(item);
    }
    if (this.shutting) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Mark an item finished; if it was added meanwhile, it goes back in the queue. */
  done(item: T): void {
    this.processing.delete(item);
    if (this.dirty.has(item)) {
      const w = this.waiters.shift();
      if (w) {
        this.dirty.delete(item);
        this.processing.add(item);
        w(item);
      } else this.queue.push(item);
    }
    if (this.processing.size === 0 && this.drainWaiters.length) for (const d of this.drainWaiters.splice(0)) d();
  }

  isProcessing(item: T): boolean {
    return this.processing.has(item);
  }

  /** Stop accepting items; waiting get() calls return undefined. Queued items are still handed out. */
  shutDown(): void {
    this.shutting = true;
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  /** Shut down and wait until every item being processed is done(). */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return;
    await new Promise<void>((r) => this.drainWaiters.push(r));
  }

  shuttingDown(): boolean {
    return this.shutting;
  }
}

interface Delayed<T> {
  item: T;
  at: number;
}

/** WorkQueue with addAfter: an item added with several delays is queued at the earliest. */
export class DelayingQueue<T = string> extends WorkQueue<T> {
  private readonly heap: Delayed<T>[] = [];
  private readonly waitingAt = new Map<T, Delayed<T>>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;

  addAfter(item: T, delayMs: number): void {
    if (this.shuttingDown()) return;
    if (delayMs <= 0) {
      this.add(item);
      return;
    }
    const at = performance.now() + delayMs;
    const existing = this.waitingAt.get(item);
    if (existing) {
      if (existing.at <= at) return;
      existing.at = at;
      this.heapify();
    } else {
      const e = { item, at };
      this.waitingAt.set(item, e);
      this.push(e);
    }
    this.arm();
  }

  private push(e: Delayed<T>): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p].at <= h[i].at) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }

  private pop(): Delayed<T> | undefined {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0];
    const last = h.pop()!;
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && h[l].at < h[m].at) m = l;
        if (r < h.length && h[r].at < h[m].at) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }

  private heapify(): void {
    const items = this.heap.splice(0);
    for (const e of items) this.push(e);
  }

  private arm(): void {
    const next = this.heap[0];
    if (!next) return;
    if (this.timer && this.timerAt <= next.at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next.at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, next.at - performance.now()));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    while (this.heap.length && this.heap[0].at <= now + 1) {
      const e = this.pop()!;
      this.waitingAt.delete(e.item);
      this.add(e.item);
    }
    this.arm();
  }

  /** Items waiting for their delay. */
  delayedLen(): number {
    return this.heap.length;
  }

  override shutDown(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.heap.length = 0;
    this.waitingAt.clear();
    super.shutDown();
  }
}

/** DelayingQueue whose retries are spaced by a RateLimiter (default: the controller default). */
export class RateLimitingQueue<T = string> extends DelayingQueue<T> {
  constructor(readonly rateLimiter: RateLimiter<T> = defaultControllerRateLimiter<T>()) {
    super();
  }

  /** Queue after the limiter's delay for this item (one more failure). */
  addRateLimited(item: T): void {
    this.addAfter(item, this.rateLimiter.when(item));
  }

  /** Reset the item's failure count (after success). */
  forget(item: T): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.rateLimiter.numRequeues(item);
  }
}
