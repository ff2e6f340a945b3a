// Shared by the Service suites (iptables and nftables modes): a client pod and two `app=web` pods listening
// on 8080 on two nodes, behind a NodePort Service `web` (port 80 `http`), waited for until every pod runs
// with an IP and both endpoints are in the Service's EndpointSlice.
import type { Pod, Service } from '@kemu/core';
import type { Cluster } from 'kemu';
import { until } from './util.js';

/** A pod that sleeps and declares port 8080 (the simulated runtime answers on declared ports). */
export function servingPod(name: string, labels: Record<string, string>, nodeName?: string, extra: Partial<Pod['spec']> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', labels },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox', command: ['sleep', 'infinity'], ports: [{ containerPort: 8080 }] }], ...extra },
  };
}

/** Creates `client` on kemu-node-1, `web-1`/`web-2` on kemu-node-1/2 and the NodePort Service `web`, and waits. */
export async function startWebService(cluster: Cluster): Promise<void> {
  await cluster.store.create(servingPod('client', { app: 'client' }, 'kemu-node-1'));
  await cluster.store.create(servingPod('web-1', { app: 'web' }, 'kemu-node-1'));
  await cluster.store.create(servingPod('web-2', { app: 'web' }, 'kemu-node-2'));
  await cluster.store.create<Service>({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'default' },
    spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
  });
  await until('client and web pods Running with IPs', async () => {
    const ps = ((await cluster.store.list('Pod', { namespace: 'default' })).items as Pod[]).filter((p) => ['client', 'web'].includes(p.metadata.labels?.app ?? ''));
    return ps.length === 3 && ps.every((p) => p.status?.phase === 'Running' && p.status.podIP) && ps;
  });
  await until('both endpoints in the EndpointSlice', async () => {
    const slices = (await cluster.store.list('EndpointSlice', { namespace: 'default' })).items;
    return slices.flatMap((s) => (s as { endpoints?: unknown[] }).endpoints ?? []).length === 2;
  });
}
