// Several simulated nodes in one netsim world: each datapath's HOST_NETNS is its own namespace.
import { World } from '@kemu/netsim';
import { describe, expect, it } from 'vitest';
import { HOST_NETNS } from './datapath.js';
import { createSimDatapath } from './datapath-sim.js';

describe('sim datapath hostNamespace', () => {
  it('gives each node its own root namespace in a shared world, and they can talk', async () => {
    const world = new World({ seed: 1 });
    const a = createSimDatapath({ world, hostNamespace: '/run/kemu/nodes/a' });
    const b = createSimDatapath({ world, hostNamespace: '/run/kemu/nodes/b' });
    expect(world.hasNamespace('/run/kemu/nodes/a')).toBe(true);
    expect(world.hasNamespace('host')).toBe(false);
    await a.addLink(HOST_NETNS, { kind: 'veth', name: 'eth0', up: true, peer: { name: 'eth0', netns: '/run/kemu/nodes/b' } });
    await b.setLink(HOST_NETNS, 'eth0', { up: true });
    await a.addAddr(HOST_NETNS, 'eth0', '192.0.2.1/24');
    await b.addAddr(HOST_NETNS, 'eth0', '192.0.2.2/24');
    expect((await a.listAddrs(HOST_NETNS)).map((x) => x.cidr)).toContain('192.0.2.1/24');
    expect((await b.listAddrs(HOST_NETNS)).map((x) => x.cidr)).toContain('192.0.2.2/24');
    expect((await a.listAddrs(HOST_NETNS)).map((x) => x.cidr)).not.toContain('192.0.2.2/24');
    const res = world.ping('/run/kemu/nodes/a', '192.0.2.2', { count: 1 });
    expect(res.received).toBe(1);
  });

  it('refuses to delete a node root namespace and keeps rejecting bad names', async () => {
    const dp = createSimDatapath({ hostNamespace: '/run/kemu/nodes/x' });
    await expect(dp.delNetns(HOST_NETNS)).rejects.toMatchObject({ code: 'EINVAL' });
    expect(() => createSimDatapath({ hostNamespace: '' })).toThrow(/invalid host namespace/);
  });
});
