// The affine blocks as blackhole routes in a real kernel routing table (root, iproute2).
import { createLinuxDatapath, HOST_NETNS, type LinuxDatapath } from '@kemu/cni';
import { addNetns, delAllNetns, ipJson } from '@kemu/cni/testing';
import { createMemoryStore } from '@kemu/core';
import { afterAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { CalicoIpam } from './ipam.js';

const canNetns = requirePeers('the kemu-calico blackhole netns test', [peers.netns]);

let dp: LinuxDatapath | undefined;
afterAll(async () => {
  await dp?.close?.();
  delAllNetns();
});

describe.runIf(canNetns)('blackhole routes on the Linux datapath', () => {
  it('installs one blackhole per affine block on the node and removes it when the block goes', async () => {
    const ns = addNetns('calico');
    dp = createLinuxDatapath({ hostNetns: ns.path });
    const store = await createMemoryStore();
    const ipam = new CalicoIpam(store);
    await ipam.applyPool('default', { cidr: '10.95.0.0/24', blockSize: 26 });
    await ipam.assign({ handle: 'n.a', node: 'node-1' });
    await ipam.assign({ handle: 'n.b', node: 'node-2' });
    await ipam.syncBlackholes(dp, 'node-1');
    const bh = () =>
      ipJson(ns.name, ['route', 'show', 'type', 'blackhole'])
        .map((r: { dst: string }) => r.dst)
        .sort();
    expect(bh()).toEqual(['10.95.0.0/26']);
    // The block empties and is released (its node left): the route goes with it.
    await ipam.releaseByHandle('n.a');
    await ipam.gc({ inUse: ['n.b'], nodes: ['node-2'] });
    await ipam.syncBlackholes(dp, 'node-1');
    expect(bh()).toEqual([]);
    expect((await dp.listRoutes(HOST_NETNS)).filter((r) => r.type === 'blackhole')).toEqual([]);
    await store.close();
  });
});
