import { describe, expect, it } from 'vitest';
import { BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter } from './rate-limiter.js';
import { DelayingQueue, RateLimitingQueue, WorkQueue } from './workqueue.js';

describe('WorkQueue', () => {
  it('deduplicates queued keys and keeps FIFO order', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands one key to two workers; a re-add during processing runs once more afterwards', async () => {
    const q = new WorkQueue<string>();
    q.add('k');
    const first = await q.get();
    expect(first).toBe('k');
    q.add('k');
    q.add('k');
    expect(q.len()).toBe(0); // held back while processing
    let second: string | undefined;
    const p = q.get().then((v) => {
      second = v;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(second).toBeUndefined();
    q.done('k');
    await p;
    expect(second).toBe('k');
    q.done('k');
    expect(q.len()).toBe(0);
  });

  it('concurrent workers process every key exactly once per add burst', async () => {
    const q = new WorkQueue<string>();
    const active = new Set<string>();
    let overlap = false;
    const counts = new Map<string, number>();
    const worker = async () => {
      for (;;) {
        const k = await q.get();
        if (k === undefined) return;
        if (active.has(k)) overlap = true;
        active.add(k);
        await new Promise((r) => setTimeout(r, 1));
        counts.set(k, (counts.get(k) ?? 0) + 1);
        active.delete(k);
        q.done(k);
      }
    };
    const workers = [worker(), worker(), worker(), worker()];
    for (let i = 0; i < 100; i++) q.add(`k${i % 10}`);
    while (q.len() > 0) await new Promise((r) => setTimeout(r, 5));
    await q.shutDownWithDrain();
    await Promise.all(workers);
    expect(overlap).toBe(false);
    for (const n of counts.values()) expect(n).toBeGreaterThanOrEqual(1);
    expect([...counts.keys()].sort()).toHaveLength(10);
  });

  it('shutDown releases waiting getters with undefined', async () => {
    const q = new WorkQueue<string>();
    const p = q.get();
    q.shutDown();
    expect(await p).toBeUndefined();
    q.add('x');
    expect(q.len()).toBe(0);
  });
});

describe('DelayingQueue', () => {
  it('adds after the delay, keeping the earliest of repeated delays', async () => {
    const q = new DelayingQueue<string>();
    const t0 = performance.now();
    q.addAfter('late', 80);
    q.addAfter('x', 200);
    q.addAfter('x', 30);
    expect(q.len()).toBe(0);
    expect(await q.get()).toBe('x');
    const tx = performance.now() - t0;
    expect(await q.get()).toBe('late');
    const tl = performance.now() - t0;
    expect(tx).toBeGreaterThanOrEqual(25);
    expect(tl).toBeGreaterThanOrEqual(75);
    expect(q.delayedLen()).toBe(0);
    q.shutDown();
  });
});

describe('rate limiters', () => {
  it('exponential per-item backoff, capped, reset by forget', () => {
    const r = new ItemExponentialFailureRateLimiter<string>(5, 100);
    expect([r.when('a'), r.when('a'), r.when('a'), r.when('a'), r.when('a'), r.when('a')]).toEqual([5, 10, 20, 40, 80, 100]);
    expect(r.when('b')).toBe(5);
    expect(r.numRequeues('a')).toBe(6);
    r.forget('a');
    expect(r.when('a')).toBe(5);
  });

  it('fast/slow and token bucket', () => {
    const fs = new ItemFastSlowRateLimiter<string>(1, 50, 2);
    expect([fs.when('a'), fs.when('a'), fs.when('a')]).toEqual([1, 1, 50]);
    let now = 0;
    const b = new BucketRateLimiter<string>(10, 2, () => now);
    expect([b.when('a'), b.when('b')]).toEqual([0, 0]);
    expect(b.when('c')).toBeCloseTo(100);
    now = 1000;
    expect(b.when('d')).toBe(0);
    const m = new MaxOfRateLimiter(new ItemExponentialFailureRateLimiter<string>(5, 1000), new ItemFastSlowRateLimiter<string>(30, 30, 1));
    expect(m.when('x')).toBe(30);
  });

  it('RateLimitingQueue spaces retries by the limiter', async () => {
    const q = new RateLimitingQueue<string>(new ItemExponentialFailureRateLimiter(20, 1000));
    const t0 = performance.now();
    q.addRateLimited('k');
    expect(await q.get()).toBe('k');
    q.done('k');
    q.addRateLimited('k');
    expect(await q.get()).toBe('k');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(55);
    expect(q.numRequeues('k')).toBe(2);
    q.forget('k');
    expect(q.numRequeues('k')).toBe(0);
    q.shutDown();
  });
});
