// Three simulated nodes in one netsim world, joined by an underlay bridge, with the VXLAN overlay between them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETNS, InProcessInvoker } from '@kemu/cni';
import { createSimDatapath, type SimDatapath } from '@kemu/cni/datapath-sim';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { createMemoryStore, type Store } from '@kemu/core';
import { formatTrace, World } from '@kemu/netsim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { ANNOTATIONS, VxlanAgent } from './agent.js';
import { vxlan } from './plugin.js';

const haveTshark = requirePeers('the tshark decode of the vxlan netsim capture', [peers.tshark]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-vxlan-sim-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface SimNode {
  name: string;
  ip: string;
  dp: SimDatapath;
  agent: VxlanAgent;
  invoker: InProcessInvoker;
}

const NODES = [
  { name: 'node-a', ip: '192.168.50.11' },
  { name: 'node-b', ip: '192.168.50.12' },
  { name: 'node-c', ip: '192.168.50.13' },
];

let world: World;
let store: Store;
const nodes: SimNode[] = [];

function nodeNs(name: string) {
  return `/run/kemu/nodes/${name}`;
}

async function addPod(n: SimNode, pod: string): Promise<string> {
  const netns = `/var/run/netns/${pod}`;
  await n.dp.addNetns(netns);
  const conf = {
    cniVersion: '1.0.0',
    name: 'overlay',
    type: 'kemu-vxlan',
    subnetFile: join(tmp, n.name, 'subnet.env'),
    dataDir: join(tmp, n.name, 'flannel'),
    ipam: { dataDir: join(tmp, n.name, 'ipam') },
  };
  const env = {
    CNI_COMMAND: 'ADD',
    CNI_CONTAINERID: pod,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
  };
  const out = await n.invoker.invoke('kemu-vxlan', env, JSON.stringify(conf));
  expect(out.exitCode, out.stdout).toBe(0);
  return (JSON.parse(out.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
}

beforeAll(async () => {
  world = new World({ seed: 6 });
  store = await createMemoryStore();
  const under = createSimDatapath({ world, hostNamespace: '/run/kemu/underlay' });
  await under.addLink(HOST_NETNS, { kind: 'bridge', name: 'br-under', up: true });
  for (const [i, spec] of NODES.entries()) {
    await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: spec.name }, spec: {} });
    const dp = createSimDatapath({ world, hostNamespace: nodeNs(spec.name) });
    await under.addLink(HOST_NETNS, {
      kind: 'veth',
      name: `u${i}`,
      up: true,
      peer: { name: 'eth0', netns: nodeNs(spec.name) },
    });
    await under.setLink(HOST_NETNS, `u${i}`, { master: 'br-under' });
    await dp.setLink(HOST_NETNS, 'eth0', { up: true });
    await dp.addAddr(HOST_NETNS, 'eth0', `${spec.ip}/24`);
    const agent = new VxlanAgent({
      store,
      datapath: dp,
      node: spec.name,
      publicIp: spec.ip,
      underlayDevice: 'eth0',
      subnetFile: join(tmp, spec.name, 'subnet.env'),
    });
    const invoker = new InProcessInvoker({ plugins: [vxlan, bridge, hostLocal], datapath: dp });
    nodes.push({ name: spec.name, ip: spec.ip, dp, agent, invoker });
  }
  for (const n of nodes) await n.agent.start();
  for (const n of nodes) await n.agent.reconcile();
});

afterAll(async () => {
  for (const n of nodes) await n.agent.stop();
  await store?.close();
});

describe('kemu-vxlan on netsim: three nodes on one underlay', () => {
  it('leases one subnet per node and publishes the VTEP on the Node', async () => {
    const subnets = nodes.map((n) => n.agent.podSubnet);
    expect(subnets).toEqual(['10.244.0.0/24', '10.244.1.0/24', '10.244.2.0/24']);
    const a = await store.get('Node', '', 'node-a');
    expect(a.spec?.podCIDR).toBe('10.244.0.0/24');
    expect(a.metadata.annotations?.[ANNOTATIONS.publicIp]).toBe('192.168.50.11');
    expect(JSON.parse(a.metadata.annotations![ANNOTATIONS.backendData]!)).toEqual({
      VNI: 1,
      VtepMAC: nodes[0]!.agent.vtepMac,
    });
    const link = await nodes[0]!.dp.getLink(HOST_NETNS, 'flannel.1');
    expect(link).toMatchObject({ kind: 'vxlan', up: true, vxlan: { vni: 1, port: 8472, learning: false } });
  });

  it('programs one route, one neighbour and one FDB entry per remote node', async () => {
    const a = nodes[0]!;
    const routes = (await a.dp.listRoutes(HOST_NETNS, { dev: 'flannel.1', family: 4 })).filter((r) => r.via);
    expect(routes.map((r) => [r.dst, r.via, r.onlink]).sort()).toEqual([
      ['10.244.1.0/24', '10.244.1.0', true],
      ['10.244.2.0/24', '10.244.2.0', true],
    ]);
    const neigh = (await a.dp.listNeighs(HOST_NETNS, 'flannel.1'))
      .map((x) => [x.ip, x.mac, x.permanent])
      .sort();
    expect(neigh).toEqual([
      ['10.244.1.0', nodes[1]!.agent.vtepMac, true],
      ['10.244.2.0', nodes[2]!.agent.vtepMac, true],
    ]);
    const fdb = (await a.dp.listFdb(HOST_NETNS, 'flannel.1'))
      .filter((f) => f.dst)
      .map((f) => [f.mac, f.dst])
      .sort();
    expect(fdb).toEqual(
      [
        [nodes[1]!.agent.vtepMac, '192.168.50.12'],
        [nodes[2]!.agent.vtepMac, '192.168.50.13'],
      ].sort(),
    );
  });

  it('lets pods on different nodes ping each other through VXLAN, and the pcap decodes in tshark with the VNI', async () => {
    const ipA = await addPod(nodes[0]!, 'pod-a');
    const ipB = await addPod(nodes[1]!, 'pod-b');
    const ipC = await addPod(nodes[2]!, 'pod-c');
    expect(ipA).toBe('10.244.0.2');
    expect(ipB).toBe('10.244.1.2');
    expect(ipC).toBe('10.244.2.2');
    world.clearCaptures();
    const r = world.ping('/var/run/netns/pod-a', ipB, { count: 2 });
    expect(r.received, formatTrace(r.trace)).toBe(2);
    const encap = r.trace.filter((h) => h.kind === 'encap');
    const decap = r.trace.filter((h) => h.kind === 'decap');
    // Request encapsulated on node-a towards node-b, reply the other way, both with VNI 1 on port 8472.
    expect(
      encap.some(
        (h) =>
          h.ns === nodeNs('node-a') && /vni 1 192\.168\.50\.11:\d+ -> 192\.168\.50\.12:8472/.test(h.detail),
      ),
    ).toBe(true);
    expect(
      encap.some(
        (h) =>
          h.ns === nodeNs('node-b') && /vni 1 192\.168\.50\.12:\d+ -> 192\.168\.50\.11:8472/.test(h.detail),
      ),
    ).toBe(true);
    expect(
      decap.some((h) => h.ns === nodeNs('node-b') && /vxlan vni 1 from 192\.168\.50\.11/.test(h.detail)),
    ).toBe(true);
    expect(
      decap.some((h) => h.ns === nodeNs('node-a') && /vxlan vni 1 from 192\.168\.50\.12/.test(h.detail)),
    ).toBe(true);
    // node-c's underlay port sees the floods of the underlay bridge at most, never the tunnel traffic.
    expect(r.trace.some((h) => h.ns === nodeNs('node-c') && (h.kind === 'decap' || h.kind === 'encap'))).toBe(
      false,
    );
    expect(world.ping('/var/run/netns/pod-c', ipA, { count: 1 }).received).toBe(1);
    expect(world.ping('/var/run/netns/pod-b', ipC, { count: 1 }).received).toBe(1);

    if (!haveTshark) return;
    const pcap = join(tmp, 'underlay.pcap');
    // node-a's underlay port: both directions of the tunnel pass it.
    writeFileSync(pcap, world.pcap(`${nodeNs('node-a')}/eth0`));
    const ts = spawnSync(
      'tshark',
      [
        '-r',
        pcap,
        '-d',
        'udp.port==8472,vxlan',
        '-Y',
        'vxlan',
        '-T',
        'fields',
        '-e',
        'vxlan.vni',
        '-e',
        'ip.src',
        '-e',
        'ip.dst',
        '-e',
        'icmp.type',
      ],
      { encoding: 'utf8' },
    );
    expect(ts.status, ts.stderr).toBe(0);
    const rows = ts.stdout
      .trim()
      .split('\n')
      .map((l) => l.split('\t'));
    expect(rows.length, ts.stdout).toBeGreaterThanOrEqual(4);
    expect(rows.every((f) => f[0] === '1')).toBe(true);
    // Outer and inner addresses: tshark lists both IP layers.
    expect(
      rows.some(
        (f) => f[1] === '192.168.50.11,10.244.0.2' && f[2] === '192.168.50.12,10.244.1.2' && f[3] === '8',
      ),
      ts.stdout,
    ).toBe(true);
    expect(
      rows.some(
        (f) => f[1] === '192.168.50.12,10.244.1.2' && f[2] === '192.168.50.11,10.244.0.2' && f[3] === '0',
      ),
    ).toBe(true);
  });

  it('removes a departed node’s route, neighbour and FDB entry, and picks up a new node', async () => {
    const a = nodes[0]!;
    await store.delete('Node', '', 'node-c');
    await a.agent.reconcile();
    expect(
      (await a.dp.listRoutes(HOST_NETNS, { dev: 'flannel.1', family: 4 }))
        .filter((r) => r.via)
        .map((r) => r.dst),
    ).toEqual(['10.244.1.0/24']);
    expect((await a.dp.listNeighs(HOST_NETNS, 'flannel.1')).map((x) => x.ip)).toEqual(['10.244.1.0']);
    expect((await a.dp.listFdb(HOST_NETNS, 'flannel.1')).filter((f) => f.dst).map((f) => f.dst)).toEqual([
      '192.168.50.12',
    ]);
    expect(world.ping('/var/run/netns/pod-a', '10.244.2.2', { count: 1 }).received).toBe(0);

    // The watch: a node that joins is programmed without an explicit pass.
    await store.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'node-d',
        annotations: {
          [ANNOTATIONS.backendType]: 'vxlan',
          [ANNOTATIONS.backendData]: JSON.stringify({ VNI: 1, VtepMAC: '0a:58:0a:f4:09:00' }),
          [ANNOTATIONS.publicIp]: '192.168.50.14',
        },
      },
      spec: { podCIDR: '10.244.9.0/24' },
    });
    let found = false;
    for (let i = 0; i < 100 && !found; i++) {
      await new Promise((r) => setTimeout(r, 20));
      await a.agent.settled();
      found = (await a.dp.listRoutes(HOST_NETNS, { dev: 'flannel.1' })).some(
        (r) => r.dst === '10.244.9.0/24' && r.via === '10.244.9.0',
      );
    }
    expect(found).toBe(true);
    expect(
      (await a.dp.listFdb(HOST_NETNS, 'flannel.1')).some(
        (f) => f.mac === '0a:58:0a:f4:09:00' && f.dst === '192.168.50.14',
      ),
    ).toBe(true);
    // A node announcing another VNI is not part of this overlay.
    await store.patch(
      'Node',
      '',
      'node-d',
      { metadata: { annotations: { [ANNOTATIONS.backendData]: '{"VNI":2,"VtepMAC":"0a:58:0a:f4:09:00"}' } } },
      'merge',
    );
    await a.agent.reconcile();
    expect(
      (await a.dp.listRoutes(HOST_NETNS, { dev: 'flannel.1' })).some((r) => r.dst === '10.244.9.0/24'),
    ).toBe(false);
  });
});
