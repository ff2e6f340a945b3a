// The controller runner: wait for informer caches, then N workers take keys from a rate-limited queue and
// reconcile them; failures retry with per-item backoff, successes reset it.
import { setMaxListeners } from 'node:events';
import { type KubeObject, objectKey } from './api-meta.js';
import type { EventHandler, SharedInformer } from './informer.js';
import { TimeSlice } from './time-slice.js';
import { RateLimitingQueue } from './workqueue.js';

export interface ReconcileResult {
  /** Reconcile this key again after a delay, without counting a failure. */
  requeueAfterMs?: number;
  /** Reconcile again with rate-limited backoff, without treating it as an error. */
  requeue?: boolean;
}

export interface ControllerOptions {
  name: string;
  /** Reconcile one key (`namespace/name` or `name`). Throw (or reject) to retry with backoff. */
  reconcile(key: string, signal: AbortSignal): Promise<ReconcileResult | undefined> | ReconcileResult | undefined;
  /** Concurrent workers (default 1). The queue never gives one key to two workers at once. */
  workers?: number;
  /** Informers whose caches must be synced before workers start. */
  informers?: SharedInformer<any, any>[];
  queue?: RateLimitingQueue<string>;
  /** Give up on a key after this many consecutive failures (default: never). */
  maxRetries?: number;
  onError?(key: string, err: unknown, retries: number): void;
}

export class Controller {
  readonly name: string;
  readonly queue: RateLimitingQueue<string>;
  private abort: AbortController | undefined;
  private workers: Promise<void>[] = [];
  /** Keys reconciled successfully / failed attempts, for status and tests. */
  readonly stats = { reconciled: 0, failed: 0, dropped: 0 };

  constructor(readonly options: ControllerOptions) {
    this.name = options.name;
    this.queue = options.queue ?? new RateLimitingQueue<string>();
  }

  /** Queue an object (by its key) or a key. */
  enqueue(objOrKey: KubeObject | string): void {
    this.queue.add(typeof objOrKey === 'string' ? objOrKey : objectKey(objOrKey));
  }

  enqueueAfter(objOrKey: KubeObject | string, delayMs: number): void {
    this.queue.addAfter(typeof objOrKey === 'string' ? objOrKey : objectKey(objOrKey), delayMs);
  }

  /** An informer handler that queues the key of every added, updated or deleted object. */
  handler<T extends KubeObject>(filter?: (obj: T) => boolean): EventHandler<T> {
    const q = (o: T) => {
      if (!filter || filter(o)) this.enqueue(o);
    };
    return { onAdd: q, onUpdate: (_o, n) => q(n), onDelete: q };
  }

  /** Start informers (if not started), wait for their caches, then run workers until stop(). */
  async start(): Promise<void> {
    if (this.abort) return;
    this.abort = new AbortController();
    const signal = this.abort.signal;
    // Every informer's sync wait listens on this signal: a controller may watch more than ten kinds.
    setMaxListeners(0, signal);
    for (const inf of this.options.informers ?? []) inf.start();
    const synced = await Promise.all((this.options.informers ?? []).map((i) => i.waitForSync(signal)));
    if (signal.aborted || !synced.every(Boolean)) return;
    const n = Math.max(1, this.options.workers ?? 1);
    for (let i = 0; i < n; i++) this.workers.push(this.worker(signal));
  }

  private async worker(signal: AbortSignal): Promise<void> {
    const slice = new TimeSlice();
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      if (signal.aborted) {
        this.queue.done(key);
        return;
      }
      try {
        const res = await this.options.reconcile(key, signal);
        this.stats.reconciled++;
        if (res?.requeue) this.queue.addRateLimited(key);
        else {
          this.queue.forget(key);
          if (res?.requeueAfterMs !== undefined) this.queue.addAfter(key, res.requeueAfterMs);
        }
      } catch (err) {
        this.stats.failed++;
        const retries = this.queue.numRequeues(key);
        this.options.onError?.(key, err, retries);
        if (this.options.maxRetries !== undefined && retries >= this.options.maxRetries) {
          this.queue.forget(key);
          this.stats.dropped++;
        } else if (!signal.aborted) this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
      // A reconcile against an in-memory store settles on promises alone: without a turn of the event
      // loop now and then, a backlog would hold back every timer and I/O callback in the process until
      // it drained.
      await slice.maybeYield();
    }
  }

  /** Stop taking work and wait for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.queue.shutDownWithDrain();
    await Promise.all(this.workers);
    this.workers = [];
  }
}
