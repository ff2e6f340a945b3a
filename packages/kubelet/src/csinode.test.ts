import { createMemoryStore, type Store } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { CsiNodeSync } from './csinode.js';
import { StaticPluginRegistry } from './plugin-registry.js';
import type { CsiNodeApi } from './types.js';

/** A driver whose only answered RPC is NodeGetInfo, counting the calls. */
function driver(nodeId: string, zone: string) {
  const calls = { n: 0 };
  const api = {
    NodeGetInfo: async () => {
      calls.n++;
      return { nodeId, maxVolumesPerNode: 0, accessibleTopology: { segments: { 'topology.kemu.io/zone': zone } } };
    },
  } as unknown as CsiNodeApi;
  return { api, calls };
}

async function withNode(): Promise<Store> {
  const store = await createMemoryStore();
  await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
  return store;
}

describe('CsiNodeSync', () => {
  it('asks a registered driver for its node info once, not on every sync', async () => {
    const store = await withNode();
    const d = driver('id-a', 'z1');
    const sync = new CsiNodeSync(store, 'node-a', new StaticPluginRegistry(new Map([['csi.example.com', d.api]])));
    for (let i = 0; i < 5; i++) await sync.sync();
    expect(d.calls.n).toBe(1);
    const csiNode = await store.get('CSINode', '', 'node-a');
    expect(csiNode.spec.drivers).toEqual([{ name: 'csi.example.com', nodeID: 'id-a', topologyKeys: ['topology.kemu.io/zone'] }]);
    expect((await store.get('Node', '', 'node-a')).metadata.labels?.['topology.kemu.io/zone']).toBe('z1');
  });

  it('asks again when the driver registers again, and writes what the new registration reports', async () => {
    const store = await withNode();
    const first = driver('id-a', 'z1');
    const registry = new StaticPluginRegistry(new Map([['csi.example.com', first.api]]));
    const sync = new CsiNodeSync(store, 'node-a', registry);
    await sync.sync();
    const second = driver('id-b', 'z2');
    registry.set('csi.example.com', second.api);
    await sync.sync();
    await sync.sync();
    expect(first.calls.n).toBe(1);
    expect(second.calls.n).toBe(1);
    expect((await store.get('CSINode', '', 'node-a')).spec.drivers[0]?.nodeID).toBe('id-b');
    expect((await store.get('Node', '', 'node-a')).metadata.labels?.['topology.kemu.io/zone']).toBe('z2');
  });

  it('asks again after a NodeGetInfo that failed', async () => {
    const store = await withNode();
    let fail = true;
    let calls = 0;
    const api = {
      NodeGetInfo: async () => {
        calls++;
        if (fail) throw new Error('driver not ready');
        return { nodeId: 'id-a', maxVolumesPerNode: 0 };
      },
    } as unknown as CsiNodeApi;
    const sync = new CsiNodeSync(store, 'node-a', new StaticPluginRegistry(new Map([['csi.example.com', api]])));
    await expect(sync.sync()).rejects.toThrow('driver not ready');
    fail = false;
    await sync.sync();
    expect(calls).toBe(2);
    expect((await store.get('CSINode', '', 'node-a')).spec.drivers[0]?.nodeID).toBe('id-a');
  });
});
