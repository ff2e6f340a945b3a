// The cluster clock controllers read: real time by default, or a clock that runs faster than real time
// or is stepped by hand, so a test can run a day of CronJob schedules in seconds.

export interface Clock {
  now(): Date;
  /** Resolve after `ms` of this clock's time (or at once when the signal aborts). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Real milliseconds until `ms` of this clock's time have passed (for timers). */
  realDelay(ms: number): number;
  /** A real-time timestamp (one the API server stamped, e.g. creationTimestamp) on this clock. */
  fromReal(d: Date): Date;
}

export const realClock: Clock = {
  now: () => new Date(),
  sleep: (ms, signal) => sleepReal(ms, signal),
  realDelay: (ms) => ms,
  fromReal: (d) => d,
};

function sleepReal(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, Math.max(0, ms));
    t.unref?.();
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A clock starting at `start` that advances `factor` times faster than real time; `step` jumps ahead. */
export class ScaledClock implements Clock {
  private baseReal = Date.now();
  private baseClock: number;
  private readonly waiters = new Set<() => void>();

  constructor(
    start: Date = new Date(),
    private factor = 1,
  ) {
    this.baseClock = start.getTime();
  }

  now(): Date {
    return new Date(this.baseClock + (Date.now() - this.baseReal) * this.factor);
  }

  /** Jump ahead by `ms` of clock time; pending sleeps re-check their deadline. */
  step(ms: number): void {
    this.rebase();
    this.baseClock += ms;
    for (const w of [...this.waiters]) w();
  }

  setSpeed(factor: number): void {
    this.rebase();
    this.factor = factor;
    for (const w of [...this.waiters]) w();
  }

  private rebase(): void {
    const now = this.now().getTime();
    this.baseReal = Date.now();
    this.baseClock = now;
  }

  realDelay(ms: number): number {
    return this.factor > 0 ? ms / this.factor : ms;
  }

  fromReal(d: Date): Date {
    return new Date(this.baseClock + (d.getTime() - this.baseReal) * this.factor);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    const deadline = this.now().getTime() + ms;
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      let t: NodeJS.Timeout | undefined;
      const check = () => {
        if (t) clearTimeout(t);
        const left = deadline - this.now().getTime();
        if (left <= 0 || signal?.aborted) {
          this.waiters.delete(check);
          signal?.removeEventListener('abort', check);
          resolve();
          return;
        }
        t = setTimeout(check, Math.max(1, this.realDelay(left)));
        t.unref?.();
      };
      this.waiters.add(check);
      signal?.addEventListener('abort', check, { once: true });
      check();
    });
  }
}
