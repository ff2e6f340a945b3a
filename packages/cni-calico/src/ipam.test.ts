import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { HOST_NETNS } from '@kemu/cni';
import { createMemoryStore, type IPAMBlock, type Store } from '@kemu/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { CalicoIpam, PoolExhaustedError, validatePool, within } from './ipam.js';

let store: Store;
let ipam: CalicoIpam;

beforeEach(async () => {
  store = await createMemoryStore();
  ipam = new CalicoIpam(store);
});

const blocksOf = async () =>
  ((await store.list('IPAMBlock')).items as IPAMBlock[]).map((b) => [b.spec.cidr, b.spec.affinity]);

describe('IPPool validation', () => {
  it('defaults blockSize 26 and the encapsulation modes', () => {
    const p = validatePool('default', { cidr: '10.244.0.0/16' });
    expect(p.spec).toMatchObject({ blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never' });
  });

  it.each([
    [{ cidr: '10.244.0.0/16', blockSize: 33 }, /spec\.blockSize: .*33.*between 20 and 32/],
    [{ cidr: '10.244.0.0/24', blockSize: 20 }, /spec\.blockSize: .*at least the pool prefix length/],
    [{ cidr: 'ten.0.0.0/8' }, /spec\.cidr: .*must be a valid CIDR/],
    [{ cidr: '10.244.0.0/16', vxlanMode: 'Sometimes' }, /spec\.vxlanMode: Unsupported value: "Sometimes"/],
    [{ cidr: '10.244.0.0/16', ipipMode: 'always' }, /spec\.ipipMode: Unsupported value/],
    [{ cidr: '10.244.0.0/16', natOutgoing: 'yes' }, /spec\.natOutgoing: .*must be a boolean/],
    [{ cidr: '10.244.1.0/16' }, /spec\.cidr: .*host bits set, did you mean 10\.244\.0\.0\/16/],
    [
      { cidr: '10.244.0.0/16', ipipMode: 'Always', vxlanMode: 'CrossSubnet' },
      /spec\.vxlanMode: .*cannot both be enabled/,
    ],
  ])('rejects %j with a field path', async (spec, re) => {
    expect(() => validatePool('p', spec)).toThrow(re);
    // Rejected before anything is written.
    await expect(ipam.applyPool('p', spec)).rejects.toThrow(re);
    expect((await store.list('IPPool')).items).toHaveLength(0);
  });
});

describe('block IPAM', () => {
  it('claims an affine block per node and allocates from it', async () => {
    await ipam.applyPool('default', { cidr: '10.244.0.0/24', blockSize: 26 });
    const a = await ipam.assign({ handle: 'net.a', node: 'node-1' });
    const b = await ipam.assign({ handle: 'net.b', node: 'node-2' });
    expect(a).toMatchObject({ ip: '10.244.0.0', block: '10.244.0.0/26', borrowed: false });
    expect(b).toMatchObject({ ip: '10.244.0.64', block: '10.244.0.64/26', borrowed: false });
    expect(await ipam.affineBlocks('node-1')).toEqual(['10.244.0.0/26']);
    expect(await ipam.affineBlocks('node-2')).toEqual(['10.244.0.64/26']);
    const aff = await store.get('BlockAffinity', '', 'node-1-10-244-0-0-26');
    expect(aff.spec).toMatchObject({ state: 'confirmed', node: 'node-1', cidr: '10.244.0.0/26' });
    expect(await blocksOf()).toEqual(
      expect.arrayContaining([
        ['10.244.0.0/26', 'host:node-1'],
        ['10.244.0.64/26', 'host:node-2'],
      ]),
    );
    // Same handle again: same address, nothing new allocated.
    expect((await ipam.assign({ handle: 'net.a', node: 'node-1' })).ip).toBe('10.244.0.0');
    expect(await ipam.ipsByHandle('net.a')).toHaveLength(1);
  });

  it('claims a new block when the affine one is full, then borrows when the pool is exhausted', async () => {
    await ipam.applyPool('small', { cidr: '10.9.0.0/27', blockSize: 28 }); // two blocks of 16
    const n1: string[] = [];
    for (let i = 0; i < 16; i++) n1.push((await ipam.assign({ handle: `net.n1-${i}`, node: 'node-1' })).ip);
    expect(await ipam.affineBlocks('node-1')).toEqual(['10.9.0.0/28']);
    const seventeenth = await ipam.assign({ handle: 'net.n1-16', node: 'node-1' });
    expect(seventeenth).toMatchObject({ block: '10.9.0.16/28', borrowed: false });
    expect(await ipam.affineBlocks('node-1')).toEqual(['10.9.0.0/28', '10.9.0.16/28']);
    // node-2 finds no unclaimed block: it borrows a free address of node-1's block.
    const borrowed = await ipam.assign({ handle: 'net.n2-0', node: 'node-2' });
    expect(borrowed).toMatchObject({ block: '10.9.0.16/28', borrowed: true });
    expect(await ipam.affineBlocks('node-2')).toEqual([]);
    for (let i = 18; i < 32; i++) await ipam.assign({ handle: `net.x-${i}`, node: 'node-2' });
    await expect(ipam.assign({ handle: 'net.full', node: 'node-3' })).rejects.toBeInstanceOf(
      PoolExhaustedError,
    );
    // Releasing one address makes exactly that one available again.
    expect(await ipam.releaseByHandle('net.n1-3')).toEqual(['10.9.0.3']);
    expect((await ipam.assign({ handle: 'net.again', node: 'node-3' })).ip).toBe('10.9.0.3');
  });

  it('gives 50 concurrent allocations on one node 50 distinct addresses', async () => {
    await ipam.applyPool('default', { cidr: '10.244.0.0/16' });
    const got = await Promise.all(
      Array.from({ length: 50 }, (_, i) => ipam.assign({ handle: `net.c${i}`, node: 'node-1' })),
    );
    const ips = got.map((g) => g.ip);
    expect(new Set(ips).size).toBe(50);
    // All from the node's own block: one claim, no duplicate claims.
    expect(await ipam.affineBlocks('node-1')).toEqual(['10.244.0.0/26']);
    expect(got.every((g) => g.block === '10.244.0.0/26' && !g.borrowed)).toBe(true);
    const block = (await store.get('IPAMBlock', '', '10-244-0-0-26')) as IPAMBlock;
    expect(block.spec.unallocated).toHaveLength(14);
    expect(block.spec.allocations.filter((a) => a !== null)).toHaveLength(50);
  });

  it('lets exactly one of two nodes racing for the same block win it', async () => {
    await ipam.applyPool('default', { cidr: '10.20.0.0/24', blockSize: 26 });
    for (let round = 0; round < 5; round++) {
      const s = await createMemoryStore();
      const x = new CalicoIpam(s);
      await x.applyPool('default', { cidr: '10.20.0.0/24', blockSize: 26 });
      // Two independent allocators (as two nodes would be), both starting with no blocks.
      const y = new CalicoIpam(s);
      const [a, b] = await Promise.all([
        x.assign({ handle: 'n.a', node: 'node-a' }),
        y.assign({ handle: 'n.b', node: 'node-b' }),
      ]);
      expect(a.block).not.toBe(b.block);
      expect(a.borrowed || b.borrowed).toBe(false);
      const affs = (await s.list('BlockAffinity')).items;
      // One affinity per block, each confirmed, no leftover pending claims of the loser.
      expect(affs.map((f) => f.spec.state)).toEqual(['confirmed', 'confirmed']);
      expect(new Set(affs.map((f) => f.spec.cidr)).size).toBe(2);
      const blocks = (await s.list('IPAMBlock')).items as IPAMBlock[];
      expect(blocks).toHaveLength(2);
      expect(blocks.map((bl) => bl.spec.affinity).sort()).toEqual(['host:node-a', 'host:node-b']);
    }
  });

  it('GC releases only addresses whose handle is gone, and frees empty blocks of departed nodes', async () => {
    await ipam.applyPool('default', { cidr: '10.30.0.0/24', blockSize: 26 });
    await ipam.assign({ handle: 'net.keep', node: 'node-1' });
    await ipam.assign({ handle: 'net.leak', node: 'node-1' });
    await ipam.assign({ handle: 'other.x', node: 'node-1' });
    await ipam.assign({ handle: 'net.gone-node', node: 'node-2' });
    const r = await ipam.gc({ inUse: ['net.keep'], prefix: 'net.', nodes: ['node-1', 'node-2'] });
    expect(r.released.sort()).toEqual(['10.30.0.1', '10.30.0.64']);
    expect((await ipam.ipsByHandle('net.keep')).map((a) => a.ip)).toEqual(['10.30.0.0']);
    expect((await ipam.ipsByHandle('other.x')).map((a) => a.ip)).toEqual(['10.30.0.2']);
    expect(r.blocksFreed).toEqual([]);
    // node-2 leaves: its now-empty block and affinity go; node-1's block (still in use) stays.
    const r2 = await ipam.gc({ inUse: ['net.keep', 'other.x'], nodes: ['node-1'] });
    expect(r2.blocksFreed).toEqual(['10.30.0.64/26']);
    expect(await blocksOf()).toEqual([['10.30.0.0/26', 'host:node-1']]);
    expect(await ipam.affineBlocks('node-2')).toEqual([]);
    // A node that left while its block still holds an address in use keeps the block.
    await ipam.assign({ handle: 'net.n3', node: 'node-3' });
    const r3 = await ipam.gc({ inUse: ['net.keep', 'other.x', 'net.n3'], nodes: ['node-1'] });
    expect(r3).toEqual({ released: [], blocksFreed: [] });
    expect(await ipam.ipsByHandle('net.n3')).toHaveLength(1);
  });

  it('installs each affine block as a blackhole route on its node (sim datapath)', async () => {
    await ipam.applyPool('default', { cidr: '10.40.0.0/24', blockSize: 26 });
    await ipam.applyPool('other', { cidr: '10.41.0.0/24', blockSize: 26 });
    await ipam.assign({ handle: 'n.a', node: 'node-1' });
    await ipam.assign({ handle: 'n.b', node: 'node-2' });
    await ipam.assign({ handle: 'n.c', node: 'node-1', pools: ['other'] });
    const dp = createSimDatapath({ hostNamespace: '/run/kemu/nodes/node-1' });
    await dp.addRoute(HOST_NETNS, { dst: '10.40.0.192/26', type: 'blackhole' }); // stale, inside a pool
    await dp.addRoute(HOST_NETNS, { dst: '192.168.0.0/24', type: 'blackhole' }); // not ours
    await ipam.syncBlackholes(dp, 'node-1');
    const bh = (await dp.listRoutes(HOST_NETNS))
      .filter((r) => r.type === 'blackhole')
      .map((r) => r.dst)
      .sort();
    expect(bh).toEqual(['10.40.0.0/26', '10.41.0.0/26', '192.168.0.0/24']);
    expect(within('10.40.0.0/24', '10.40.0.64/26')).toBe(true);
    // Idempotent.
    await ipam.syncBlackholes(dp, 'node-1');
    expect((await dp.listRoutes(HOST_NETNS)).filter((r) => r.type === 'blackhole')).toHaveLength(3);
  });
});
