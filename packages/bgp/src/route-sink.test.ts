import { MemoryDatapath } from '@kemu/cni';
import { afterEach, describe, expect, it } from 'vitest';
import { DatapathRouteSink } from './route-sink.js';
import { BgpSpeaker } from './speaker.js';
import { MemoryNetwork } from './transport.js';

const speakers: BgpSpeaker[] = [];
afterEach(async () => {
  await Promise.all(speakers.splice(0).map((s) => s.destroy()));
});

async function until(cond: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const end = Date.now() + 15_000;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Node A (10.0.0.1) programs what it learns from B (10.0.0.2) and C (192.168.9.3) into `dp`. */
async function pair(dp: MemoryDatapath, sink: DatapathRouteSink, logs: string[] = []) {
  const net = new MemoryNetwork();
  const mk = (
    addr: string,
    neighbors: string[],
    extra: Partial<ConstructorParameters<typeof BgpSpeaker>[0]> = {},
  ) => {
    const s = new BgpSpeaker({
      routerId: addr,
      as: 64512,
      listen: { address: addr, port: 179 },
      transport: net.transport(addr),
      // B and C wait for A, so the test does not depend on collision timing on a busy machine.
      neighbors: neighbors.map((address) => ({ address, as: 64512, passive: addr !== '10.0.0.1' })),
      connectRetryTime: 0.05,
      ...extra,
    });
    speakers.push(s);
    return s;
  };
  const a = mk('10.0.0.1', ['10.0.0.2', '192.168.9.3'], { routeSink: sink, log: (l) => logs.push(l) });
  const b = mk('10.0.0.2', ['10.0.0.1']);
  const c = mk('192.168.9.3', ['10.0.0.1']);
  b.advertise('10.244.2.0/26');
  c.advertise('10.244.3.0/26');
  await Promise.all([a.start(), b.start(), c.start()]);
  void dp;
  return { a, b, c };
}

const bgpRoutes = async (dp: MemoryDatapath) =>
  (await dp.listRoutes('host')).filter((r) => r.protocol === 'bgp').sort((x, y) => (x.dst < y.dst ? -1 : 1));

describe('programming learned routes into a @kemu/cni Datapath', () => {
  it('installs `<block> via <node IP>` and removes it on withdrawal', async () => {
    const dp = new MemoryDatapath();
    const { b } = await pair(dp, new DatapathRouteSink(dp));
    await until(async () => (await bgpRoutes(dp)).length === 2, 'two routes');
    expect(await bgpRoutes(dp)).toEqual([
      { dst: '10.244.2.0/26', via: '10.0.0.2', protocol: 'bgp', family: 4 },
      { dst: '10.244.3.0/26', via: '192.168.9.3', protocol: 'bgp', family: 4 },
    ]);
    b.withdraw('10.244.2.0/26');
    await until(async () => (await bgpRoutes(dp)).length === 1, 'withdrawal');
    expect((await bgpRoutes(dp))[0]!.dst).toBe('10.244.3.0/26');
  });

  it('CrossSubnet: only next hops outside the node subnet go over the tunnel device', async () => {
    const dp = new MemoryDatapath();
    await dp.addLink('host', { kind: 'dummy', name: 'tunl0', up: true });
    const sink = new DatapathRouteSink(dp, {
      tunnel: { dev: 'tunl0', mode: 'CrossSubnet', localSubnet: '10.0.0.0/24' },
    });
    await pair(dp, sink);
    await until(async () => (await bgpRoutes(dp)).length === 2, 'two routes');
    expect(await bgpRoutes(dp)).toEqual([
      { dst: '10.244.2.0/26', via: '10.0.0.2', protocol: 'bgp', family: 4 },
      { dst: '10.244.3.0/26', via: '192.168.9.3', dev: 'tunl0', onlink: true, protocol: 'bgp', family: 4 },
    ]);
  });

  it('Always: every route uses the tunnel; a missing tunnel device is logged, not fatal', async () => {
    const dp = new MemoryDatapath();
    const logs: string[] = [];
    const { a } = await pair(
      dp,
      new DatapathRouteSink(dp, { tunnel: { dev: 'vxlan.calico', mode: 'Always' } }),
      logs,
    );
    await until(
      () => logs.filter((l) => /programming failed/.test(l)).length === 2,
      `two failures logged: ${logs.join('\n')}`,
    );
    expect(logs.find((l) => /programming failed/.test(l))).toMatch(
      /^route 10\.244\.\d\.0\/26: programming failed: .*vxlan\.calico/,
    );
    // The speaker itself carries on: routes are in the Loc-RIB, sessions up.
    expect(a.locRibSize).toBe(2);
    await dp.addLink('host', { kind: 'dummy', name: 'vxlan.calico', up: true });
    expect(
      new DatapathRouteSink(dp, { tunnel: { dev: 'vxlan.calico', mode: 'Always' } }).routeSpec({
        prefix: '10.244.2.0/26',
        afi: 4,
        nextHop: '10.0.0.2',
        asPath: [],
        peer: '10.0.0.2',
      }),
    ).toEqual({ dst: '10.244.2.0/26', via: '10.0.0.2', dev: 'vxlan.calico', onlink: true, protocol: 'bgp' });
  });

  it('CrossSubnet without the node subnet is a configuration error', () => {
    expect(
      () => new DatapathRouteSink(new MemoryDatapath(), { tunnel: { dev: 'tunl0', mode: 'CrossSubnet' } }),
    ).toThrow(/^tunnel.localSubnet: CrossSubnet needs the node subnet/);
  });
});
