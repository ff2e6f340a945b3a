// Calico-style routing on netsim: three simulated nodes on one underlay bridge, calico IPAM blocks per node,
// one BGP speaker per node (over the in-memory transport, the real BGP byte stream) that programs
// `<block> via <node IP>` into the node's simulated datapath. Pods on different nodes ping each other and
// the trace shows every hop, with no encapsulation anywhere. Then the same with a route reflector.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETNS } from '@kemu/cni';
import { createSimDatapath, type SimDatapath } from '@kemu/cni/datapath-sim';
import { CalicoIpam } from '@kemu/cni-calico';
import { createMemoryStore, type Store } from '@kemu/core';
import { formatTrace, type Trace, World } from '@kemu/netsim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { DatapathRouteSink } from './route-sink.js';
import { bgpRoutes, plumbPod, POOL, prepareNode, until } from './routed.test-util.js';
import { BgpSpeaker } from './speaker.js';
import { MemoryNetwork } from './transport.js';

const haveTshark = requirePeers('the tshark decode of the routed netsim capture', [peers.tshark]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-bgp-routed-sim-'));
const nodeNs = (name: string) => `/run/kemu/nodes/${name}`;

interface Node {
  name: string;
  ip: string;
  dp: SimDatapath;
  block: string;
  pod: { ns: string; ip: string };
  speaker?: BgpSpeaker;
}

let world: World;
let store: Store;
let ipam: CalicoIpam;
const nodes: Node[] = [];

beforeAll(async () => {
  world = new World({ seed: 61 });
  store = await createMemoryStore();
  ipam = new CalicoIpam(store);
  await ipam.applyPool('default', POOL);
  const under = createSimDatapath({ world, hostNamespace: '/run/kemu/underlay' });
  await under.addLink(HOST_NETNS, { kind: 'bridge', name: 'br-under', up: true });
  for (const [i, name] of ['node-a', 'node-b', 'node-c'].entries()) {
    const ip = `192.168.60.${11 + i}`;
    const dp = createSimDatapath({ world, hostNamespace: nodeNs(name) });
    await under.addLink(HOST_NETNS, { kind: 'veth', name: `u${i}`, up: true, peer: { name: 'eth0', netns: nodeNs(name) } });
    await under.setLink(HOST_NETNS, `u${i}`, { master: 'br-under' });
    await prepareNode(dp, ip);
    const a = await ipam.assign({ handle: `k8s-pod-network.pod-${name}`, node: name });
    await ipam.syncBlackholes(dp, name);
    const podNs = `/var/run/netns/pod-${name}`;
    await dp.addNetns(podNs);
    await plumbPod(dp, podNs, `cali${i}`, a.ip);
    nodes.push({ name, ip, dp, block: a.block, pod: { ns: podNs, ip: a.ip } });
  }
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.speaker?.destroy()));
  await store?.close();
  rmSync(tmp, { recursive: true, force: true });
});

/** Starts one speaker per node; `reflector` makes that node a route reflector and the others its clients. */
async function startSpeakers(reflector?: string): Promise<void> {
  const net = new MemoryNetwork();
  for (const n of nodes) {
    const isRr = n.name === reflector;
    const peers = nodes.filter((o) => o !== n && (!reflector || isRr || o.name === reflector));
    n.speaker = new BgpSpeaker({
      routerId: n.ip,
      as: 64512,
      listen: { address: n.ip, port: 179 },
      transport: net.transport(n.ip),
      // The lower address waits for the higher one: no connection collisions to sort out.
      neighbors: peers.map((o) => ({ address: o.ip, as: 64512, passive: o.ip > n.ip, rrClient: isRr || undefined })),
      routeReflector: isRr ? { clusterId: '0.0.0.9' } : undefined,
      connectRetryTime: 0.05,
      routeSink: new DatapathRouteSink(n.dp),
    });
    for (const b of await ipam.affineBlocks(n.name)) n.speaker.advertise(b);
  }
  await Promise.all(nodes.map((n) => n.speaker!.listen()));
  await Promise.all(nodes.map((n) => n.speaker!.start()));
}

async function stopSpeakers(): Promise<void> {
  await Promise.all(nodes.map((n) => n.speaker!.stop()));
  for (const n of nodes) {
    await n.speaker!.settled();
    n.speaker = undefined;
  }
}

const expectedRoutes = (n: Node) =>
  nodes
    .filter((o) => o !== n)
    .map((o): [string, string] => [o.block, o.ip])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));

async function converged(): Promise<void> {
  for (const n of nodes) {
    await until(
      async () => JSON.stringify(await bgpRoutes(n.dp)) === JSON.stringify(expectedRoutes(n)),
      `${n.name} to have ${JSON.stringify(expectedRoutes(n))}, has ${JSON.stringify(await bgpRoutes(n.dp))}`,
    );
  }
}

/** Asserts the hop-by-hop path of one echo request from `from`'s pod to `to`'s pod, routed and unencapsulated. */
function expectRoutedPath(trace: Trace, from: Node, to: Node): void {
  const text = formatTrace(trace);
  expect(trace.filter((h) => h.kind === 'encap' || h.kind === 'decap'), text).toEqual([]);
  const fromNode = nodeNs(from.name);
  const toNode = nodeNs(to.name);
  // Request: pod -> its node (route via 169.254.1.1), node -> other node by the BGP route, -> pod.
  const hops = trace.map((h) => ({ ns: h.ns, dev: h.dev, kind: h.kind, detail: h.detail }));
  const idx = (pred: (h: (typeof hops)[number]) => boolean, after = -1) =>
    hops.findIndex((h, i) => i > after && pred(h));
  const podRoute = idx((h) => h.ns === from.pod.ns && h.kind === 'route' && /^default via 169\.254\.1\.1 dev eth0/.test(h.detail));
  const bgpHop = idx(
    (h) => h.ns === fromNode && h.kind === 'route' && h.detail.startsWith(`${to.block} via ${to.ip} dev eth0`),
    podRoute,
  );
  const fwd = idx((h) => h.ns === fromNode && h.kind === 'forward', podRoute);
  const underRx = idx((h) => h.ns === toNode && h.dev === 'eth0' && h.kind === 'rx', bgpHop);
  const toPod = idx((h) => h.ns === toNode && h.kind === 'route' && h.detail.startsWith(`${to.pod.ip} dev cali`), underRx);
  const delivered = idx((h) => h.ns === to.pod.ns && h.kind === 'local', toPod);
  expect([podRoute, fwd, bgpHop, underRx, toPod, delivered].every((i) => i >= 0), text).toBe(true);
  expect(podRoute < bgpHop && bgpHop < underRx && underRx < toPod && toPod < delivered, text).toBe(true);
  // Frames on the underlay carry the pod addresses themselves: no outer header, no NAT.
  const onWire = trace.filter((h) => h.ns === '/run/kemu/underlay' && h.packet?.includes('ICMP'));
  expect(onWire.length, text).toBeGreaterThan(0);
  expect(
    onWire.every((h) => h.packet!.includes(from.pod.ip) && h.packet!.includes(to.pod.ip) && !/vxlan|udp/i.test(h.packet!)),
    text,
  ).toBe(true);
}

describe('BGP-routed pod networking on netsim (calico-style, no encapsulation)', () => {
  it('gives each node its own block, blackholed locally, and plumbs pods calico-style', async () => {
    const blocks = nodes.map((n) => n.block);
    expect(new Set(blocks).size).toBe(3);
    for (const n of nodes) {
      expect(n.block).toMatch(/^10\.250\.\d+\.\d+\/26$/);
      const routes = await n.dp.listRoutes(HOST_NETNS, { family: 4 });
      expect(routes.filter((r) => r.type === 'blackhole').map((r) => r.dst)).toEqual([n.block]);
    }
  });

  it('full mesh: every node learns the other blocks via their node IPs, and pods ping across nodes hop by hop', async () => {
    await startSpeakers();
    await converged();
    for (const n of nodes) {
      for (const p of n.speaker!.peers()) expect(p.state).toBe('Established');
      // AS path is empty inside the AS; the peer the route came from is the owner itself.
      for (const e of n.speaker!.locRib().filter((r) => r.peer !== null)) {
        const owner = nodes.find((o) => o.block === e.prefix)!;
        expect(e).toMatchObject({ nextHop: owner.ip, asPath: [], peer: owner.ip });
      }
    }
    const [a, b, c] = nodes as [Node, Node, Node];
    world.clearCaptures();
    const ab = world.ping(a.pod.ns, b.pod.ip, { count: 2 });
    expect(ab.received, formatTrace(ab.trace)).toBe(2);
    expectRoutedPath(ab.trace, a, b);
    // The reply takes the mirror path: node-b's BGP route back to node-a.
    expect(
      ab.trace.some((h) => h.ns === nodeNs('node-b') && h.kind === 'route' && h.detail.startsWith(`${a.block} via ${a.ip} dev eth0`)),
      formatTrace(ab.trace),
    ).toBe(true);
    const ca = world.ping(c.pod.ns, a.pod.ip, { count: 1 });
    expect(ca.received, formatTrace(ca.trace)).toBe(1);
    expectRoutedPath(ca.trace, c, a);
    const bc = world.ping(b.pod.ns, c.pod.ip, { count: 1 });
    expect(bc.received, formatTrace(bc.trace)).toBe(1);
    expectRoutedPath(bc.trace, b, c);

    if (haveTshark) {
      // The capture of node-a's underlay port decodes as plain ICMP between pod addresses, no VXLAN.
      const pcap = join(tmp, 'routed-underlay.pcap');
      writeFileSync(pcap, world.pcap(`${nodeNs('node-a')}/eth0`));
      const ts = spawnSync(
        'tshark',
        ['-r', pcap, '-d', 'udp.port==4789,vxlan', '-d', 'udp.port==8472,vxlan', '-T', 'fields', '-e', 'vxlan.vni', '-e', 'ip.src', '-e', 'ip.dst', '-e', 'icmp.type', '-Y', 'icmp || vxlan'],
        { encoding: 'utf8' },
      );
      expect(ts.status, ts.stderr).toBe(0);
      const rows = ts.stdout.split('\n').filter(Boolean).map((l) => l.split('\t'));
      expect(rows.length).toBeGreaterThanOrEqual(4);
      expect(rows.every((f) => f[0] === '' && !f[1]!.includes(',')), ts.stdout).toBe(true);
      expect(rows.some((f) => f[1] === a.pod.ip && f[2] === b.pod.ip && f[3] === '8'), ts.stdout).toBe(true);
      expect(rows.some((f) => f[1] === b.pod.ip && f[2] === a.pod.ip && f[3] === '0'), ts.stdout).toBe(true);
    }
  });

  it('a withdrawn block leaves every other node, and traffic to it stops at the sender’s node', async () => {
    const [a, b, c] = nodes as [Node, Node, Node];
    c.speaker!.withdraw(c.block);
    for (const n of [a, b]) {
      await until(async () => !(await bgpRoutes(n.dp)).some((r) => r[0] === c.block), `${n.name} to drop ${c.block}`);
    }
    const r = world.ping(a.pod.ns, c.pod.ip, { count: 1 });
    expect(r.received).toBe(0);
    const drop = r.trace.find((h) => h.kind === 'drop');
    expect(drop?.ns, formatTrace(r.trace)).toBe(nodeNs('node-a'));
    c.speaker!.advertise(c.block);
    await converged();
    expect(world.ping(a.pod.ns, c.pod.ip, { count: 1 }).received).toBe(1);
    await stopSpeakers();
    for (const n of nodes) expect(await bgpRoutes(n.dp)).toEqual([]);
  });

  it('route reflector: clients learn each other’s blocks through node-a with the original next hop, and traffic bypasses it', async () => {
    await startSpeakers('node-a');
    await converged();
    const [a, b, c] = nodes as [Node, Node, Node];
    // node-b has a single session, to the reflector, yet node-c's block points straight at node-c.
    expect(b.speaker!.peers().map((p) => [p.address, p.state])).toEqual([[a.ip, 'Established']]);
    expect(b.speaker!.lookup(c.block)).toMatchObject({
      nextHop: c.ip,
      peer: a.ip,
      originatorId: c.ip,
      clusterList: ['0.0.0.9'],
    });
    // Its Adj-RIB-In from the reflector: node-a's own block and node-c's reflected one.
    expect(b.speaker!.peer(a.ip)!.prefixesReceived).toBe(2);
    expect(b.speaker!.adjRibIn(a.ip).map((e) => [e.prefix, e.nextHop]).sort()).toEqual(
      [[a.block, a.ip], [c.block, c.ip]].sort(),
    );
    const bc = world.ping(b.pod.ns, c.pod.ip, { count: 1 });
    expect(bc.received, formatTrace(bc.trace)).toBe(1);
    expectRoutedPath(bc.trace, b, c);
    // A withdrawal by a client travels through the reflector to the other client.
    c.speaker!.withdraw(c.block);
    await until(async () => !(await bgpRoutes(b.dp)).some((r) => r[0] === c.block), `node-b to drop ${c.block}`);
    expect(b.speaker!.peer(a.ip)!.prefixesReceived).toBe(1);
    expect(b.speaker!.adjRibIn(a.ip).map((e) => e.prefix)).toEqual([a.block]);
    c.speaker!.advertise(c.block);
    await converged();
    // The reflector is in the control plane only: no hop of b<->c traffic touches node-a.
    expect(bc.trace.filter((h) => h.ns === nodeNs('node-a')), formatTrace(bc.trace)).toEqual([]);
    const ab = world.ping(a.pod.ns, b.pod.ip, { count: 1 });
    expect(ab.received, formatTrace(ab.trace)).toBe(1);
    expectRoutedPath(ab.trace, a, b);
    await stopSpeakers();
  });
});
