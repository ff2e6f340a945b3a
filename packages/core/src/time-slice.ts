// Cooperative time slicing for loops that share one event loop with the rest of a composed cluster.
// Work against an in-memory store settles on promises alone, so a loop with a backlog would never let
// the event loop turn: timers and I/O of every other component would wait until the backlog was gone.
// A TimeSlice lets such a loop run for a bounded stretch (10 ms, the slice after which Go's runtime
// preempts a goroutine, which is what each of these loops is upstream) and then yields one turn.
import { performance } from 'node:perf_hooks';

export const DEFAULT_SLICE_MS = 10;

export class TimeSlice {
  private start = performance.now();

  constructor(private readonly ms = DEFAULT_SLICE_MS) {}

  /**
   * Resolves at once while the slice lasts; after it, once the event loop has turned. `ms` overrides the
   * slice's length for this check (a loop that knows it is behind may take a longer one).
   */
  async maybeYield(ms = this.ms): Promise<void> {
    if (performance.now() - this.start < ms) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.start = performance.now();
  }
}
