// Big simulated clusters route pod CIDRs in the underlay (a top-of-rack router with one route per node)
// instead of host-gw between every pair of nodes, whose nodes² routes a 5,000-node cluster cannot hold.
// The same path, forced on a small cluster: node -> underlay router -> node, pod addresses intact.
import type { Pod } from '@kemu/core';
import { Cluster, SimClusterNetwork } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from './composed-cluster.js';
import { pinnedPod, until } from './util.js';

describe('the routed underlay', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-routed-', { nodes: 3, fast: true, routedUnderlay: true }, (c) => (cluster = c));

  it('holds one route per node in the underlay and one pod-network route per node', async () => {
    const net = cluster.network as SimClusterNetwork;
    expect(net).toBeInstanceOf(SimClusterNetwork);
    const under = [...net.nodes.values()][0].datapath;
    const routes = (await under.listRoutes('/run/kemu/underlay')).filter((r) => r.via).map((r) => `${r.dst} via ${r.via}`);
    expect(routes.sort()).toEqual(['10.244.1.0/24 via 172.18.0.10', '10.244.2.0/24 via 172.18.0.11', '10.244.3.0/24 via 172.18.0.12']);
    for (const n of net.nodes.values()) {
      const via = (await n.datapath.listRoutes('host')).filter((r) => r.via).map((r) => `${r.dst} via ${r.via}`);
      // The pod network through the underlay router, and the Service range like any off-node address.
      expect(via.sort()).toEqual(['10.244.0.0/16 via 172.18.0.1', '10.96.0.0/12 via 172.18.0.1']);
    }
  });

  it('carries a pod-to-pod packet through the underlay router without NAT', async () => {
    await cluster.store.create(pinnedPod('a', 'kemu-node-1'));
    await cluster.store.create(pinnedPod('b', 'kemu-node-3'));
    const ps = await until('both pods with IPs', async () => {
      const items = (await cluster.store.list('Pod', { namespace: 'default' })).items as Pod[];
      return items.length === 2 && items.every((p) => p.status?.podIP) && items;
    });
    const t = await cluster.trace('a', 'b');
    expect(t.reachable).toBe(true);
    expect(t.text).toContain('kemu-node-1/eth0  route   10.244.0.0/16 via 172.18.0.1 dev eth0');
    expect(t.text).toMatch(/underlay\/kemu-underlay\s+route\s+10\.244\.3\.0\/24 via 172\.18\.0\.12 dev kemu-underlay/);
    const a = ps.find((p) => p.metadata.name === 'a')!;
    const b = ps.find((p) => p.metadata.name === 'b')!;
    expect(t.text).toContain(`IP ${a.status?.podIP} > ${b.status?.podIP}: ICMP echo request, id 1, seq 1, ttl 61`);
  });
});
