// A SharedInformer whose list or watch is refused reports each failure as a reflector does (`failed to list
// *v1.Node: ...`, keeping the Status reason and code), once per backoff step, to its own onError or else to
// the handler set for its store; and a wait for its cache that lasts reports the cache and its last error.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StatusError } from './errors.js';
import { setInformerErrorHandler, SharedInformer } from './informer.js';
import type { Store } from './store.js';
import { MemoryStore } from './store-memory.js';

const FORBIDDEN = 'nodes is forbidden: User "system:serviceaccount:kube-system:csi-attacher" cannot list resource "nodes" in API group "" at the cluster scope';

/** A store whose lists are refused with a 403 while `refusing` is true. */
function refusingStore(inner: Store): Store & { refusing: boolean; lists: number } {
  const s = Object.create(inner) as Store & { refusing: boolean; lists: number };
  s.refusing = true;
  s.lists = 0;
  s.list = ((...args: Parameters<Store['list']>) => {
    s.lists++;
    if (s.refusing) return Promise.reject(new StatusError('Forbidden', 403, FORBIDDEN));
    return inner.list(...args);
  }) as Store['list'];
  return s;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('SharedInformer list/watch errors', () => {
  it('reports each refused list with the type and the 403, backing off between tries', async () => {
    vi.useFakeTimers();
    const store = refusingStore(await MemoryStore.open());
    const errors: unknown[] = [];
    const inf = new SharedInformer(store, 'Node', { onError: (e) => errors.push(e), syncReportMs: 0 });
    inf.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(errors).toHaveLength(1);
    const first = errors[0] as StatusError;
    expect(first).toBeInstanceOf(StatusError);
    expect(first.code).toBe(403);
    expect(first.reason).toBe('Forbidden');
    expect(first.message).toBe(`failed to list *v1.Node: ${FORBIDDEN}`);
    // 100 ms, then 200, then 400: one report per step, none between.
    await vi.advanceTimersByTimeAsync(99);
    expect(errors).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(errors).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(199);
    expect(errors).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(errors).toHaveLength(3);
    expect(inf.hasSynced()).toBe(false);
    expect(inf.lastError?.message).toBe(`failed to list *v1.Node: ${FORBIDDEN}`);
    // The rule comes back: the next try syncs, and nothing more is reported.
    store.refusing = false;
    await vi.advanceTimersByTimeAsync(400);
    expect(inf.hasSynced()).toBe(true);
    expect(inf.lastError).toBeUndefined();
    expect(store.lists).toBe(4);
    await vi.advanceTimersByTimeAsync(5000);
    expect(errors).toHaveLength(3);
    await inf.stop();
  });

  it('without an onError of its own, reports to the handler set for its store', async () => {
    const store = refusingStore(await MemoryStore.open());
    const other = refusingStore(await MemoryStore.open());
    const reported: string[] = [];
    setInformerErrorHandler(store, (e) => reported.push(`attacher: ${(e as Error).message}`));
    setInformerErrorHandler(other, (e) => reported.push(`other: ${(e as Error).message}`));
    const inf = new SharedInformer(store, 'VolumeAttachment', { syncReportMs: 0 });
    inf.start();
    await vi.waitFor(() => expect(reported.length).toBeGreaterThan(0));
    await inf.stop();
    expect(reported[0]).toBe(`attacher: failed to list *v1.VolumeAttachment: ${FORBIDDEN}`);
    expect(reported.every((r) => r.startsWith('attacher: '))).toBe(true);
  });

  it('a wait for a cache that does not sync reports the cache and its last error, then stops once synced', async () => {
    vi.useFakeTimers();
    const store = refusingStore(await MemoryStore.open());
    const errors: string[] = [];
    const inf = new SharedInformer(store, 'Node', { onError: (e) => errors.push((e as Error).message), syncReportMs: 30_000 });
    inf.start();
    const synced = inf.waitForSync();
    await vi.advanceTimersByTimeAsync(30_000);
    const waits = errors.filter((m) => m.startsWith('waiting for caches to sync'));
    expect(waits).toEqual([`waiting for caches to sync: *v1.Node has not synced after 30s (last error: failed to list *v1.Node: ${FORBIDDEN})`]);
    store.refusing = false;
    await vi.advanceTimersByTimeAsync(30_000);
    await expect(synced).resolves.toBe(true);
    const count = errors.length;
    await vi.advanceTimersByTimeAsync(120_000);
    expect(errors).toHaveLength(count);
    expect(errors.filter((m) => m.startsWith('waiting for caches to sync'))).toHaveLength(1);
    await inf.stop();
  });
});
