// Cluster DNS on the composed cluster (sim datapath): the DNS server kemu up runs answers for Services the
// EndpointSlice controller fed, a StatefulSet-style pod (hostname + subdomain) by its own name, and
// `kemu trace` resolves a short name from a pod's point of view (its search path) and reaches the Service.
// The pod's queries travel the simulated datapath as datagrams: to the kube-dns ClusterIP, DNATed by the
// node's kube-proxy rules to the DNS server's socket on a node, answered by the cluster's resolver and
// un-NATed on the way back.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { type EndpointSlice, type Pod, type Service, parseManifests } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { Cluster, type SimClusterNetwork } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from './composed-cluster.js';
import { until } from './util.js';
import { servingPod } from './web-service.js';

const run = promisify(execFile);
let cluster: Cluster;
composedCluster('kemu-e2e-dns-', { nodes: 1, fast: true }, (c) => (cluster = c));

const ok = requirePeers('cluster DNS on the composed cluster, asked by dig', [peers.dig]);

describe.runIf(ok)('cluster DNS in kemu up', () => {
  async function dig(name: string, type = 'A'): Promise<string[]> {
    const { host, port } = cluster.dns!.address();
    const { stdout } = await run('dig', [`@${host}`, '-p', String(port), '+short', '+time=2', '+tries=1', name, type], { timeout: 10_000 });
    return stdout.trim().split('\n').filter(Boolean).sort();
  }

  it('answers Services and StatefulSet-style pod names from the cluster\'s own objects', async () => {
    await cluster.store.create(servingPod('client', { app: 'client' }, 'kemu-node-1'));
    await cluster.store.create(servingPod('db-0', { app: 'db' }, 'kemu-node-1', { hostname: 'db-0', subdomain: 'db' }));
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'db', namespace: 'default' },
      spec: { clusterIP: 'None', selector: { app: 'db' }, ports: [{ name: 'pg', port: 5432, targetPort: 8080 }] },
    });
    await cluster.store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: 'default' },
      spec: { selector: { app: 'db' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
    });
    const db0 = await until('db-0 Running with an IP', async () => {
      const p = await cluster.store.get('Pod', 'default', 'db-0');
      return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
    });
    const web = await cluster.store.get('Service', 'default', 'web');
    expect(await dig('web.default.svc.cluster.local')).toEqual([web.spec.clusterIP]);
    await until('the headless Service lists db-0', async () => (await dig('db.default.svc.cluster.local')).includes(db0.status!.podIP!));
    expect(await dig('db-0.db.default.svc.cluster.local')).toEqual([db0.status!.podIP]);
    expect(await dig('_pg._tcp.db.default.svc.cluster.local', 'SRV')).toEqual(['0 100 8080 db-0.db.default.svc.cluster.local.']);
    expect(await dig('kubernetes.default.svc.cluster.local')).toEqual(
      [(await cluster.store.get('Service', 'default', 'kubernetes').catch(() => undefined))?.spec.clusterIP].filter(Boolean),
    );
  });

  it('lets kemu trace reach a Service by a short DNS name, resolved as the client pod would', async () => {
    const db0 = await cluster.store.get('Pod', 'default', 'db-0');
    const world = (cluster.network as SimClusterNetwork).world;
    const ns = world.namespaces().find((n) => n.includes('/netns/') && world.addresses(n).some((a) => a.address === db0.status!.podIP));
    // The simulated runtime may already listen on the declared container port.
    try {
      world.listen(ns!, { proto: 'tcp', port: 8080 });
    } catch (err) {
      if ((err as { code?: string }).code !== 'EADDRINUSE') throw err;
    }
    const web = await cluster.store.get('Service', 'default', 'web');
    const r = await until('web answers by name', async () => {
      const t = (await cluster.trace('client', 'web.default:80')) as { reachable: boolean; ip: string };
      return t.reachable && t;
    });
    expect(r.ip).toBe(web.spec.clusterIP);
    await expect(cluster.trace('client', 'nope.default:80')).rejects.toThrow(
      'nope.default: no such name in the cluster DNS (asked nope.default.default.svc.cluster.local, nope.default.svc.cluster.local, nope.default.cluster.local, nope.default)',
    );
  });

  it('has kubeadm\'s kube-dns Service at the tenth service address, with the DNS server\'s endpoint', async () => {
    const svc = await cluster.store.get('Service', 'kube-system', 'kube-dns');
    expect(svc.spec.clusterIP).toBe('10.96.0.10');
    expect(svc.spec.ports?.map((p) => `${p.name} ${p.port}/${p.protocol}`)).toEqual(['dns 53/UDP', 'dns-tcp 53/TCP', 'metrics 9153/TCP']);
    const slices = (await cluster.store.list('EndpointSlice', { namespace: 'kube-system', labelSelector: 'kubernetes.io/service-name=kube-dns' })).items as EndpointSlice[];
    expect(slices.flatMap((s) => s.endpoints.flatMap((e) => e.addresses))).toEqual([cluster.nodes[0]!.ip]);
    // The pod's resolv.conf names it, as the kubelet writes it.
    expect(await dig('kube-dns.kube-system.svc.cluster.local')).toEqual(['10.96.0.10']);
  });

  it('sends a pod\'s DNS queries through the datapath: DNAT to the server, answer un-NATed', async () => {
    const r = (await until('a lookup answered through the datapath', async () => {
      const t = (await cluster.trace('client', 'dns:web')) as { reachable: boolean };
      return t.reachable && t;
    })) as unknown as { ip: string; text: string; dns: { queries: { name: string; server: string; rcode?: string }[] } };
    const web = await cluster.store.get('Service', 'default', 'web');
    expect(r.ip).toBe(web.spec.clusterIP);
    expect(r.dns.queries.map((q) => [q.name, q.server, q.rcode])).toEqual([['web.default.svc.cluster.local', '10.96.0.10', 'NOERROR']]);
    const node = cluster.nodes[0]!.ip;
    expect(r.text).toContain(`10.96.0.10:53 -> ${node}:53`);
    expect(r.text).toContain('UDP answer of');
    expect(r.text).toContain('de-DNAT to 10.96.0.10:53');
    expect(r.text).toMatch(/UDP reply of \d+ bytes from 10\.96\.0\.10:53 for the socket on port \d+/);
    // A name asked with fewer dots than ndots walks the search list first, each query a datagram.
    const fq = (await cluster.trace('client', 'dns:web.default.svc.cluster.local')) as unknown as typeof r;
    expect(fq.dns.queries.map((q) => q.rcode)).toEqual(['NXDOMAIN', 'NXDOMAIN', 'NXDOMAIN', 'NOERROR']);
    const none = (await cluster.trace('client', 'dns:nope')) as { reachable: boolean; error?: { message: string } };
    expect(none.reachable).toBe(false);
    expect(none.error?.message).toBe('nope: no such name in the cluster DNS (asked nope.default.svc.cluster.local, nope.svc.cluster.local, nope.cluster.local, nope)');
  });

  it('reaches a Deployment behind a ClusterIP Service by name, and a StatefulSet pod by its headless name', async () => {
    for (const m of parseManifests(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
      - {name: web, image: nginx, ports: [{containerPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: shop}
spec:
  selector: {app: shop}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: pg}
spec:
  clusterIP: None
  selector: {app: pg}
  ports: [{name: pg, port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  serviceName: pg
  replicas: 1
  selector: {matchLabels: {app: pg}}
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers:
      - {name: db, image: postgres, ports: [{containerPort: 5432}]}
`))
      await cluster.store.create(m);
    const shop = await cluster.store.get('Service', 'default', 'shop');
    type Traced = { reachable: boolean; ip: string; port: number; text: string; dns: { queries: { rcode?: string }[] } };
    const r = (await until('shop answers by name', async () => {
      const t = (await cluster.trace('client', 'shop:80')) as unknown as Traced;
      return t.reachable && t;
    }, 60_000)) as Traced;
    expect([r.ip, r.port]).toEqual([shop.spec.clusterIP, 80]);
    const pods = ((await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=shop' })).items as Pod[]).map((p) => p.status?.podIP);
    // The SYN is DNATed to one of the Deployment's pods, and the SYN-ACK comes back from the ClusterIP.
    const dnat = new RegExp(`${shop.spec.clusterIP!.replace(/\./g, '\\.')}:80 -> (10\\.244\\.[\\d.]+):8080`).exec(r.text);
    expect(pods).toContain(dnat?.[1]);
    expect(r.text).toContain(`de-DNAT to ${shop.spec.clusterIP}:80`);
    expect(r.text).toContain('TCP connection established');
    const pg0 = await until('pg-0 Running with an IP', async () => {
      const p = await cluster.store.get('Pod', 'default', 'pg-0').catch(() => undefined);
      return p?.status?.phase === 'Running' && p.status.podIP ? p : undefined;
    }, 60_000);
    const l = (await until('pg-0 by its headless name', async () => {
      const t = (await cluster.trace('client', 'dns:pg-0.pg.default.svc.cluster.local')) as unknown as Traced;
      return t.reachable && t;
    })) as Traced;
    expect(l.ip).toBe(pg0.status!.podIP);
    const c = (await cluster.trace('client', 'pg-0.pg:5432')) as unknown as Traced;
    expect([c.reachable, c.ip]).toEqual([true, pg0.status!.podIP]);
  });
});
