import { describe, expect, it } from 'vitest';
import { storeContract } from './store-contract.suite.js';
import type { Pod } from './api-core.js';
import { MemoryStore } from './store-memory.js';
import type { WatchEvent } from './store.js';

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

  it('adoptInput keeps the given object as the stored one (frozen); without it the input is copied', async () => {
    const store = await MemoryStore.open();
    const input = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { k: 'v' } };
    const created = await store.create(input, { adoptInput: true, readOnlyResult: true });
    expect(created).toBe(input);
    expect(Object.isFrozen(input.data)).toBe(true);
    expect((await store.list('ConfigMap', { namespace: 'default' })).items[0]).toBe(input);
    const next = { ...(await store.get('ConfigMap', 'default', 'a')), data: { k: 'w' } };
    expect(await store.update(next, { adoptInput: true, readOnlyResult: true })).toBe(next);
    const own = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' } };
    expect(await store.create(own, { readOnlyResult: true })).not.toBe(own);
    expect(Object.isFrozen(own)).toBe(false);
    await store.close();
  });

  it('a status write shares the unchanged parts with the version before and keeps its own copy of the status', async () => {
    const store = await MemoryStore.open();
    await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i' }] } });
    const before = (await store.list('Pod', { namespace: 'default' })).items[0];
    const status: NonNullable<Pod['status']> = { phase: 'Running' };
    await store.updateStatus({ ...(await store.get('Pod', 'default', 'p')), status });
    status.phase = 'Failed';
    const after = (await store.list('Pod', { namespace: 'default' })).items[0];
    expect(after.status?.phase).toBe('Running');
    expect(Object.isFrozen(after.status)).toBe(true);
    expect(after.spec).toBe(before.spec);
    expect(after.metadata).not.toBe(before.metadata);
    expect(before.metadata.resourceVersion).not.toBe(after.metadata.resourceVersion);
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

  it('a subscribed sink gets each change synchronously, before the write returns, as one shared event', async () => {
    const store = await MemoryStore.open();
    const rv = await store.resourceVersion();
    const seen: WatchEvent[][] = [[], []];
    for (const i of [0, 1]) {
      const w = await store.watch('ConfigMap', { namespace: 'default', resourceVersion: rv });
      w.subscribe({ event: (ev) => void seen[i].push(ev), end: () => {} });
    }
    const a = await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } });
    expect(seen[0].map((e) => e.type)).toEqual(['ADDED']);
    // Both watchers got the same frozen event object (encoded once by an API server).
    expect(seen[1][0]).toBe(seen[0][0]);
    expect(Object.isFrozen(seen[0][0]) && Object.isFrozen(seen[0][0].object)).toBe(true);
    await store.update({ ...a, data: { k: 'v' } });
    expect(seen[0].map((e) => e.type)).toEqual(['ADDED', 'MODIFIED']);
    await store.close();
  });

  it('a paused sink that falls past the queue limit gets a 410 ERROR on resume and is detached', async () => {
    const store = await MemoryStore.open({ watchQueueLimit: 5 });
    const w = await store.watch('ConfigMap', { resourceVersion: await store.resourceVersion() });
    const seen: string[] = [];
    let ended = 0;
    w.subscribe({
      event: (ev) => {
        seen.push(ev.type === 'ERROR' ? `ERROR:${ev.object.code}` : ev.type);
        return false;
      },
      end: () => ended++,
    });
    for (let i = 0; i < 8; i++) await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}` } });
    // One event taken before the pause; the next five queued; the sixth overflowed and ended the watch.
    expect(seen).toEqual(['ADDED']);
    expect(w.stopped).toBe(true);
    expect(ended).toBe(0);
    w.resume();
    expect(seen).toEqual(['ADDED', 'ERROR:410']);
    expect(ended).toBe(1);
    await store.close();
  });

  it('a sink that throws ends only its own watch; the write and the other watchers are unaffected', async () => {
    const store = await MemoryStore.open();
    const rv = await store.resourceVersion();
    const bad = await store.watch('ConfigMap', { resourceVersion: rv });
    const good = await store.watch('ConfigMap', { resourceVersion: rv });
    let endedWith: unknown;
    bad.subscribe({
      event: () => {
        throw new Error('consumer broke');
      },
      end: (err) => (endedWith = err),
    });
    const seen: string[] = [];
    good.subscribe({ event: (ev) => void seen.push(ev.type), end: () => {} });
    await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } });
    await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'y' } });
    expect((endedWith as Error).message).toBe('consumer broke');
    expect(bad.stopped).toBe(true);
    expect(seen).toEqual(['ADDED', 'ADDED']);
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
