import { describe, expect, it } from 'vitest';
import { storeContract } from './store-contract.suite.js';
import { MemoryStore } from './store-memory.js';

storeContract('memory', async () => {
  const store = await MemoryStore.open({ bookmarkIntervalMs: 100 });
  return {
    store,
    compact: async (rv) => store.compact(Number(rv)),
    cleanup: () => store.close(),
  };
});

describe('MemoryStore specifics', () => {
  it('objects in watch events and lists are frozen; get returns a private copy', async () => {
    const store = await MemoryStore.open();
    await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { k: 'v' } });
    const listed = (await store.list('ConfigMap', { namespace: 'default' })).items[0];
    expect(() => {
      (listed.data as Record<string, string>).k = 'x';
    }).toThrow(TypeError);
    const got = await store.get('ConfigMap', 'default', 'a');
    got.data!.k = 'changed';
    expect((await store.get('ConfigMap', 'default', 'a')).data!.k).toBe('v');
    await store.close();
  });

  it('ends a watch whose consumer falls too far behind with 410, so it relists', async () => {
    const store = await MemoryStore.open({ watchQueueLimit: 5 });
    const w = await store.watch('ConfigMap', { resourceVersion: await store.resourceVersion() });
    for (let i = 0; i < 8; i++) await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` } });
    const seen: string[] = [];
    for await (const ev of w) seen.push(ev.type === 'ERROR' ? `ERROR:${ev.object.code}` : ev.type);
    // Queued events are dropped with the watch: the consumer must relist anyway.
    expect(seen).toEqual(['ERROR:410']);
    expect(w.stopped).toBe(true);
    await store.close();
  });

  it('keeps bounded history: watching from before the window is Expired', async () => {
    const store = await MemoryStore.open({ historySize: 5 });
    const first = await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c0' } });
    for (let i = 1; i < 10; i++) await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` } });
    const err = await store.watch('ConfigMap', { resourceVersion: first.metadata.resourceVersion }).catch((e) => e);
    expect(err.code).toBe(410);
    expect(err.reason).toBe('Expired');
    await store.close();
  });
});

describe('memory store readOnlyResult', () => {
  it('returns the stored, frozen object itself (no copy), and a writable copy without the option', async () => {
    const store = await MemoryStore.open();
    const ro = await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ro', namespace: 'default' }, data: { k: 'v' } }, { readOnlyResult: true });
    expect(Object.isFrozen(ro) && Object.isFrozen(ro.metadata)).toBe(true);
    expect((await store.list('ConfigMap', { namespace: 'default' })).items).toContain(ro);
    const rw = await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rw', namespace: 'default' } });
    expect(Object.isFrozen(rw)).toBe(false);
    await store.close();
  });
});
