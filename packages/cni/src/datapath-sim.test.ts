import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTrace } from '@kemu/netsim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import {
  type Datapath,
  DatapathError,
  HOST_NETNS,
  type LinkInfo,
  type NetnsRef,
  type RouteInfo,
} from './datapath.js';
import { createSimDatapath, SIM_STATE_FORMAT, type SimDatapath } from './datapath-sim.js';
import { toCniError } from './errors.js';
import { InProcessInvoker } from './invoke-inprocess.js';
import { CniRuntime, parseConfList } from './runtime.js';

const POD_A = '/var/run/netns/pod-a';
const POD_B = '/var/run/netns/pod-b';

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof DatapathError) return e.code;
    throw e;
  }
  return 'no error';
}

/**
 * What the bridge plugin does for one container (ensure bridge + gateway address, veth with the peer in
 * the container, enslave, container address/route, forwarding, masquerade): written against the Datapath
 * interface so the identical sequence runs on the linux and the sim datapath.
 */
async function attach(
  dp: Datapath,
  o: { netns: NetnsRef; hostIf: string; ip: string; gw: string; prefix: number; ip6?: string; gw6?: string },
): Promise<void> {
  if (!(await dp.getLink(HOST_NETNS, 'kemu0'))) {
    await dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'kemu0', mtu: 1500 });
  }
  await dp.setLink(HOST_NETNS, 'kemu0', { up: true });
  await dp.addLink(HOST_NETNS, {
    kind: 'veth',
    name: o.hostIf,
    mtu: 1500,
    peer: { name: 'eth0', netns: o.netns },
  });
  await dp.setLink(HOST_NETNS, o.hostIf, { master: 'kemu0', up: true });
  await dp.setLink(HOST_NETNS, o.hostIf, { hairpin: true });
  await dp.addAddr(o.netns, 'eth0', `${o.ip}/${o.prefix}`);
  if (o.ip6) await dp.addAddr(o.netns, 'eth0', `${o.ip6}/64`);
  await dp.setLink(o.netns, 'eth0', { up: true });
  await dp.setLink(o.netns, 'lo', { up: true });
  await dp.addRoute(o.netns, { dst: '0.0.0.0/0', via: o.gw, dev: 'eth0' });
  const have = await dp.listAddrs(HOST_NETNS, 'kemu0');
  if (!have.some((a) => a.cidr === `${o.gw}/${o.prefix}`))
    await dp.addAddr(HOST_NETNS, 'kemu0', `${o.gw}/${o.prefix}`);
  if (o.gw6 && !have.some((a) => a.cidr === `${o.gw6}/64`))
    await dp.addAddr(HOST_NETNS, 'kemu0', `${o.gw6}/64`);
  await dp.setSysctl(HOST_NETNS, 'net.ipv4.ip_forward', '1');
  await dp.addNatRules(HOST_NETNS, [
    {
      kind: 'masquerade',
      owner: `test ${o.hostIf}`,
      src: `${o.ip}/32`,
      excludeDst: ['10.88.0.0/16', '224.0.0.0/4'],
    },
  ]);
}

describe('sim datapath (in memory)', () => {
  it('runs the bridge sequence and the result carries traffic', async () => {
    const dp = createSimDatapath();
    await dp.addNetns(POD_A);
    await dp.addNetns(POD_B);
    await attach(dp, { netns: POD_A, hostIf: 'vetha', ip: '10.88.0.2', gw: '10.88.0.1', prefix: 16 });
    await attach(dp, { netns: POD_B, hostIf: 'vethb', ip: '10.88.0.3', gw: '10.88.0.1', prefix: 16 });
    const a = (await dp.getLink(POD_A, 'eth0'))!;
    const ha = (await dp.getLink(HOST_NETNS, 'vetha'))!;
    expect(a.peerIndex).toBe(ha.index);
    expect(ha).toMatchObject({ kind: 'veth', master: 'kemu0', hairpin: true, up: true, mtu: 1500 });
    expect(await dp.listRoutes(POD_A, { family: 4 })).toEqual([
      {
        family: 4,
        dst: '10.88.0.0/16',
        table: 254,
        type: 'unicast',
        scope: 'link',
        protocol: 'kernel',
        dev: 'eth0',
        src: '10.88.0.2',
      },
      {
        family: 4,
        dst: '0.0.0.0/0',
        table: 254,
        type: 'unicast',
        scope: 'global',
        protocol: 'boot',
        via: '10.88.0.1',
        dev: 'eth0',
      },
    ]);
    const r = await dp.ping(POD_A, '10.88.0.3');
    expect(r.reachable).toBe(true);
    expect(formatTrace(r.trace)).toMatch(/host\/kemu0\s+fdb\s+hit .* -> port vethb/);
    // What the ping taught the pods stays, as ARP entries do on Linux.
    expect(await dp.listNeighs(POD_A)).toEqual([
      { ip: '10.88.0.3', mac: (await dp.getLink(POD_B, 'eth0'))!.mac, dev: 'eth0', permanent: false },
    ]);
    expect(await dp.listNatRules(HOST_NETNS, 'test vetha')).toEqual([
      {
        kind: 'masquerade',
        owner: 'test vetha',
        src: '10.88.0.2/32',
        excludeDst: ['10.88.0.0/16', '224.0.0.0/4'],
      },
    ]);
  });

  it('gives kernel-style errors that the CNI skeleton maps to code 100 with the errno', async () => {
    const dp = createSimDatapath();
    expect(await code(dp.addLink('/var/run/netns/nope', { kind: 'dummy', name: 'd0' }))).toBe('ENOENT');
    expect(await code(dp.setLink(HOST_NETNS, 'eth9', { up: true }))).toBe('ENOENT');
    expect(await code(dp.delRoute(HOST_NETNS, { dst: '10.0.0.0/8' }))).toBe('ENOENT');
    expect(await code(dp.delAddr(HOST_NETNS, 'lo', '10.0.0.1/8'))).toBe('ENOENT');
    await dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'br0' });
    expect(await code(dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'br0' }))).toBe('EEXIST');
    expect(await code(dp.addLink(HOST_NETNS, { kind: 'dummy', name: 'a/b' }))).toBe('EINVAL');
    expect(await code(dp.addLink('relative/path', { kind: 'dummy', name: 'd0' }))).toBe('EINVAL');
    expect(await code(dp.getLink('/var/run/../etc', 'x'))).toBe('EINVAL');
    const err = await dp.setLink(HOST_NETNS, 'eth9', { up: true }).catch((e: unknown) => e);
    expect((err as Error).message).toBe('set link eth9: Cannot find device "eth9": No such device');
    const cni = toCniError(err);
    expect([cni.code, cni.details]).toEqual([100, 'ENOENT']);
    // Deleting rules of a namespace that is gone is not an error (CNI DEL is idempotent).
    await dp.delNatRules('/var/run/netns/gone', 'whoever');
  });

  it('keeps a bad NAT batch out entirely', async () => {
    const dp = createSimDatapath();
    await dp.addNatRules(HOST_NETNS, [{ kind: 'masquerade', owner: 'o1', src: '10.1.0.0/16' }]);
    const bad = dp.addNatRules(HOST_NETNS, [
      { kind: 'masquerade', owner: 'o1', src: '10.2.0.0/16' },
      { kind: 'dnat', owner: 'o2', protocol: 'tcp', hostPort: 80, toIP: 'not-an-ip', toPort: 80 },
    ]);
    expect(await code(bad)).toBe('EINVAL');
    expect((await dp.listNatRules(HOST_NETNS)).map((r) => r.owner)).toEqual(['o1']);
    expect(await dp.withWorld((w) => w.natRules(HOST_NETNS).map((r) => r.rule.owner))).toEqual(['o1']);
  });

  it('maps a hostPort with DNAT, including the hairpin case', async () => {
    const dp = createSimDatapath();
    await dp.addNetns(POD_A);
    await attach(dp, { netns: POD_A, hostIf: 'vetha', ip: '10.88.0.2', gw: '10.88.0.1', prefix: 16 });
    await dp.listen(POD_A, 'tcp', 80);
    await dp.addNatRules(HOST_NETNS, [
      {
        kind: 'dnat',
        owner: 'pm',
        protocol: 'tcp',
        hostPort: 8080,
        toIP: '10.88.0.2',
        toPort: 80,
        snat: true,
      },
    ]);
    expect((await dp.tcpConnect(HOST_NETNS, '10.88.0.1', 8080)).state).toBe('established');
    const hairpin = await dp.tcpConnect(POD_A, '10.88.0.1', 8080);
    expect(hairpin.state).toBe('established');
    expect(hairpin.trace.some((h) => h.kind === 'nat' && h.detail.startsWith('MASQUERADE'))).toBe(true);
  });
});

describe('sim datapath (state file)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kemu-simdp-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('persists between instances (one per plugin execution)', async () => {
    const statePath = join(dir, 'node1.json');
    const first = createSimDatapath({ statePath });
    await first.addNetns(POD_A);
    await attach(first, { netns: POD_A, hostIf: 'vetha', ip: '10.88.0.2', gw: '10.88.0.1', prefix: 16 });
    await first.close();
    const doc = JSON.parse(readFileSync(statePath, 'utf8'));
    expect(doc.format).toBe(SIM_STATE_FORMAT);
    const second = createSimDatapath({ statePath });
    expect(await second.netnsExists(POD_A)).toBe(true);
    expect((await second.getLink(HOST_NETNS, 'vetha'))?.master).toBe('kemu0');
    expect((await second.ping(POD_A, '10.88.0.1')).reachable).toBe(true);
    // The first instance notices the file changed and sees the neighbour the second one learned.
    expect((await first.listNeighs(POD_A)).map((n) => n.ip)).toEqual(['10.88.0.1']);
  });

  it('reports a broken state file with its path and leaves it untouched', async () => {
    const statePath = join(dir, 'broken.json');
    const garbage =
      '{"format":"kemu-netsim-state","version":1,"world":{"version":1,"namespaces":[{"name":"host","links":[{"name":"x","master":"nope"';
    writeFileSync(statePath, garbage);
    const dp = createSimDatapath({ statePath });
    const err = (await dp
      .addLink(HOST_NETNS, { kind: 'dummy', name: 'd0' })
      .catch((e: unknown) => e)) as DatapathError;
    expect(err).toBeInstanceOf(DatapathError);
    expect(err.code).toBe('EIO');
    expect(err.message).toContain(statePath);
    expect(err.message).toContain('left untouched');
    expect(toCniError(err).code).toBe(5);
    expect(readFileSync(statePath, 'utf8')).toBe(garbage);
    // Valid JSON that is not a consistent world is refused the same way.
    const json = JSON.stringify({
      format: SIM_STATE_FORMAT,
      version: 1,
      world: {
        version: 1,
        namespaces: [
          {
            name: 'host',
            links: [
              {
                name: 'v',
                kind: 'veth',
                index: 2,
                mac: '02:00:00:00:00:01',
                mtu: 1500,
                up: false,
                peer: { ns: 'x', name: 'y' },
              },
            ],
            addresses: [],
            routes: [],
          },
        ],
      },
      nat: {},
    });
    writeFileSync(statePath, json);
    const e2 = (await dp.listLinks(HOST_NETNS).catch((e: unknown) => e)) as DatapathError;
    expect(e2.message).toMatch(/broken\.json is unreadable \(inconsistent netsim world: veth peer x\/y/);
    expect(readFileSync(statePath, 'utf8')).toBe(json);
  });

  it('carries state between real plugin executions (KEMU_DATAPATH=sim) and refuses a broken file', async () => {
    const statePath = join(dir, 'exec-node.json');
    await createSimDatapath({ statePath }).addNetns(POD_A);
    const repo = fileURLToPath(new URL('../../..', import.meta.url));
    // CNI_PATH holds kemu-host-local the way an install would: an executable the bridge plugin delegates to.
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, 'kemu-host-local'),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --conditions=@kemu/source --import tsx ${JSON.stringify(join(repo, 'packages/cni-host-local/src/main.ts'))}\n`,
      { mode: 0o755 },
    );
    const conf = JSON.stringify({
      cniVersion: '1.1.0',
      name: 'execnet',
      type: 'kemu-bridge',
      bridge: 'kemu0',
      isDefaultGateway: true,
      ipam: {
        type: 'kemu-host-local',
        ranges: [[{ subnet: '10.77.0.0/24' }]],
        dataDir: join(dir, 'exec-ipam'),
      },
    });
    const plugin = (command: string) =>
      new Promise<{ code: number; out: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          ['--conditions=@kemu/source', '--import', 'tsx', join(repo, 'packages/cni-bridge/src/main.ts')],
          {
            cwd: repo,
            env: {
              PATH: process.env.PATH,
              CNI_COMMAND: command,
              CNI_CONTAINERID: 'ctr-exec',
              CNI_NETNS: POD_A,
              CNI_IFNAME: 'eth0',
              CNI_PATH: bin,
              KEMU_DATAPATH: 'sim',
              KEMU_NETSIM_STATE: statePath,
            },
            stdio: ['pipe', 'pipe', 'inherit'],
          },
        );
        let out = '';
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString();
        });
        child.on('close', (c) => resolve({ code: c ?? -1, out }));
        child.stdin.end(conf);
      });
    const add = await plugin('ADD');
    expect(add.code).toBe(0);
    expect(JSON.parse(add.out).ips[0].address).toBe('10.77.0.2/24');
    // A later process (here: this one) finds what the plugin process built, and it carries traffic.
    const dp = createSimDatapath({ statePath });
    expect((await dp.getLink(POD_A, 'eth0'))?.up).toBe(true);
    expect((await dp.ping(POD_A, '10.77.0.1')).reachable).toBe(true);
    const del = await plugin('DEL');
    expect(del.code).toBe(0);
    expect((await dp.listLinks(POD_A)).map((l) => l.name)).toEqual(['lo']);

    writeFileSync(statePath, 'not json');
    const bad = await plugin('ADD');
    expect(bad.code).not.toBe(0);
    const err = JSON.parse(bad.out);
    expect(err.code).toBe(5);
    expect(err.msg).toContain(statePath);
    expect(readFileSync(statePath, 'utf8')).toBe('not json');
  }, 60_000);

  it('serialises concurrent plugin processes on the state file lock', async () => {
    const statePath = join(dir, 'concurrent.json');
    const here = fileURLToPath(new URL('./datapath-sim.ts', import.meta.url));
    const script = join(dir, 'child.mts');
    writeFileSync(
      script,
      `import { createSimDatapath } from ${JSON.stringify(here)};
const [statePath, id] = process.argv.slice(2);
const dp = createSimDatapath({ statePath });
for (let i = 0; i < 5; i++) {
  const ns = '/var/run/netns/p' + id + '-' + i;
  await dp.addNetns(ns);
  await dp.addLink('host', { kind: 'veth', name: 'v' + id + '-' + i, peer: { name: 'eth0', netns: ns } });
}
`,
    );
    const run = (id: number) =>
      new Promise<number>((resolve) => {
        const child = spawn(
          process.execPath,
          ['--conditions=@kemu/source', '--import', 'tsx', script, statePath, String(id)],
          {
            cwd: fileURLToPath(new URL('..', import.meta.url)),
            stdio: ['ignore', 'ignore', 'inherit'],
          },
        );
        child.on('close', (c) => resolve(c ?? -1));
      });
    const codes = await Promise.all([1, 2, 3, 4].map(run));
    expect(codes).toEqual([0, 0, 0, 0]);
    const dp = createSimDatapath({ statePath });
    const names = (await dp.listLinks(HOST_NETNS)).map((l) => l.name).filter((n) => n.startsWith('v'));
    expect(names).toHaveLength(20);
    expect(existsSync(`${statePath}.${process.pid}.tmp`)).toBe(false);
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------------------
// Equivalence with the kernel: the same operations through the linux datapath (in throwaway namespaces)
// and through the sim datapath must end in the same state, and pings must agree.

const canNetns = requirePeers('the sim/linux equivalence tests', [peers.netns, peers.ping]);

interface Normal {
  links: Record<
    string,
    Pick<LinkInfo, 'kind' | 'mtu' | 'up' | 'master' | 'hairpin' | 'vxlan'> & { peer?: string }
  >;
  addrs: string[];
  routes: string[];
  neighs: string[];
}

/**
 * One comparable form: names not MACs/ifindexes, main table only, kernel-generated IPv6 link-local left
 * out. `hairpin` overrides port flags read from the kernel itself (`bridge -j -d link show`), because the
 * linux datapath does not report them in LinkInfo.
 */
async function normalise(
  dp: Datapath,
  netns: NetnsRef,
  peerNames: Map<number, string>,
  hairpin?: Map<string, boolean>,
): Promise<Normal> {
  const links: Normal['links'] = {};
  for (const l of await dp.listLinks(netns)) {
    const n: Normal['links'][string] = { kind: l.kind, mtu: l.mtu, up: l.up, master: l.master };
    if (l.master) n.hairpin = hairpin?.get(l.name) ?? l.hairpin ?? false;
    if (l.peerIndex !== undefined) n.peer = peerNames.get(l.peerIndex) ?? '?';
    if (l.vxlan) n.vxlan = l.vxlan;
    links[l.name] = n;
  }
  const addrs = (await dp.listAddrs(netns))
    .filter((a) => a.scope !== 'link')
    .map((a) => `${a.link} ${a.cidr}`)
    .sort();
  const routeText = (r: RouteInfo) =>
    `${r.dst} ${r.type ?? 'unicast'}${r.via ? ` via ${r.via}` : ''}${r.dev ? ` dev ${r.dev}` : ''}${r.onlink ? ' onlink' : ''}${r.src ? ` src ${r.src}` : ''}${r.metric ? ` metric ${r.metric}` : ''} scope ${r.scope}`;
  const routes = (await dp.listRoutes(netns, { table: 254 }))
    .filter((r) => !r.dst.startsWith('fe80:') && !r.dst.startsWith('ff00:'))
    .map(routeText)
    .sort();
  const neighs = (await dp.listNeighs(netns))
    // The kernel's own multicast entries (IGMP 224.0.0.22, MLD ff02::16, ...) are not plugin state.
    .filter((n) => !n.ip.startsWith('fe80:') && !n.ip.startsWith('ff') && !/^2(2[4-9]|3\d)\./.test(n.ip))
    .map((n) => `${n.dev} ${n.ip}${n.permanent ? ' permanent' : ''}`)
    .sort();
  return { links, addrs, routes, neighs };
}

async function peerNameMap(dp: Datapath, namespaces: NetnsRef[]): Promise<Map<number, string>> {
  const m = new Map<number, string>();
  for (const ns of namespaces) for (const l of await dp.listLinks(ns)) m.set(l.index, l.name);
  return m;
}

describe.runIf(canNetns)('sim datapath agrees with the linux datapath', () => {
  const tag = `kemu-test-${process.pid}`;
  const names = [`${tag}-host`, `${tag}-a`, `${tag}-b`, `${tag}-c`];
  const paths = names.map((n) => `/run/netns/${n}`);
  let linux: Datapath;
  let sim: SimDatapath;

  beforeAll(async () => {
    for (const n of names) {
      const r = spawnSync('ip', ['netns', 'add', n]);
      if (r.status !== 0) throw new Error(`ip netns add ${n}: ${r.stderr}`);
    }
    spawnSync('ip', ['-n', names[0]!, 'link', 'set', 'lo', 'up']);
    const { createLinuxDatapath } = await import('./datapath-linux.js');
    linux = createLinuxDatapath({ hostNetns: paths[0] });
    sim = createSimDatapath({ hostNetns: paths[0] });
    for (const p of paths.slice(1)) await sim.addNetns(p);
  });

  afterAll(async () => {
    await linux?.close?.();
    for (const n of names) spawnSync('ip', ['netns', 'delete', n]);
  });

  it('ends in the same addresses, routes, neighbours and link settings; pings agree', async () => {
    const [, a, b, c] = paths as [string, string, string, string];
    for (const dp of [linux, sim]) {
      await attach(dp, {
        netns: a,
        hostIf: 'kveth-a',
        ip: '10.88.0.2',
        gw: '10.88.0.1',
        prefix: 16,
        ip6: 'fd88::2',
        gw6: 'fd88::1',
      });
      await attach(dp, {
        netns: b,
        hostIf: 'kveth-b',
        ip: '10.88.0.3',
        gw: '10.88.0.1',
        prefix: 16,
        ip6: 'fd88::3',
        gw6: 'fd88::1',
      });
      // A third container whose interface stays down, and an overlay-style route + permanent neighbour.
      await dp.addLink(HOST_NETNS, { kind: 'veth', name: 'kveth-c', peer: { name: 'eth0', netns: c } });
      await dp.addAddr(c, 'eth0', '10.99.0.2/24');
      // (a veth pair rather than a dummy: the dummy module is not always loadable in CI containers)
      await dp.addLink(HOST_NETNS, {
        kind: 'veth',
        name: 'kdummy0',
        peer: { name: 'kdummy1', netns: HOST_NETNS },
      });
      await dp.setLink(HOST_NETNS, 'kdummy0', { up: true });
      await dp.addAddr(HOST_NETNS, 'kdummy0', '192.168.77.1/24');
      await dp.addRoute(HOST_NETNS, { dst: '10.200.0.0/24', via: '192.168.77.2', dev: 'kdummy0' });
      await dp.addRoute(HOST_NETNS, { dst: '10.201.0.0/24', type: 'blackhole' });
      await dp.setNeigh(HOST_NETNS, {
        ip: '192.168.77.2',
        mac: '0a:00:00:00:77:02',
        dev: 'kdummy0',
        permanent: true,
      });
      await dp.setLink(HOST_NETNS, 'kveth-b', { mtu: 1400 });
      // Flannel-style VXLAN: device on the underlay, /32 address, on-link route, permanent neighbour + FDB.
      await dp.addLink(HOST_NETNS, {
        kind: 'vxlan',
        name: 'kvx0',
        vxlan: { vni: 42, port: 4789, local: '192.168.77.1', dev: 'kdummy0', learning: false },
      });
      await dp.setLink(HOST_NETNS, 'kvx0', { up: true });
      await dp.addAddr(HOST_NETNS, 'kvx0', '10.202.5.0/32');
      await dp.setNeigh(HOST_NETNS, {
        ip: '10.202.6.0',
        mac: '0a:00:00:00:06:00',
        dev: 'kvx0',
        permanent: true,
      });
      await dp.setFdb(HOST_NETNS, {
        mac: '0a:00:00:00:06:00',
        dev: 'kvx0',
        dst: '192.168.77.2',
        permanent: true,
      });
      await dp.addRoute(HOST_NETNS, { dst: '10.202.6.0/24', via: '10.202.6.0', dev: 'kvx0', onlink: true });
      await dp.addLink(HOST_NETNS, { kind: 'vxlan', name: 'kvx1', vxlan: { vni: 43 } });
      await dp.delRoute(b, { dst: '0.0.0.0/0', via: '10.88.0.1', dev: 'eth0' });
    }
    const all = paths.map((p, i) => (i === 0 ? HOST_NETNS : p));
    // Linux keeps new IPv6 addresses tentative until duplicate address detection is done; wait for it
    // (up to 15 s: on a loaded CI machine DAD has been seen to take more than 5).
    for (let i = 0; i < 150; i++) {
      const tentative = names.some(
        (n) =>
          spawnSync('ip', ['-n', n, '-6', 'addr', 'show', 'tentative'], {
            encoding: 'utf8',
          }).stdout.trim() !== '',
      );
      if (!tentative) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const pairs: [NetnsRef, string][] = [
      [a, '10.88.0.3'],
      [a, '10.88.0.1'],
      [b, '10.88.0.2'],
      [a, '192.168.77.1'],
      [b, '192.168.77.1'],
      [a, '10.88.0.50'],
      [c, '10.99.0.1'],
      [a, 'fd88::3'],
      [b, 'fd88::1'],
      [a, 'fd88::50'],
    ];
    const linuxPing = pairs.map(([from, to]) => {
      const ns = from === HOST_NETNS ? names[0]! : from.slice('/run/netns/'.length);
      // -W 1 bounds the wait for the unreachable ones; ARP resolution fits well inside it.
      return spawnSync('ip', ['netns', 'exec', ns, 'ping', '-c', '1', '-W', '1', to]).status === 0;
    });
    const simPing = [];
    for (const [from, to] of pairs) simPing.push((await sim.ping(from, to, { trace: false })).reachable);
    expect(simPing).toEqual(linuxPing);
    expect(simPing).toEqual([true, true, true, true, false, false, false, true, true, false]);

    const lp = await peerNameMap(linux, all);
    const sp = await peerNameMap(sim, all);
    const kernelPorts = JSON.parse(
      spawnSync('ip', ['netns', 'exec', names[0]!, 'bridge', '-j', '-d', 'link', 'show'], {
        encoding: 'utf8',
      }).stdout,
    ) as { ifname: string; hairpin?: boolean }[];
    const hairpin = new Map(kernelPorts.map((p) => [p.ifname, p.hairpin ?? false]));
    for (const ns of all) {
      const want = await normalise(linux, ns, lp, ns === HOST_NETNS ? hairpin : undefined);
      const got = await normalise(sim, ns, sp);
      expect({ ns, ...got }).toEqual({ ns, ...want });
    }
  }, 60_000);
});

describe.runIf(canNetns)('kemu plugins give the same network on the linux and the sim datapath', () => {
  const tag = `kemu-test-${process.pid}-p`;
  const names = [`${tag}-host`, `${tag}-a`, `${tag}-b`, `${tag}-c`];
  const paths = names.map((n) => `/run/netns/${n}`);
  let dir: string;
  let linux: Datapath;
  let sim: SimDatapath;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kemu-simeq-'));
    for (const n of names) {
      const r = spawnSync('ip', ['netns', 'add', n]);
      if (r.status !== 0) throw new Error(`ip netns add ${n}: ${r.stderr}`);
    }
    spawnSync('ip', ['-n', names[0]!, 'link', 'set', 'lo', 'up']);
    const { createLinuxDatapath } = await import('./datapath-linux.js');
    linux = createLinuxDatapath({ hostNetns: paths[0] });
    sim = createSimDatapath({ hostNetns: paths[0] });
    for (const p of paths.slice(1)) await sim.addNetns(p);
  });

  afterAll(async () => {
    await linux?.close?.();
    for (const n of names) spawnSync('ip', ['netns', 'delete', n]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('bridge + host-local + portmap + loopback: ADD a, b, c, DEL c; same state, same ping results', async () => {
    const [{ bridge }, { hostLocal }, { portmap }, { loopback }] = await Promise.all([
      import('@kemu/cni-bridge'),
      import('@kemu/cni-host-local'),
      import('@kemu/cni-portmap'),
      import('@kemu/cni-loopback'),
    ]);
    const [, a, b, c] = paths as [string, string, string, string];
    const run = async (dp: Datapath, which: string) => {
      const list = parseConfList(
        Buffer.from(
          JSON.stringify({
            cniVersion: '1.1.0',
            name: 'eqnet',
            plugins: [
              {
                type: 'kemu-bridge',
                bridge: 'kemueq0',
                isGateway: true,
                isDefaultGateway: true,
                ipMasq: true,
                hairpinMode: true,
                ipam: {
                  type: 'kemu-host-local',
                  ranges: [[{ subnet: '10.89.0.0/24' }]],
                  dataDir: join(dir, which, 'ipam'),
                },
              },
              { type: 'kemu-portmap', capabilities: { portMappings: true } },
            ],
          }),
        ),
      );
      const lo = parseConfList(
        Buffer.from(
          JSON.stringify({ cniVersion: '1.1.0', name: 'lo', plugins: [{ type: 'kemu-loopback' }] }),
        ),
      );
      const invoker = new InProcessInvoker({ plugins: [bridge, hostLocal, portmap, loopback], datapath: dp });
      const rt = new CniRuntime({ cacheDir: join(dir, which, 'cache'), invoker });
      const results = [];
      for (const [i, ns] of [a, b, c].entries()) {
        await rt.addNetworkList(lo, { containerId: `ctr${i}`, netns: ns, ifname: 'lo' });
        const r = await rt.addNetworkList(list, {
          containerId: `ctr${i}`,
          netns: ns,
          ifname: 'eth0',
          capabilityArgs: { portMappings: [{ hostPort: 18080 + i, containerPort: 80, protocol: 'tcp' }] },
        });
        results.push(r.ips?.map((x) => `${x.address} gw ${x.gateway}`));
      }
      await rt.delNetworkList(list, {
        containerId: 'ctr2',
        netns: c,
        ifname: 'eth0',
        capabilityArgs: { portMappings: [{ hostPort: 18082, containerPort: 80, protocol: 'tcp' }] },
      });
      return results;
    };
    const linuxResults = await run(linux, 'linux');
    const simResults = await run(sim, 'sim');
    expect(simResults).toEqual(linuxResults);
    expect(simResults[0]).toEqual(['10.89.0.2/24 gw 10.89.0.1']);

    const all = paths.map((p, i) => (i === 0 ? HOST_NETNS : p));
    const pairs: [NetnsRef, string][] = [
      [a, '10.89.0.3'],
      [b, '10.89.0.2'],
      [a, '10.89.0.1'],
      [HOST_NETNS, '10.89.0.3'],
      [a, '10.89.0.4'],
      [c, '10.89.0.1'],
    ];
    const linuxPing = pairs.map(([from, to]) => {
      const ns = from === HOST_NETNS ? names[0]! : from.slice('/run/netns/'.length);
      return spawnSync('ip', ['netns', 'exec', ns, 'ping', '-c', '1', '-W', '1', to]).status === 0;
    });
    const simPing = [];
    for (const [from, to] of pairs) simPing.push((await sim.ping(from, to, { trace: false })).reachable);
    expect(simPing).toEqual(linuxPing);
    expect(simPing).toEqual([true, true, true, true, false, false]);

    const lp = await peerNameMap(linux, all);
    const sp = await peerNameMap(sim, all);
    const kernelPorts = JSON.parse(
      spawnSync('ip', ['netns', 'exec', names[0]!, 'bridge', '-j', '-d', 'link', 'show'], {
        encoding: 'utf8',
      }).stdout,
    ) as { ifname: string; hairpin?: boolean }[];
    const hairpin = new Map(kernelPorts.map((p) => [p.ifname, p.hairpin ?? false]));
    for (const ns of all) {
      const want = await normalise(linux, ns, lp, ns === HOST_NETNS ? hairpin : undefined);
      const got = await normalise(sim, ns, sp);
      expect({ ns, ...got }).toEqual({ ns, ...want });
      if (ns === HOST_NETNS) expect(got.links.kemueq0).toMatchObject({ kind: 'bridge', up: true });
      if (ns === a) expect(got.addrs).toEqual(['eth0 10.89.0.2/24', 'lo 127.0.0.1/8', 'lo ::1/128']);
    }
    // The NAT the plugins asked for, as each datapath reports it.
    const nat = async (dp: Datapath) =>
      (await dp.listNatRules(HOST_NETNS))
        .map((r) =>
          r.kind === 'dnat'
            ? `dnat ${r.protocol} ${r.hostPort} -> ${r.toIP}:${r.toPort}`
            : `masquerade ${r.src}`,
        )
        .sort();
    expect(await nat(sim)).toEqual(await nat(linux));
    expect(await nat(sim)).toEqual([
      'dnat tcp 18080 -> 10.89.0.2:80',
      'dnat tcp 18081 -> 10.89.0.3:80',
      'masquerade 10.89.0.2/32',
      'masquerade 10.89.0.3/32',
    ]);
  }, 60_000);
});

describe.runIf(canNetns)('VXLAN between two nodes: linux and sim agree', () => {
  const tag = `kemu-test-${process.pid}-vx`;
  const names = [`${tag}-n1`, `${tag}-n2`];
  const paths = names.map((n) => `/run/netns/${n}`);
  let linux: Datapath;
  let sim: SimDatapath;

  beforeAll(async () => {
    for (const n of names) {
      const r = spawnSync('ip', ['netns', 'add', n]);
      if (r.status !== 0) throw new Error(`ip netns add ${n}: ${r.stderr}`);
    }
    const { createLinuxDatapath } = await import('./datapath-linux.js');
    linux = createLinuxDatapath({ hostNetns: paths[0] });
    sim = createSimDatapath({ hostNetns: paths[0] });
    await sim.addNetns(paths[1]!);
  });

  afterAll(async () => {
    await linux?.close?.();
    for (const n of names) spawnSync('ip', ['netns', 'delete', n]);
  });

  it('an L2 overlay with a flood entry per remote carries ARP and pings; learned state matches', async () => {
    const n2 = paths[1]!;
    for (const dp of [linux, sim]) {
      await dp.addLink(HOST_NETNS, { kind: 'veth', name: 'under0', peer: { name: 'under0', netns: n2 } });
      for (const [ns, i] of [
        [HOST_NETNS, 1],
        [n2, 2],
      ] as const) {
        await dp.setLink(ns, 'lo', { up: true });
        await dp.setLink(ns, 'under0', { up: true });
        await dp.addAddr(ns, 'under0', `192.168.90.${i}/24`);
        await dp.addLink(ns, {
          kind: 'vxlan',
          name: 'vx7',
          vxlan: { vni: 7, port: 4789, local: `192.168.90.${i}`, dev: 'under0' },
        });
        await dp.setLink(ns, 'vx7', { up: true });
        await dp.addAddr(ns, 'vx7', `10.30.0.${i}/24`);
        // The kernel refuses "replace" for flood entries, so setFdb cannot program one on either datapath...
        expect(
          await code(dp.setFdb(ns, { mac: '00:00:00:00:00:00', dev: 'vx7', dst: `192.168.90.${3 - i}` })),
        ).toBe('ENOTSUP');
      }
    }
    // ...and they are appended the way `bridge fdb append` does it.
    for (const [ns, i] of [
      [HOST_NETNS, 1],
      [n2, 2],
    ] as const) {
      const name = ns === HOST_NETNS ? names[0]! : names[1]!;
      const r = spawnSync('ip', [
        'netns',
        'exec',
        name,
        'bridge',
        'fdb',
        'append',
        '00:00:00:00:00:00',
        'dev',
        'vx7',
        'dst',
        `192.168.90.${3 - i}`,
      ]);
      expect(r.status).toBe(0);
      await sim.withWorld(
        (w) =>
          w.addFdb(
            ns === HOST_NETNS ? 'host' : ns,
            'vx7',
            { mac: '00:00:00:00:00:00', dst: `192.168.90.${3 - i}` },
            'append',
          ),
        {
          write: true,
        },
      );
    }
    const pairs: [NetnsRef, string][] = [
      [HOST_NETNS, '10.30.0.2'],
      [n2, '10.30.0.1'],
      [HOST_NETNS, '10.30.0.9'],
    ];
    const linuxPing = pairs.map(([from, to]) => {
      const ns = from === HOST_NETNS ? names[0]! : names[1]!;
      return spawnSync('ip', ['netns', 'exec', ns, 'ping', '-c', '1', '-W', '1', to]).status === 0;
    });
    const simPing = [];
    for (const [from, to] of pairs) simPing.push((await sim.ping(from, to, { trace: false })).reachable);
    expect(simPing).toEqual(linuxPing);
    expect(simPing).toEqual([true, true, false]);
    const all = [HOST_NETNS, n2];
    const lp = await peerNameMap(linux, all);
    const sp = await peerNameMap(sim, all);
    for (const ns of all) {
      const want = await normalise(linux, ns, lp);
      const got = await normalise(sim, ns, sp);
      expect({ ns, ...got }).toEqual({ ns, ...want });
    }
    // Both learned the remote VTEP of the peer's VXLAN MAC (kernel learning is on by default).
    const learned = async (dp: Datapath, ns: NetnsRef, peerNs: NetnsRef) => {
      const peerMac = (await dp.getLink(peerNs, 'vx7'))!.mac;
      return (await dp.listFdb(ns, 'vx7')).find((e) => e.mac === peerMac)?.dst;
    };
    expect(await learned(sim, HOST_NETNS, n2)).toBe('192.168.90.2');
    expect(await learned(linux, HOST_NETNS, n2)).toBe('192.168.90.2');
  }, 60_000);
});
