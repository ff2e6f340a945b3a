// Services on the composed cluster (sim datapath): the endpoint-slice controller and every node's
// kube-proxy turn a Service into rules, a client pod reaches it by ClusterIP and NodePort with replies
// un-NATed, the trace names each rule, a Service without endpoints is rejected (kemu trace exits 1), and
// the rules go when the Service goes.
import type { Service } from '@kemu/core';
import { Cluster, type SimClusterNetwork } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from './composed-cluster.js';
import { until } from './util.js';
import { startWebService } from './web-service.js';

let cluster: Cluster;
composedCluster('kemu-e2e-svc-', { nodes: 2, fast: true }, (c) => (cluster = c));

describe('Services through kube-proxy on the simulated datapath', () => {
  it('reaches a ClusterIP Service by name from another pod, with the path rule by rule', async () => {
    await startWebService(cluster);
    const t = await until('the Service answers', async () => {
      const r = (await cluster.trace('client', 'svc/default/web:http')) as { reachable: boolean; text: string };
      return r.reachable && r;
    });
    expect(t.text).toMatch(/nat KUBE-SERVICES rule \d+: -A KUBE-SERVICES -d 10\.96\.\d+\.\d+\/32 -p tcp -m comment --comment "default\/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-/);
    expect(t.text).toMatch(/-j DNAT --to-destination 10\.244\.\d+\.\d+:8080/);
  });

  it('answers on the NodePort of every node', async () => {
    const svc = await cluster.store.get('Service', 'default', 'web');
    const nodePort = svc.spec.ports![0]!.nodePort!;
    expect(nodePort).toBeGreaterThanOrEqual(30000);
    for (const n of cluster.nodes) {
      const r = (await cluster.trace('client', `${n.ip}:${nodePort}`)) as { reachable: boolean; text: string };
      expect([n.name, r.reachable]).toEqual([n.name, true]);
      expect(r.text).toContain('KUBE-NODEPORTS');
    }
  });

  it('gives a LoadBalancer Service a pool address that pods reach', async () => {
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web-lb', namespace: 'default' },
      spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
    });
    const ip = await until('a load-balancer address', async () => (await cluster.store.get('Service', 'default', 'web-lb')).status?.loadBalancer?.ingress?.[0]?.ip);
    expect(ip).toBe('172.18.255.1');
    const r = await until('the address answers', async () => {
      const x = (await cluster.trace('client', `${ip}:80`)) as { reachable: boolean; text: string };
      return x.reachable && x;
    });
    expect(r.text).toContain('default/web-lb:http loadbalancer IP');
  });

  it('rejects a Service without endpoints and says which rule did it', async () => {
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'nobody', namespace: 'default' },
      spec: { selector: { app: 'nobody' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
    });
    const r = await until('the REJECT rule', async () => {
      const x = (await cluster.trace('client', 'svc/default/nobody')) as { reachable: boolean; trace: { kind: string; reason?: string }[] };
      return x.trace.some((h) => h.kind === 'drop' && h.reason === 'rejected: default/nobody:http has no endpoints') && x;
    });
    expect(r.reachable).toBe(false);
  });

  it('removes the rules of a deleted Service within the sync period', async () => {
    await cluster.store.delete('Service', 'default', 'web');
    const world = (cluster.network as SimClusterNetwork).world;
    await until('no rule of default/web on any node', async () =>
      cluster.nodes.every((n) => !world.iptablesSave(`/run/kemu/nodes/${n.name}`, { table: 'nat' }).includes('default/web:http')),
    );
  });
});
