// The composed cluster with routes between nodes learned over BGP (`kemu up --network bgp`): each node's
// speaker announces its pod CIDR and installs the others' as `via <node IP> proto bgp`, on netsim and in
// real network namespaces alike. Nothing else programs those routes.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HOST_NETNS } from '@kemu/cni';
import type { Pod } from '@kemu/core';
import { Cluster, checkSupported, type LinuxClusterNetwork } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linuxDatapathAvailable, pinnedPod, runningPod } from './util.js';

const linuxOk = linuxDatapathAvailable('the bgp cluster test on the linux datapath');

it('refuses what the bgp network cannot do, saying what to use instead', () => {
  expect(() => checkSupported({ stateDir: '/tmp/x', network: 'bgp', nodeProcesses: true })).toThrow(
    /--network bgp with --node-processes .* drop --node-processes/,
  );
  expect(() => checkSupported({ stateDir: '/tmp/x', network: 'bgp', nodes: 2000 })).toThrow(
    /--network bgp beyond 1000 nodes .* use --network bridge or vxlan/,
  );
});

for (const datapath of ['sim', 'linux'] as const) {
  describe.runIf(datapath === 'sim' || linuxOk)(`routes learned over BGP (${datapath} datapath)`, () => {
    let cluster: Cluster;
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-e2e-bgp-${datapath}-`));
    let a: Pod;
    let b: Pod;

    beforeAll(async () => {
      cluster = await Cluster.start({ stateDir, nodes: 3, fast: true, datapath, network: 'bgp' });
      await cluster.store.create(pinnedPod('a', 'kemu-node-1'));
      await cluster.store.create(pinnedPod('b', 'kemu-node-2'));
      [a, b] = [await runningPod(cluster.store, 'a'), await runningPod(cluster.store, 'b')];
    }, 90_000);

    afterAll(async () => {
      await cluster?.stop();
      fs.rmSync(stateDir, { recursive: true, force: true });
    });

    it('every node peers with every other and holds a bgp route to each other node’s pod CIDR', async () => {
      const status = cluster.network.bgp!.status();
      expect(status.map((s) => [s.node, s.established, s.routes])).toEqual([
        ['kemu-node-1', 2, 2],
        ['kemu-node-2', 2, 2],
        ['kemu-node-3', 2, 2],
      ]);
      const node1 = cluster.network.nodes.get('kemu-node-1')!;
      const learned = (await node1.datapath.listRoutes(HOST_NETNS, { family: 4 }))
        .filter((r) => r.protocol === 'bgp')
        .map((r) => `${r.dst} via ${r.via}`)
        .sort();
      expect(learned).toEqual(['10.244.2.0/24 via 172.18.0.11', '10.244.3.0/24 via 172.18.0.12']);
      expect(a.status?.podIP).toMatch(/^10\.244\.1\./);
      expect(b.status?.podIP).toMatch(/^10\.244\.2\./);
    });

    if (datapath === 'sim') {
      it('carries pod traffic across nodes on the learned route, unencapsulated and without NAT', async () => {
        const t = await cluster.trace('a', 'b');
        expect(t.reachable).toBe(true);
        expect(t.text).toContain('10.244.2.0/24 via 172.18.0.11');
        expect(t.text).toContain(`IP ${a.status?.podIP} > ${b.status?.podIP}: ICMP echo request`);
        // kube-proxy's rules are traversed (nf hops) but nothing is rewritten or encapsulated.
        expect((t.trace as { kind: string }[]).filter((h) => h.kind === 'nat' || h.kind === 'encap')).toEqual([]);
      });
    } else {
      it('pods ping across nodes; the kernel shows the routes as proto bgp', async () => {
        const net = cluster.network as LinuxClusterNetwork;
        const routes = spawnSync('ip', ['-n', `${net.prefix}-kemu-node-1`, '-4', 'route'], { encoding: 'utf8' }).stdout;
        expect(routes).toMatch(/10\.244\.2\.0\/24 via 172\.18\.0\.11 dev eth0 proto bgp/);
        expect(routes).toMatch(/10\.244\.3\.0\/24 via 172\.18\.0\.12 dev eth0 proto bgp/);
        const t = await cluster.trace('a', 'b');
        expect(t.reachable).toBe(true);
      }, 60_000);
    }
  });
}
