import { afterEach, describe, expect, it } from 'vitest';
import { defaultBlock, type RouteSimulation, simAddress, startCluster } from './sim.js';

let sim: RouteSimulation | undefined;
afterEach(async () => {
  await sim?.destroy();
  sim = undefined;
});

describe('route simulation', () => {
  it('full mesh: converges, a joining node is learned, a leaving node is forgotten', async () => {
    const r = await startCluster(12, { topology: { kind: 'full-mesh' } });
    sim = r.sim;
    const n0 = sim.nodes.get('node-0')!;
    expect(n0.sink.routes.size).toBe(11);
    expect(n0.sink.routes.get(defaultBlock(5))).toMatchObject({
      nextHop: simAddress(5),
      peer: simAddress(5),
      asPath: [],
    });
    await sim.addNode('node-12', simAddress(12), [defaultBlock(12)]);
    await sim.waitConverged(30_000);
    expect(n0.sink.routes.get(defaultBlock(12))?.nextHop).toBe(simAddress(12));
    expect(sim.nodes.get('node-12')!.sink.routes.size).toBe(12);
    await sim.removeNode('node-3');
    await sim.waitConverged(30_000);
    expect(n0.sink.routes.has(defaultBlock(3))).toBe(false);
    expect(n0.sink.routes.size).toBe(11);
  });

  it('full mesh: a failed link drops exactly the routes learned over it, and they return when it heals', async () => {
    sim = (await startCluster(6, { topology: { kind: 'full-mesh' } })).sim;
    sim.failLink('node-1', 'node-2');
    const n1 = sim.nodes.get('node-1')!;
    const deadline = Date.now() + 15_000;
    while (n1.sink.routes.has(defaultBlock(2)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    expect(n1.sink.routes.has(defaultBlock(2))).toBe(false);
    expect(n1.sink.routes.size).toBe(4);
    expect(sim.converged).toBe(false);
    sim.healLink('node-1', 'node-2');
    await sim.waitConverged(30_000);
    expect(n1.sink.routes.get(defaultBlock(2))?.nextHop).toBe(simAddress(2));
  });

  it('two route reflectors: clients learn everything with the originator as next hop and survive losing one reflector', async () => {
    sim = (await startCluster(20, { topology: { kind: 'route-reflectors', count: 2 } })).sim;
    const c = sim.nodes.get('node-10')!;
    expect(c.role).toBe('client');
    expect(sim.nodes.get('node-0')!.role).toBe('reflector');
    expect(c.sink.routes.size).toBe(19);
    expect(c.speaker.lookup(defaultBlock(15))).toMatchObject({
      nextHop: simAddress(15),
      originatorId: simAddress(15),
      clusterList: ['0.0.0.1'],
    });
    // Clients peer only with the reflectors.
    expect(c.speaker.peers().map((p) => p.address)).toEqual([simAddress(0), simAddress(1)]);
    sim.failLink('node-10', 'node-0');
    await new Promise((r) => setTimeout(r, 50));
    expect(sim.converged).toBe(true);
    await sim.removeNode('node-1', { graceful: false });
    sim.withdraw('node-15', defaultBlock(15));
    // The other clients lose node-1's and node-15's blocks, and keep everything else through node-0.
    const n11 = sim.nodes.get('node-11')!;
    const deadline = Date.now() + 15_000;
    while (n11.sink.routes.size !== 16 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(n11.sink.routes.has(defaultBlock(15))).toBe(false);
    expect(n11.sink.routes.has(defaultBlock(1))).toBe(false);
    // node-10 reached nobody any more (link to node-0 failed, node-1 gone), so its block went too.
    expect(n11.sink.routes.has(defaultBlock(10))).toBe(false);
    expect(n11.sink.routes.get(defaultBlock(12))?.nextHop).toBe(simAddress(12));
    expect(n11.sink.routes.size).toBe(16);
  });

  it('over real TCP: each node on its own 127.x.y.z address', async () => {
    const port = 20000 + Math.floor(Math.random() * 30000);
    sim = (await startCluster(8, { topology: { kind: 'full-mesh' }, transport: 'tcp', tcpPort: port })).sim;
    const n0 = sim.nodes.get('node-0')!;
    expect(n0.address).toBe(simAddress(0, 'tcp'));
    expect(n0.address.startsWith('127.')).toBe(true);
    expect(n0.sink.routes.get(defaultBlock(7))).toMatchObject({
      nextHop: simAddress(7, 'tcp'),
      peer: simAddress(7, 'tcp'),
    });
    expect(n0.speaker.peers().every((p) => p.state === 'Established')).toBe(true);
  });
});
