import { describe, expect, it } from 'vitest';
import { DatapathError, HOST_NETNS, ignoreNotFound } from './datapath.js';
import { MemoryDatapath } from './datapath-memory.js';

describe('MemoryDatapath', () => {
  it('creates a veth with its peer in another netns and deletes both together', async () => {
    const dp = new MemoryDatapath();
    dp.addNetns('/run/netns/a');
    await dp.addLink(HOST_NETNS, { kind: 'veth', name: 'veth1', peer: { name: 'eth0', netns: '/run/netns/a' } });
    expect((await dp.getLink('/run/netns/a', 'eth0'))?.kind).toBe('veth');
    await dp.delLink(HOST_NETNS, 'veth1');
    expect(await dp.getLink('/run/netns/a', 'eth0')).toBeUndefined();
  });

  it('reports errno-style codes', async () => {
    const dp = new MemoryDatapath();
    await dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'br0' });
    await expect(dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'br0' })).rejects.toMatchObject({ code: 'EEXIST' });
    await expect(dp.delLink(HOST_NETNS, 'nope')).rejects.toBeInstanceOf(DatapathError);
    expect(await ignoreNotFound(() => dp.delLink(HOST_NETNS, 'nope'))).toBeUndefined();
    await expect(dp.listLinks('/run/netns/missing')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
