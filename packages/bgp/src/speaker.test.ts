import { afterEach, describe, expect, it } from 'vitest';
import { MemoryRouteSink } from './route-sink.js';
import { BgpSpeaker, type SpeakerOptions } from './speaker.js';
import { MemoryNetwork } from './transport.js';

const speakers: BgpSpeaker[] = [];
afterEach(async () => {
  await Promise.all(speakers.splice(0).map((s) => s.destroy()));
});

async function until(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function mk(
  net: MemoryNetwork,
  addr: string,
  opts: Partial<SpeakerOptions> & Pick<SpeakerOptions, 'as'>,
): BgpSpeaker {
  const s = new BgpSpeaker({
    routerId: addr,
    listen: { address: addr, port: 179 },
    transport: net.transport(addr),
    connectRetryTime: 0.05,
    ...opts,
  });
  speakers.push(s);
  return s;
}

describe('two speakers over the in-memory transport', () => {
  it('iBGP: establish, exchange, withdraw, and program the sink', async () => {
    const net = new MemoryNetwork();
    const sink = new MemoryRouteSink();
    const a = mk(net, '10.0.0.1', {
      as: 64512,
      neighbors: [{ address: '10.0.0.2', as: 64512 }],
      routeSink: sink,
    });
    const b = mk(net, '10.0.0.2', { as: 64512, neighbors: [{ address: '10.0.0.1', as: 64512 }] });
    b.advertise('10.244.2.0/26');
    b.advertise('fd00:244:2::/64');
    await Promise.all([a.start(), b.start()]);
    await until(() => a.locRibSize === 2, 'routes at a');
    expect(a.lookup('10.244.2.0/26')).toMatchObject({
      nextHop: '10.0.0.2',
      asPath: [],
      peer: '10.0.0.2',
      localPref: 100,
    });
    expect(a.lookup('fd00:244:2::/64')).toMatchObject({ nextHop: '::ffff:10.0.0.2', peer: '10.0.0.2' });
    expect(a.peer('10.0.0.2')).toMatchObject({
      state: 'Established',
      type: 'ibgp',
      holdTime: 90,
      keepaliveTime: 30,
      fourOctetAs: true,
    });
    await a.settled();
    expect(sink.routes.get('10.244.2.0/26')).toMatchObject({ nextHop: '10.0.0.2', peer: '10.0.0.2' });
    b.withdraw('10.244.2.0/26');
    await until(() => a.lookup('10.244.2.0/26') === undefined, 'withdrawal at a');
    await a.settled();
    expect(sink.routes.has('10.244.2.0/26')).toBe(false);
    // Exactly one session survived collision resolution on each side.
    expect(net.connectionCount).toBe(1);
  });

  it('eBGP: AS path prepended, next hop self; route refresh re-sends', async () => {
    const net = new MemoryNetwork();
    const a = mk(net, '10.0.0.1', { as: 65001, neighbors: [{ address: '10.0.0.2', as: 4200000002 }] });
    const b = mk(net, '10.0.0.2', { as: 4200000002, neighbors: [{ address: '10.0.0.1', as: 65001 }] });
    a.advertise('10.1.0.0/24', { med: 7 });
    await Promise.all([a.start(), b.start()]);
    await until(() => b.locRibSize === 1, 'route at b');
    expect(b.lookup('10.1.0.0/24')).toMatchObject({
      nextHop: '10.0.0.1',
      asPath: [65001],
      med: 7,
      peer: '10.0.0.1',
    });
    const before = b.peer('10.0.0.1')!;
    expect(b.refresh('10.0.0.1')).toBe(true);
    await until(() => (b as any).sessions.get('10.0.0.1').stats.updatesIn > 1, 'refreshed updates');
    expect(before.type).toBe('ebgp');
  });

  it('a wrong peer AS ends the session with OPEN Message Error / Bad Peer AS', async () => {
    const net = new MemoryNetwork();
    const a = mk(net, '10.0.0.1', { as: 65001, neighbors: [{ address: '10.0.0.2', as: 65099 }] });
    const b = mk(net, '10.0.0.2', {
      as: 65002,
      neighbors: [{ address: '10.0.0.1', as: 65001, passive: true }],
    });
    await Promise.all([a.start(), b.start()]);
    await until(() => b.peer('10.0.0.1')?.lastError !== undefined, 'error at b');
    expect(a.peer('10.0.0.2')!.lastError).toMatchObject({ direction: 'sent', code: 2, subcode: 2 });
    expect(b.peer('10.0.0.1')!.lastError).toMatchObject({ direction: 'received', code: 2, subcode: 2 });
  });

  it('route reflection: clients learn each other with ORIGINATOR_ID and CLUSTER_LIST', async () => {
    const net = new MemoryNetwork();
    const rr = mk(net, '10.0.0.100', {
      as: 64512,
      routeReflector: { clusterId: '1.1.1.1' },
      neighbors: [
        { address: '10.0.0.1', as: 64512, rrClient: true },
        { address: '10.0.0.2', as: 64512, rrClient: true },
        { address: '10.0.0.3', as: 64512 },
      ],
    });
    const c1 = mk(net, '10.0.0.1', { as: 64512, neighbors: [{ address: '10.0.0.100', as: 64512 }] });
    const c2 = mk(net, '10.0.0.2', { as: 64512, neighbors: [{ address: '10.0.0.100', as: 64512 }] });
    const nc = mk(net, '10.0.0.3', { as: 64512, neighbors: [{ address: '10.0.0.100', as: 64512 }] });
    c1.advertise('10.244.1.0/26');
    nc.advertise('10.244.3.0/26');
    await Promise.all([rr, c1, c2, nc].map((s) => s.start()));
    await until(() => c2.locRibSize === 2 && c1.locRibSize === 2 && nc.locRibSize === 2, 'reflection');
    expect(c2.lookup('10.244.1.0/26')).toMatchObject({
      nextHop: '10.0.0.1',
      peer: '10.0.0.100',
      originatorId: '10.0.0.1',
      clusterList: ['1.1.1.1'],
    });
    expect(c1.lookup('10.244.3.0/26')).toMatchObject({ nextHop: '10.0.0.3', originatorId: '10.0.0.3' });
    expect(nc.lookup('10.244.1.0/26')).toMatchObject({ nextHop: '10.0.0.1', clusterList: ['1.1.1.1'] });
    // The originator is not sent its own route back.
    expect(rr.adjRibOut('10.0.0.1').map((r) => r.prefix)).toEqual(['10.244.3.0/26']);
  });

  it('a silently failed link is noticed by the hold timer, and the routes go', async () => {
    const net = new MemoryNetwork();
    const a = mk(net, '10.0.0.1', {
      as: 64512,
      holdTime: 3,
      neighbors: [{ address: '10.0.0.2', as: 64512 }],
    });
    const b = mk(net, '10.0.0.2', {
      as: 64512,
      holdTime: 3,
      neighbors: [{ address: '10.0.0.1', as: 64512 }],
    });
    b.advertise('10.244.2.0/26');
    await Promise.all([a.start(), b.start()]);
    await until(() => a.locRibSize === 1, 'route');
    net.failLink('10.0.0.1', '10.0.0.2', 'silent');
    await until(() => a.locRibSize === 0, 'hold timer expiry', 20_000);
    expect(a.peer('10.0.0.2')!.lastError).toMatchObject({ direction: 'sent', code: 4 });
    net.healLink('10.0.0.1', '10.0.0.2');
    await until(() => a.locRibSize === 1, 'recovery', 15_000);
  });

  it('hold time is negotiated down to the smaller proposal, keepalive a third of it', async () => {
    const net = new MemoryNetwork();
    const a = mk(net, '10.0.0.1', {
      as: 64512,
      holdTime: 30,
      neighbors: [{ address: '10.0.0.2', as: 64512 }],
    });
    const b = mk(net, '10.0.0.2', {
      as: 64512,
      holdTime: 9,
      neighbors: [{ address: '10.0.0.1', as: 64512, passive: true }],
    });
    await Promise.all([a.start(), b.start()]);
    await until(
      () => a.peer('10.0.0.2')?.state === 'Established' && b.peer('10.0.0.1')?.state === 'Established',
      'Established',
    );
    expect(a.peer('10.0.0.2')).toMatchObject({ holdTime: 9, keepaliveTime: 3 });
    expect(b.peer('10.0.0.1')).toMatchObject({ holdTime: 9, keepaliveTime: 3 });
  });

  it('rejects bad configuration with the field path', () => {
    expect(() => new BgpSpeaker({ routerId: '10.0.0', as: 1 })).toThrow(
      /^routerId: "10.0.0" is not a non-zero dotted quad/,
    );
    expect(() => new BgpSpeaker({ routerId: '10.0.0.1', as: 0 })).toThrow(/^as: 0 is not an AS number/);
    expect(() => new BgpSpeaker({ routerId: '10.0.0.1', as: 1, holdTime: 2 })).toThrow(/^holdTime:/);
    expect(
      () =>
        new BgpSpeaker({
          routerId: '10.0.0.1',
          as: 1,
          neighbors: [{ address: '10.0.0.2', as: 1, rrClient: true }],
        }),
    ).toThrow(/^neighbors\[10.0.0.2\].rrClient: route-reflector clients need/);
    const s = new BgpSpeaker({ routerId: '10.0.0.1', as: 1 });
    expect(() => s.advertise('10.0.0.1/24')).toThrow(
      /^advertise: "10.0.0.1\/24" is not a network in CIDR form/,
    );
  });
});

describe('update packing and the shared change list', () => {
  it('routes with equal attributes share one UPDATE; a different MED gets its own; a reflector packs per client', async () => {
    const net = new MemoryNetwork();
    // a (10.0.0.1) -> reflector r (10.0.0.2) -> clients c1, c2.
    const a = mk(net, '10.0.0.1', { as: 64512, neighbors: [{ address: '10.0.0.2', as: 64512 }] });
    const r = mk(net, '10.0.0.2', {
      as: 64512,
      routeReflector: { clusterId: '0.0.0.7' },
      neighbors: ['10.0.0.1', '10.0.0.3', '10.0.0.4'].map((address) => ({ address, as: 64512, rrClient: true, passive: true })),
    });
    const c1 = mk(net, '10.0.0.3', { as: 64512, neighbors: [{ address: '10.0.0.2', as: 64512 }] });
    const c2 = mk(net, '10.0.0.4', { as: 64512, neighbors: [{ address: '10.0.0.2', as: 64512 }] });
    await Promise.all([a, r, c1, c2].map((s) => s.start()));
    const up = () => [a, c1, c2].every((s) => s.peer('10.0.0.2')?.state === 'Established');
    await until(up, 'sessions');
    const stats = (s: BgpSpeaker, peer: string) =>
      (s as unknown as { sessions: Map<string, { stats: { updatesIn: number; updatesOut: number } }> }).sessions.get(peer)!.stats;
    const before = stats(c1, '10.0.0.2').updatesIn;
    // One burst: 200 blocks with default attributes, 100 with MED 5, advertised in the same tick.
    for (let i = 0; i < 300; i++) a.advertise(`10.64.${i >> 2}.${(i & 3) * 64}/26`, i >= 200 ? { med: 5 } : {});
    await until(() => c1.locRibSize === 300 && c2.locRibSize === 300, 'all 300 routes at both clients');
    // a -> r: two attribute sets, two UPDATEs; r -> each client: the same two, reflected.
    expect(stats(a, '10.0.0.2').updatesOut).toBe(2);
    expect(stats(c1, '10.0.0.2').updatesIn - before).toBe(2);
    expect(stats(c2, '10.0.0.2').updatesIn - before).toBe(2);
    // Packed routes kept their own attributes.
    expect(c1.lookup('10.64.0.0/26')).toMatchObject({ nextHop: '10.0.0.1', originatorId: '10.0.0.1', clusterList: ['0.0.0.7'] });
    expect(c1.lookup('10.64.0.0/26')!.med).toBeUndefined();
    expect(c2.lookup('10.64.74.192/26')).toMatchObject({ med: 5, nextHop: '10.0.0.1' });
    // A withdrawal burst travels as one UPDATE too, and the reflector does not echo anything back to a.
    const aIn = stats(a, '10.0.0.2').updatesIn;
    for (let i = 0; i < 300; i += 2) a.withdraw(`10.64.${i >> 2}.${(i & 3) * 64}/26`);
    await until(() => c1.locRibSize === 150 && c2.locRibSize === 150, 'withdrawals at both clients');
    expect(stats(c1, '10.0.0.2').updatesIn - before).toBe(3);
    expect(stats(a, '10.0.0.2').updatesIn).toBe(aIn);
    expect(r.adjRibOut('10.0.0.1')).toEqual([]);
  });
});
