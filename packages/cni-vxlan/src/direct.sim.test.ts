// directRouting (flannel DirectRouting / calico CrossSubnet): nodes on one underlay subnet are routed to
// directly, nodes elsewhere through the tunnel.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETNS, InProcessInvoker } from '@kemu/cni';
import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { createMemoryStore } from '@kemu/core';
import { formatTrace, World } from '@kemu/netsim';
import { afterAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { ANNOTATIONS, VxlanAgent } from './agent.js';
import { vxlan } from './plugin.js';

const haveTshark = requirePeers('the tshark decode of the direct-routing netsim capture', [peers.tshark]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-vxlan-direct-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('kemu-vxlan directRouting on netsim', () => {
  it('routes same-subnet nodes without encapsulation and tunnels only to nodes elsewhere', async () => {
    const world = new World({ seed: 9 });
    const store = await createMemoryStore();
    const under = createSimDatapath({ world, hostNamespace: '/run/kemu/underlay' });
    await under.addLink(HOST_NETNS, { kind: 'bridge', name: 'br0', up: true });
    const nodes = [];
    for (const [i, name] of ['node-a', 'node-b'].entries()) {
      const ns = `/run/kemu/nodes/${name}`;
      const ip = `192.168.60.${11 + i}`;
      await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: {} });
      const dp = createSimDatapath({ world, hostNamespace: ns });
      await under.addLink(HOST_NETNS, { kind: 'veth', name: `u${i}`, up: true, peer: { name: 'eth0', netns: ns } });
      await under.setLink(HOST_NETNS, `u${i}`, { master: 'br0' });
      await dp.setLink(HOST_NETNS, 'eth0', { up: true });
      await dp.addAddr(HOST_NETNS, 'eth0', `${ip}/24`);
      const agent = new VxlanAgent({ store, datapath: dp, node: name, publicIp: ip, underlayDevice: 'eth0', directRouting: true, subnetFile: join(tmp, name, 'subnet.env') });
      nodes.push({ name, ns, dp, agent, invoker: new InProcessInvoker({ plugins: [vxlan, bridge, hostLocal], datapath: dp }) });
    }
    // A node on another underlay subnet: only reachable through the tunnel.
    await store.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'node-far',
        annotations: {
          [ANNOTATIONS.backendType]: 'vxlan',
          [ANNOTATIONS.backendData]: JSON.stringify({ VNI: 1, VtepMAC: '0a:58:0a:f4:63:00' }),
          [ANNOTATIONS.publicIp]: '10.99.0.5',
        },
      },
      spec: { podCIDR: '10.244.99.0/24' },
    });
    for (const n of nodes) await n.agent.setup();
    const [ra] = await Promise.all(nodes.map((n) => n.agent.reconcile()));
    expect(ra!.remotes.map((r) => [r.name, r.mode])).toEqual([
      ['node-b', 'direct'],
      ['node-far', 'vxlan'],
    ]);
    const a = nodes[0]!;
    const routes = (await a.dp.listRoutes(HOST_NETNS, { family: 4 })).filter((r) => r.dst.startsWith('10.244.') && r.via);
    expect(routes.map((r) => [r.dst, r.via, r.dev]).sort()).toEqual([
      ['10.244.1.0/24', '192.168.60.12', 'eth0'],
      ['10.244.99.0/24', '10.244.99.0', 'flannel.1'],
    ]);
    expect((await a.dp.listFdb(HOST_NETNS, 'flannel.1')).filter((f) => f.dst).map((f) => f.dst)).toEqual(['10.99.0.5']);
    expect((await a.dp.listNeighs(HOST_NETNS, 'flannel.1')).map((x) => x.ip)).toEqual(['10.244.99.0']);

    const ips: string[] = [];
    for (const [i, n] of nodes.entries()) {
      const netns = `/var/run/netns/dpod-${i}`;
      await n.dp.addNetns(netns);
      const conf = { cniVersion: '1.0.0', name: 'overlay', type: 'kemu-vxlan', subnetFile: join(tmp, n.name, 'subnet.env'), dataDir: join(tmp, n.name, 'fl'), ipam: { dataDir: join(tmp, n.name, 'ipam') } };
      const out = await n.invoker.invoke('kemu-vxlan', { CNI_COMMAND: 'ADD', CNI_CONTAINERID: `d${i}`, CNI_NETNS: netns, CNI_IFNAME: 'eth0', CNI_PATH: '/x' }, JSON.stringify(conf));
      expect(out.exitCode, out.stdout).toBe(0);
      ips.push(JSON.parse(out.stdout).ips[0].address.split('/')[0]);
    }
    world.clearCaptures();
    const r = world.ping('/var/run/netns/dpod-0', ips[1]!, { count: 2 });
    expect(r.received, formatTrace(r.trace)).toBe(2);
    expect(r.trace.some((h) => h.kind === 'encap' || h.kind === 'decap')).toBe(false);
    if (haveTshark) {
      const pcap = join(tmp, 'direct.pcap');
      writeFileSync(pcap, world.pcap(`${a.ns}/eth0`));
      const ts = spawnSync('tshark', ['-r', pcap, '-d', 'udp.port==8472,vxlan', '-T', 'fields', '-e', 'vxlan.vni', '-e', 'ip.src', '-e', 'ip.dst', '-e', 'icmp.type', '-Y', 'icmp || vxlan'], { encoding: 'utf8' });
      expect(ts.status, ts.stderr).toBe(0);
      const rows = ts.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t'));
      expect(rows.length, ts.stdout).toBe(4);
      // Plain routed ICMP between the pod addresses: no VXLAN header, no outer IP.
      expect(rows.every((f) => f[0] === '' && !f[1]!.includes(',')), ts.stdout).toBe(true);
      expect(rows.some((f) => f[1] === ips[0] && f[2] === ips[1] && f[3] === '8')).toBe(true);
    }
    // node-b moves to another underlay subnet: its direct route goes, the tunnel takes over.
    await store.patch('Node', '', 'node-b', { metadata: { annotations: { [ANNOTATIONS.publicIp]: '10.98.0.7' } } }, 'merge');
    const after = await a.agent.reconcile();
    expect(after.remotes.find((x) => x.name === 'node-b')?.mode).toBe('vxlan');
    const routes2 = (await a.dp.listRoutes(HOST_NETNS, { family: 4 })).filter((x) => x.dst.startsWith('10.244.') && x.via);
    expect(routes2.map((x) => [x.dst, x.via, x.dev]).sort()).toEqual([
      ['10.244.1.0/24', '10.244.1.0', 'flannel.1'],
      ['10.244.99.0/24', '10.244.99.0', 'flannel.1'],
    ]);
    expect((await a.dp.listFdb(HOST_NETNS, 'flannel.1')).filter((f) => f.dst).map((f) => f.dst).sort()).toEqual(['10.98.0.7', '10.99.0.5']);
    // The underlay's own routes are untouched.
    expect((await a.dp.listRoutes(HOST_NETNS, { dev: 'eth0', family: 4 })).some((x) => x.dst === '192.168.60.0/24')).toBe(true);
    for (const n of nodes) await n.agent.stop();
  });
});
