// Services on the composed cluster with `kemu up --proxy-mode nftables`: every node's kube-proxy writes
// the `ip kube-proxy` table instead of iptables chains; a pod reaches a ClusterIP and every node's
// NodePort through the verdict maps, a Service without endpoints is rejected before DNAT, and a deleted
// Service's chains go from every node.
import type { Service } from '@kemu/core';
import { Cluster, type SimClusterNetwork } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from './composed-cluster.js';
import { until } from './util.js';
import { startWebService } from './web-service.js';

let cluster: Cluster;
composedCluster('kemu-e2e-nft-', { nodes: 2, fast: true, proxyMode: 'nftables' }, (c) => (cluster = c));

describe('Services through kube-proxy in nftables mode on the simulated datapath', () => {
  it('reaches a ClusterIP Service from another pod through the service-ips map, and a NodePort on every node', async () => {
    await startWebService(cluster);
    const t = await until('the Service answers', async () => {
      const r = (await cluster.trace('client', 'svc/default/web:http')) as { reachable: boolean; text: string };
      return r.reachable && r;
    });
    expect(t.text).toMatch(/nft ip kube-proxy services rule 1: ip daddr \. meta l4proto \. th dport vmap @service-ips: 10\.96\.\d+\.\d+ \. tcp \. 80 -> goto service-[A-Z2-7]{8}-default\/web\/tcp\/http/);
    expect(t.text).toMatch(/dnat to 10\.244\.\d+\.\d+:8080/);
    const world = (cluster.network as SimClusterNetwork).world;
    for (const n of cluster.nodes) expect(world.iptablesSave(`/run/kemu/nodes/${n.name}`, { table: 'nat' })).not.toContain('KUBE-SERVICES');
    const svc = await cluster.store.get('Service', 'default', 'web');
    const nodePort = svc.spec.ports![0]!.nodePort!;
    for (const n of cluster.nodes) {
      // Each node's kube-proxy syncs on its own (at most every 100 ms in a fast cluster).
      const r = await until(`the NodePort on ${n.name}`, async () => {
        const x = (await cluster.trace('client', `${n.ip}:${nodePort}`)) as { reachable: boolean; text: string };
        return x.reachable && x;
      });
      expect(r.text).toContain(`vmap @service-nodeports: tcp . ${nodePort} -> goto external-`);
    }
  });

  it('rejects a Service without endpoints in the filter chain and names it', async () => {
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'nobody', namespace: 'default' },
      spec: { selector: { app: 'nobody' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
    });
    const r = await until('the reject', async () => {
      const x = (await cluster.trace('client', 'svc/default/nobody')) as { reachable: boolean; trace: { kind: string; reason?: string }[] };
      return x.trace.some((h) => h.kind === 'drop' && h.reason === 'rejected: default/nobody:http (@no-endpoint-services)') && x;
    });
    expect(r.reachable).toBe(false);
  });

  it('removes the chains and map elements of a deleted Service from every node', async () => {
    await cluster.store.delete('Service', 'default', 'web');
    const world = (cluster.network as SimClusterNetwork).world;
    await until('no trace of default/web on any node', async () =>
      cluster.nodes.every((n) => !world.nftList(`/run/kemu/nodes/${n.name}`, 'ip', 'kube-proxy').includes('default/web/')),
    );
  });
});
