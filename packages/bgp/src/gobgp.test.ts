// Interop with GoBGP (Debian `gobgpd`), a second independent implementation, on loopback; GoBGP uses a
// 4-octet AS so AS4 handling is exercised against someone else's code.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { randomPort, until } from './bird.test-util.js';
import { BgpSpeaker } from './speaker.js';

const canRun = requirePeers('the GoBGP interop tests', [peers.root, peers.gobgpd, peers.gobgp]);

describe.runIf(canRun)('interop with GoBGP', () => {
  const ourPort = randomPort();
  const goPort = ourPort + 1;
  const apiPort = ourPort + 2;
  const GO_AS = 4200000051;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-bgp-gobgp-'));
  let proc: ChildProcess | undefined;
  let output = '';
  let ours: BgpSpeaker;
  const logs: string[] = [];

  const gobgp = (...args: string[]) => {
    const r = spawnSync('gobgp', ['-u', '127.0.0.51', '-p', String(apiPort), ...args], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    if (r.status !== 0) throw new Error(`gobgp ${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const goRib = (): Record<string, { attrs: { type: number; [k: string]: unknown }[] }[]> =>
    JSON.parse(gobgp('global', 'rib', '-a', 'ipv4', '-j'));
  const dbg = () => `${output}\n${logs.join('\n')}`;

  beforeAll(async () => {
    const conf = path.join(dir, 'gobgpd.toml');
    fs.writeFileSync(
      conf,
      `[global.config]
  as = ${GO_AS}
  router-id = "127.0.0.51"
  port = ${goPort}
  local-address-list = ["127.0.0.51"]
[[neighbors]]
  [neighbors.config]
    neighbor-address = "127.0.0.50"
    peer-as = 65050
  [neighbors.transport.config]
    remote-port = ${ourPort}
    local-address = "127.0.0.51"
  [neighbors.ebgp-multihop.config]
    enabled = true
    multihop-ttl = 10
  [neighbors.timers.config]
    connect-retry = 1
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv4-unicast"
`,
    );
    proc = spawn('gobgpd', ['-f', conf, '--api-hosts', `127.0.0.51:${apiPort}`], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout!.on('data', (d) => {
      output += d;
    });
    proc.stderr!.on('data', (d) => {
      output += d;
    });
    await until(
      () => spawnSync('gobgp', ['-u', '127.0.0.51', '-p', String(apiPort), 'global']).status === 0,
      'GoBGP API',
      15_000,
      () => output,
    );
    gobgp('global', 'rib', 'add', '10.60.0.0/24', '-a', 'ipv4');
    ours = new BgpSpeaker({
      routerId: '127.0.0.50',
      as: 65050,
      listen: { address: '127.0.0.50', port: ourPort },
      connectRetryTime: 1,
      neighbors: [{ address: '127.0.0.51', port: goPort, as: GO_AS }],
      log: (l) => logs.push(l),
    });
    // GoBGP treats a loopback next hop as invalid (treat-as-withdraw), so this route names a documentation
    // address as its next hop; the session itself stays on loopback.
    ours.advertise('10.50.0.0/24', { nextHop: '192.0.2.50' });
    await ours.start();
  });

  afterAll(async () => {
    await ours?.destroy();
    proc?.kill('SIGTERM');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('Established with 4-octet AS, and routes learned both ways with next hop and AS path', async () => {
    await until(() => ours.peer('127.0.0.51')?.state === 'Established', 'Established', 20_000, dbg);
    expect(ours.peer('127.0.0.51')).toMatchObject({ fourOctetAs: true, routerId: '127.0.0.51' });
    await until(() => ours.lookup('10.60.0.0/24') !== undefined, 'route from GoBGP', 10_000, dbg);
    expect(ours.lookup('10.60.0.0/24')).toMatchObject({
      nextHop: '127.0.0.51',
      asPath: [GO_AS],
      peer: '127.0.0.51',
    });
    await until(() => '10.50.0.0/24' in goRib(), 'route in GoBGP', 10_000, dbg);
    const attrs = goRib()['10.50.0.0/24']![0]!.attrs;
    expect(attrs.find((a) => a.type === 3)).toMatchObject({ nexthop: '192.0.2.50' });
    expect(attrs.find((a) => a.type === 2)).toMatchObject({ as_paths: [{ segment_type: 2, asns: [65050] }] });
  });

  it('withdrawals disappear on the other side, both ways', async () => {
    ours.withdraw('10.50.0.0/24');
    await until(() => !('10.50.0.0/24' in goRib()), 'withdrawal in GoBGP', 10_000, dbg);
    gobgp('global', 'rib', 'del', '10.60.0.0/24', '-a', 'ipv4');
    await until(() => ours.lookup('10.60.0.0/24') === undefined, 'withdrawal from GoBGP', 10_000, dbg);
    expect(ours.peer('127.0.0.51')!.state).toBe('Established');
  });
});
