// One watch's delivery to its consumer, either pulled (`for await`) or pushed (`subscribe`, a sink called
// synchronously as events arrive). Events the consumer has not taken yet wait in a queue bounded by
// `queueLimit`: a consumer that far behind ends with a 410 ERROR event, so it relists instead of holding
// memory without bound.
import { ExpiredError, type Status } from './errors.js';
import type { KubeObject } from './api-meta.js';
import type { Watch, WatchEvent, WatchSink } from './store.js';

/** Undelivered events a watcher may accumulate before it is ended. */
export const DEFAULT_WATCH_QUEUE_LIMIT = 1_000_000;

export class WatchQueue<T extends KubeObject = KubeObject> implements Watch<T> {
  private queue: WatchEvent<T>[] = [];
  private head = 0;
  private waiter: ((r: IteratorResult<WatchEvent<T>>) => void) | undefined;
  private _stopped = false;
  /** The push consumer (subscribe), and its state: paused after it returned false, inside a delivery. */
  private sink: WatchSink<T> | undefined;
  private paused = false;
  private flushing = false;
  private sinkEnded = false;
  private iterated = false;
  /** Called once when the watch ends, to detach it from its source. */
  onStop: (() => void) | undefined;

  constructor(readonly queueLimit = DEFAULT_WATCH_QUEUE_LIMIT) {}

  get stopped(): boolean {
    return this._stopped;
  }

  /** Undelivered events (for tests and metrics). */
  get pending(): number {
    return this.queue.length - this.head;
  }

  push(ev: WatchEvent<T>): void {
    if (this._stopped) return;
    if (this.sink !== undefined && !this.paused && !this.flushing && this.head === this.queue.length) {
      // The push path: straight to the consumer, nothing queued, no promise. Events the consumer causes
      // while it handles this one queue behind it.
      this.flushing = true;
      this.send(ev);
      this.flushing = false;
      if (this.head < this.queue.length || this._stopped) this.flush();
      return;
    }
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w({ value: ev, done: false });
    } else if (this.queue.length - this.head >= this.queueLimit && ev.type !== 'ERROR') {
      // A consumer this far behind would hold unbounded memory: end its watch; it relists (as the API
      // server drops watchers whose buffers fill).
      this.queue = [];
      this.head = 0;
      this.fail(new ExpiredError(`watch consumer fell more than ${this.queueLimit} events behind; relist`).toStatus());
    } else this.queue.push(ev);
  }

  /** Hand one event to the sink; a sink that throws ends the watch. */
  private send(ev: WatchEvent<T>): void {
    try {
      if (this.sink!.event(ev) === false) this.paused = true;
    } catch (err) {
      this.queue = [];
      this.head = 0;
      if (this.sinkEnded) return;
      this.sinkEnded = true;
      this.finish();
      this.sink!.end(err);
    }
  }

  subscribe(sink: WatchSink<T>): void {
    if (this.sink || this.iterated) throw new Error('a watch has one consumer: it is already iterated or subscribed');
    this.sink = sink;
    this.flush();
  }

  resume(): void {
    if (!this.sink || !this.paused) return;
    this.paused = false;
    this.flush();
  }

  /** Deliver queued events to the sink until it pauses; end it once a finished watch is drained. */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = true;
    while (!this.paused && !this.sinkEnded && this.head < this.queue.length) this.send(this.queue[this.head++]);
    this.flushing = false;
    if (this.head >= this.queue.length) {
      if (this.head > 0) {
        this.queue = [];
        this.head = 0;
      }
      if (this._stopped) this.endSink();
    } else this.compact();
  }

  private endSink(): void {
    if (!this.sink || this.sinkEnded) return;
    this.sinkEnded = true;
    this.sink.end();
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  /** Deliver an ERROR event, then end. */
  fail(status: Status): void {
    this.push({ type: 'ERROR', object: status });
    this.finish();
  }

  /** End after delivering what is queued. */
  finish(): void {
    if (this._stopped) return;
    this._stopped = true;
    this.onStop?.();
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w({ value: undefined, done: true });
    }
    if (this.sink && !this.paused) this.flush();
  }

  stop(): void {
    this.queue = [];
    this.head = 0;
    this.finish();
    this.endSink();
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent<T>> {
    if (this.sink) throw new Error('a watch has one consumer: it is already subscribed');
    this.iterated = true;
    return {
      next: () => {
        if (this.head < this.queue.length) {
          const value = this.queue[this.head++];
          this.compact();
          return Promise.resolve({ value, done: false });
        }
        if (this._stopped) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.waiter = resolve;
        });
      },
      return: () => {
        this.stop();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
