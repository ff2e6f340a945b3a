import { createMemoryStore, type Store } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CAPACITY, NodeStatusManager } from './node-status.js';

const id = { nodeName: 'node-a', nodeIP: '10.0.0.2', labels: {}, capacity: DEFAULT_CAPACITY, reserved: {}, taints: [] };

/** A memory store that counts the Lease reads made through it. */
async function countingStore() {
  const store = await createMemoryStore();
  await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
  const reads = { n: 0 };
  const counted = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop !== 'get' || typeof v !== 'function') return typeof v === 'function' ? v.bind(target) : v;
      return (kind: string, ...rest: unknown[]) => {
        if (kind === 'Lease') reads.n++;
        return (v as (...a: unknown[]) => unknown).call(target, kind, ...rest);
      };
    },
  }) as Store;
  return { store, counted, reads };
}

const lease = (store: Store) => store.get('Lease', 'kube-node-lease', 'node-a');
const tick = () => new Promise((r) => setTimeout(r, 2));

describe('node Lease renewal', () => {
  it('renews from the Lease it last wrote, without reading it again', async () => {
    const { store, counted, reads } = await countingStore();
    const m = new NodeStatusManager(counted, id, 40);
    await m.renewLease();
    const created = await lease(store);
    expect(created.spec).toMatchObject({ holderIdentity: 'node-a', leaseDurationSeconds: 40 });
    const readsAfterCreate = reads.n;
    for (let i = 0; i < 3; i++) {
      await tick();
      await m.renewLease();
    }
    expect(reads.n).toBe(readsAfterCreate);
    const renewed = await lease(store);
    expect(renewed.spec?.renewTime).not.toBe(created.spec?.renewTime);
    expect(renewed.spec?.acquireTime).toBe(created.spec?.acquireTime);
  });

  it('reads the Lease again when someone else wrote it, and renews that version', async () => {
    const { store, counted } = await countingStore();
    const m = new NodeStatusManager(counted, id, 40);
    await m.renewLease();
    const cur = await lease(store);
    await store.update({ ...cur, metadata: { ...cur.metadata, labels: { touched: 'yes' } } });
    await tick();
    await m.renewLease();
    const after = await lease(store);
    expect(after.metadata.labels).toEqual({ touched: 'yes' });
    expect(after.spec?.renewTime).not.toBe(cur.spec?.renewTime);
    expect(after.spec?.holderIdentity).toBe('node-a');
  });

  it('creates the Lease again when it was deleted', async () => {
    const { store, counted } = await countingStore();
    const m = new NodeStatusManager(counted, id, 40);
    await m.renewLease();
    const first = await lease(store);
    await store.delete('Lease', 'kube-node-lease', 'node-a');
    await m.renewLease();
    const again = await lease(store);
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
    expect(again.spec?.holderIdentity).toBe('node-a');
  });
});
