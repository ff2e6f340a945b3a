// CrashLoopBackOff and image-pull back-off, as the kubelet applies them: the first failure is retried at
// once, then each further failure waits `initialMs`, doubling up to `maxMs`; a run of at least
// `resetAfterMs` starts the sequence over.
import type { BackoffSettings } from './types.js';

export const DEFAULT_BACKOFF: BackoffSettings = { initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 };

interface Entry {
  /** The failure (container id, or a counter for pulls) already accounted for. */
  id: string;
  delayMs: number;
  notBefore: number;
}

export class Backoff {
  private entries = new Map<string, Entry>();
  constructor(
    readonly settings: BackoffSettings = DEFAULT_BACKOFF,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Accounts for failure `id` of `key` (idempotent per id), which ended at `finishedAt` after running
   * `ranMs`, and returns how long to wait before retrying.
   */
  failed(key: string, id: string, finishedAt: number, ranMs: number): number {
    const prev = this.entries.get(key);
    if (!prev || prev.id !== id) {
      let delayMs: number;
      if (!prev || ranMs >= this.settings.resetAfterMs) delayMs = 0;
      else delayMs = prev.delayMs === 0 ? this.settings.initialMs : Math.min(prev.delayMs * 2, this.settings.maxMs);
      this.entries.set(key, { id, delayMs, notBefore: finishedAt + delayMs });
    }
    return this.remaining(key);
  }

  remaining(key: string): number {
    const e = this.entries.get(key);
    return e ? Math.max(0, e.notBefore - this.now()) : 0;
  }

  /** The delay in force for `key`, for "back-off 20s restarting failed container" messages. */
  currentDelay(key: string): number {
    return this.entries.get(key)?.delayMs ?? 0;
  }

  reset(key: string): void {
    this.entries.delete(key);
  }

  forgetPrefix(prefix: string): void {
    for (const k of this.entries.keys()) if (k.startsWith(prefix)) this.entries.delete(k);
  }
}

/** Formats milliseconds the way Go's time.Duration prints (300ms, 1.2s, 10s, 5m0s), as kubelet messages do. */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const trim = (x: number) => String(Number(x.toFixed(3)));
  if (ms < 60_000) return `${trim(ms / 1000)}s`;
  const totalSec = ms / 1000;
  const h = Math.floor(totalSec / 3600);
  const m = Math.floor((totalSec % 3600) / 60);
  const sec = totalSec - h * 3600 - m * 60;
  return `${h ? `${h}h` : ''}${m}m${trim(sec)}s`;
}
