// Interop with BIRD 2 on loopback: each side on its own 127.0.0.x address, BIRD in `multihop` +
// `strict bind` mode with short start/connect delays so the sessions come up in about a second.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { Bird, randomPort, until } from './bird.test-util.js';
import { BgpSpeaker } from './speaker.js';

const canRun = requirePeers('the BIRD interop tests', [peers.root, peers.bird, peers.birdc]);

const timers = 'connect delay time 1; start delay time 1; connect retry time 1; error wait time 1, 2;';

describe.runIf(canRun)('interop with BIRD 2 (eBGP)', () => {
  const ourPort = randomPort();
  const birdPort = ourPort + 1;
  let bird: Bird;
  const speakers: BgpSpeaker[] = [];
  const logs: string[] = [];
  const mk = (o: ConstructorParameters<typeof BgpSpeaker>[0]) => {
    const s = new BgpSpeaker({ connectRetryTime: 1, log: (l) => logs.push(`${o.routerId} ${l}`), ...o });
    speakers.push(s);
    return s;
  };
  let ours: BgpSpeaker;

  beforeAll(async () => {
    bird = new Bird(`
router id 127.0.0.2;
log stderr all;
protocol device {}
protocol direct { ipv4; interface "lo"; }
protocol static s4 { ipv4; route 10.20.0.0/24 blackhole; route 10.20.1.0/24 blackhole; }
protocol static s4b { ipv4; route 10.21.0.0/24 blackhole; }
filter mine { if proto = "s4" || proto = "s4b" then accept; reject; }
template bgp peers {
  local 127.0.0.2 port ${birdPort} as 65002;
  multihop; strict bind; ${timers}
  ipv4 { import all; export filter mine; };
}
protocol bgp ours from peers { neighbor 127.0.0.1 port ${ourPort} as 65001; }
protocol bgp badas from peers { neighbor 127.0.0.3 port ${ourPort} as 65099; }
protocol bgp wewrong from peers { neighbor 127.0.0.4 port ${ourPort} as 65004; }
`);
    await bird.start();
    ours = mk({
      routerId: '127.0.0.1',
      as: 65001,
      listen: { address: '127.0.0.1', port: ourPort },
      neighbors: [{ address: '127.0.0.2', port: birdPort, as: 65002 }],
    });
    ours.advertise('10.10.0.0/24');
    ours.advertise('10.10.1.0/24');
    await ours.start();
  });

  afterAll(async () => {
    await Promise.all(speakers.map((s) => s.destroy()));
    bird?.stop();
  });

  const dbg = () => `${bird.output}\n${logs.join('\n')}`;

  it('reaches Established and both sides learn routes with the right next hop and AS path', async () => {
    await until(() => ours.peer('127.0.0.2')?.state === 'Established', 'Established', 15_000, dbg);
    expect(ours.peer('127.0.0.2')).toMatchObject({
      routerId: '127.0.0.2',
      holdTime: 90,
      fourOctetAs: true,
      routeRefresh: true,
    });
    await until(() => ours.locRibSize === 5, 'routes from BIRD', 10_000, dbg);
    expect(ours.lookup('10.20.0.0/24')).toEqual({
      prefix: '10.20.0.0/24',
      nextHop: '127.0.0.2',
      asPath: [65002],
      peer: '127.0.0.2',
      origin: 'IGP',
    });
    await until(() => bird.routes().has('10.10.1.0/24'), 'routes in BIRD', 10_000, dbg);
    const r = bird.routes().get('10.10.0.0/24')!;
    expect(r.protocol).toBe('ours');
    expect(r['BGP.as_path']).toBe('65001');
    expect(r['BGP.next_hop']).toBe('127.0.0.1');
    expect(r['BGP.origin']).toBe('IGP');
    expect(bird.protocol('ours')).toMatch(/BGP state:\s+Established/);
  });

  it('a withdrawn prefix disappears from the peer, both ways', async () => {
    ours.withdraw('10.10.1.0/24');
    await until(() => !bird.routes().has('10.10.1.0/24'), 'withdrawal in BIRD', 10_000, dbg);
    expect(bird.routes().has('10.10.0.0/24')).toBe(true);
    bird.cmd('disable', 's4b');
    await until(() => ours.lookup('10.21.0.0/24') === undefined, 'withdrawal from BIRD', 10_000, dbg);
    expect(ours.lookup('10.20.0.0/24')).toBeDefined();
  });

  it('route refresh: BIRD re-sends on our request, and we re-send on its request', async () => {
    const stats = () =>
      (ours as any).sessions.get('127.0.0.2').stats as { updatesIn: number; updatesOut: number };
    const inBefore = stats().updatesIn;
    expect(ours.refresh('127.0.0.2')).toBe(true);
    await until(() => stats().updatesIn > inBefore, 'refreshed routes from BIRD', 10_000, dbg);
    const outBefore = stats().updatesOut;
    bird.cmd('reload', 'in', 'ours');
    await until(() => stats().updatesOut > outBefore, 'our re-advertisement', 10_000, dbg);
    expect(bird.routes().get('10.10.0.0/24')?.['BGP.next_hop']).toBe('127.0.0.1');
  });

  it('BIRD rejects our OPEN with a wrong AS: we record OPEN Message Error / Bad Peer AS', async () => {
    const s = mk({
      routerId: '127.0.0.3',
      as: 65003,
      listen: { address: '127.0.0.3', port: ourPort },
      neighbors: [{ address: '127.0.0.2', port: birdPort, as: 65002 }],
    });
    await s.start();
    await until(
      () => s.peer('127.0.0.2')?.lastError?.direction === 'received',
      'NOTIFICATION from BIRD',
      10_000,
      dbg,
    );
    expect(s.peer('127.0.0.2')!.lastError).toMatchObject({
      code: 2,
      subcode: 2,
      message: 'OPEN Message Error / Bad Peer AS',
    });
    expect(s.peer('127.0.0.2')!.state).not.toBe('Established');
  });

  it('we reject BIRD’s OPEN with a wrong AS: BIRD receives Bad peer AS', async () => {
    const s = mk({
      routerId: '127.0.0.4',
      as: 65004,
      listen: { address: '127.0.0.4', port: ourPort },
      neighbors: [{ address: '127.0.0.2', port: birdPort, as: 65098 }],
    });
    await s.start();
    await until(
      () => /Received: Bad peer AS/.test(bird.protocol('wewrong')),
      'BIRD to see Bad peer AS',
      10_000,
      dbg,
    );
    expect(s.peer('127.0.0.2')!.lastError).toMatchObject({ direction: 'sent', code: 2, subcode: 2 });
    // The good session is untouched.
    expect(ours.peer('127.0.0.2')!.state).toBe('Established');
  });

  it('Cease on shutdown: BIRD sees an administrative shutdown', async () => {
    await ours.stop();
    await until(
      () => /Received: Administrative shutdown/.test(bird.protocol('ours')),
      'BIRD to see the Cease',
      10_000,
      dbg,
    );
    await until(() => !bird.routes().has('10.10.0.0/24'), 'routes gone from BIRD', 10_000, dbg);
  });
});

describe.runIf(canRun)('BIRD clients of our route reflector (iBGP, AS 64512)', () => {
  const rrPort = randomPort();
  const c1Port = rrPort + 1;
  const c2Port = rrPort + 2;
  const birds: Bird[] = [];
  let rr: BgpSpeaker;
  const logs: string[] = [];

  const client = (addr: string, port: number, prefix: string) =>
    new Bird(`
router id ${addr};
log stderr all;
protocol device {}
protocol direct { ipv4; interface "lo"; }
protocol static s4 { ipv4; route ${prefix} blackhole; }
protocol bgp toreflector {
  local ${addr} port ${port} as 64512;
  neighbor 127.0.0.10 port ${rrPort} as 64512;
  multihop; strict bind; ${timers}
  ipv4 { import all; export where proto = "s4"; };
}
`);

  beforeAll(async () => {
    birds.push(client('127.0.0.11', c1Port, '10.31.0.0/24'), client('127.0.0.12', c2Port, '10.32.0.0/24'));
    await Promise.all(birds.map((b) => b.start()));
    rr = new BgpSpeaker({
      routerId: '127.0.0.10',
      as: 64512,
      listen: { address: '127.0.0.10', port: rrPort },
      routeReflector: { clusterId: '1.2.3.4' },
      connectRetryTime: 1,
      neighbors: [
        { address: '127.0.0.11', port: c1Port, as: 64512, rrClient: true },
        { address: '127.0.0.12', port: c2Port, as: 64512, rrClient: true },
      ],
      log: (l) => logs.push(l),
    });
    rr.advertise('10.30.0.0/24');
    await rr.start();
  });

  afterAll(async () => {
    await rr?.destroy();
    for (const b of birds) b.stop();
  });

  const dbg = () => `${birds.map((b) => b.output).join('\n')}\n${logs.join('\n')}`;

  it('two BIRD clients learn each other’s routes through the reflector, with ORIGINATOR_ID and CLUSTER_LIST', async () => {
    const [b1, b2] = birds as [Bird, Bird];
    await until(
      () => b2.routes().has('10.31.0.0/24') && b1.routes().has('10.32.0.0/24'),
      'reflected routes',
      20_000,
      dbg,
    );
    const r = b2.routes().get('10.31.0.0/24')!;
    expect(r['BGP.next_hop']).toBe('127.0.0.11');
    expect(r['BGP.originator_id']).toBe('127.0.0.11');
    expect(r['BGP.cluster_list']).toBe('1.2.3.4');
    expect(r['BGP.as_path']).toBe('');
    expect(r['BGP.local_pref']).toBe('100');
    expect(b1.routes().get('10.32.0.0/24')?.['BGP.originator_id']).toBe('127.0.0.12');
    // Our own route reaches both, not reflected (no ORIGINATOR_ID), next hop our address.
    const own = b1.routes().get('10.30.0.0/24')!;
    expect(own['BGP.next_hop']).toBe('127.0.0.10');
    expect(own['BGP.originator_id']).toBeUndefined();
    expect(rr.lookup('10.31.0.0/24')).toMatchObject({
      nextHop: '127.0.0.11',
      peer: '127.0.0.11',
      asPath: [],
    });
  });

  it('a client withdrawing its route makes it disappear at the other client', async () => {
    const [b1, b2] = birds as [Bird, Bird];
    b1.cmd('disable', 's4');
    await until(() => !b2.routes().has('10.31.0.0/24'), 'reflected withdrawal', 10_000, dbg);
    expect(b2.routes().has('10.30.0.0/24')).toBe(true);
  });
});
