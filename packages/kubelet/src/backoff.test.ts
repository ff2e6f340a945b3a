import { describe, expect, it } from 'vitest';
import { Backoff, goDuration } from './backoff.js';

describe('Backoff (CrashLoopBackOff)', () => {
  it('retries the first failure at once, then waits 10s, 20s, 40s ... up to 5m', () => {
    let now = 0;
    const b = new Backoff({ initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 }, () => now);
    expect(b.failed('p/c', 'id1', 0, 1000)).toBe(0);
    const waits: number[] = [];
    for (let i = 2; i <= 8; i++) {
      now += 1;
      waits.push(b.failed('p/c', `id${i}`, now, 1000));
      now += waits[waits.length - 1];
    }
    expect(waits).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  });

  it('counts each failure once however often it is looked at', () => {
    let now = 0;
    const b = new Backoff({ initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 }, () => now);
    b.failed('k', 'a', 0, 0);
    expect(b.failed('k', 'b', 0, 0)).toBe(10_000);
    now = 4000;
    expect(b.failed('k', 'b', 0, 0)).toBe(6000);
  });

  it('starts over after a run of at least resetAfterMs', () => {
    const b = new Backoff({ initialMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 }, () => 0);
    b.failed('k', 'a', 0, 0);
    b.failed('k', 'b', 0, 0);
    expect(b.currentDelay('k')).toBe(10_000);
    expect(b.failed('k', 'c', 0, 600_000)).toBe(0);
  });

  it('formats durations as Go does', () => {
    expect([300, 1200, 10_000, 80_000, 300_000].map(goDuration)).toEqual(['300ms', '1.2s', '10s', '1m20s', '5m0s']);
  });
});
