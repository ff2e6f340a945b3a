// A plain upstream-style manifest (an nginx Deployment and its Service) on the composed cluster: the
// controllers make ReplicaSets and pods, the scheduler places them, kubelets run them, and the Service
// gets an EndpointSlice of the ready pods. Then a rollout of a new image with maxSurge 1 / maxUnavailable 0,
// history and undo through `kemu rollout`, foreground deletion, and namespace deletion of every kind.
import { type Deployment, type EndpointSlice, type KubeObject, parseManifests, type Pod, type ReplicaSet } from '@kemu/core';
import { Cluster } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from '../cluster/composed-cluster.js';
import { until } from '../cluster/util.js';

const MANIFEST = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxSurge: 1
      maxUnavailable: 0
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.26
        ports:
        - name: http
          containerPort: 80
---
apiVersion: v1
kind: Service
metadata:
  name: nginx
spec:
  selector:
    app: nginx
  ports:
  - name: http
    port: 80
    targetPort: http
`;

const complete = (d: Deployment, revision: string) =>
  d.status?.observedGeneration === d.metadata.generation &&
  d.status?.updatedReplicas === 3 &&
  d.status?.replicas === 3 &&
  d.status?.availableReplicas === 3 &&
  d.metadata.annotations?.['deployment.kubernetes.io/revision'] === revision;

describe('an nginx Deployment and Service on the composed cluster', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-workloads-', { nodes: 3, fast: true }, (c) => (cluster = c));

  it('becomes three Running pods spread by the scheduler and an EndpointSlice of their IPs', async () => {
    for (const obj of parseManifests(MANIFEST)) await cluster.store.create(obj);
    const d = await until('deployment available', async () => {
      const x = await cluster.store.get('Deployment', 'default', 'nginx');
      return complete(x, '1') && x;
    }, 60_000);
    expect(d.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
    const pods = (await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=nginx' })).items as Pod[];
    expect(pods).toHaveLength(3);
    expect(pods.every((p) => p.status?.phase === 'Running' && p.spec.nodeName && p.status.podIP)).toBe(true);
    const slice = await until('endpointslice', async () => {
      const s = (await cluster.store.list('EndpointSlice', { namespace: 'default', labelSelector: 'kubernetes.io/service-name=nginx' })).items as EndpointSlice[];
      return s.length === 1 && s[0].endpoints.length === 3 && s[0].endpoints.every((e) => e.conditions?.ready) && s[0];
    });
    expect(slice.endpoints.map((e) => e.addresses[0]).sort()).toEqual(pods.map((p) => p.status!.podIP!).sort());
    expect(slice.endpoints.map((e) => e.nodeName).sort()).toEqual(pods.map((p) => p.spec.nodeName).sort());
    expect(slice.ports).toEqual([{ name: 'http', port: 80, protocol: 'TCP' }]);
    const svc = await cluster.store.get('Service', 'default', 'nginx');
    expect(svc.spec.clusterIP).toMatch(/^10\.(9[6-9]|1[01][0-9])\./);
    const ep = await cluster.store.get('Endpoints', 'default', 'nginx');
    expect(ep.subsets?.[0]?.addresses).toHaveLength(3);
    const sa = await until('default service account', async () => cluster.store.get('ServiceAccount', 'default', 'default').catch(() => undefined));
    expect(sa.metadata.name).toBe('default');
  }, 90_000);

  it('rolls out a new image without dropping below 3 available pods, then undoes it with kemu rollout', async () => {
    const { rolloutHistory, rolloutStatus, rolloutUndo } = await import('kemu');
    const api = cluster.store as unknown as Parameters<typeof rolloutUndo>[0];
    let minAvailable = Infinity;
    let maxReplicas = 0;
    const sets = new Map<string, ReplicaSet>();
    const w = await cluster.store.watch('ReplicaSet', { namespace: 'default' });
    const watching = (async () => {
      for await (const ev of w) {
        if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') continue;
        const rs = ev.object as ReplicaSet;
        if (ev.type === 'DELETED') sets.delete(rs.metadata.name!);
        else sets.set(rs.metadata.name!, rs);
        const all = [...sets.values()];
        minAvailable = Math.min(minAvailable, all.reduce((n, x) => n + (x.status?.availableReplicas ?? 0), 0));
        maxReplicas = Math.max(maxReplicas, all.reduce((n, x) => n + (x.spec.replicas ?? 0), 0));
      }
    })();
    await cluster.store.patch('Deployment', 'default', 'nginx', { spec: { template: { spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }] } } } }, 'strategic');
    const lines: string[] = [];
    await rolloutStatus(api, 'Deployment', 'default', 'nginx', { timeoutMs: 60_000, pollMs: 50 }, (l) => lines.push(l));
    expect(lines.at(-1)).toBe('deployment "nginx" successfully rolled out');
    w.stop();
    await watching;
    expect(minAvailable).toBeGreaterThanOrEqual(3);
    expect(maxReplicas).toBeLessThanOrEqual(4);
    const history: string[] = [];
    await rolloutHistory(api, 'Deployment', 'default', 'nginx', undefined, (l) => history.push(l));
    expect(history.slice(0, 4)).toEqual(['deployment.apps/nginx', 'REVISION  CHANGE-CAUSE', '1         <none>', '2         <none>']);
    expect(await rolloutUndo(api, 'Deployment', 'default', 'nginx', undefined)).toBe('deployment.apps/nginx rolled back');
    const d = await until('rolled back', async () => {
      const x = await cluster.store.get('Deployment', 'default', 'nginx');
      return complete(x, '3') && x;
    }, 60_000);
    expect(d.spec.template.spec.containers[0].image).toBe('nginx:1.26');
    const pods = (await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=nginx' })).items as Pod[];
    await until('old pods gone', async () => {
      const live = (await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=nginx' })).items as Pod[];
      return live.length === 3 && live.every((p) => p.spec.containers[0].image === 'nginx:1.26');
    }, 60_000);
    expect(pods.length).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it('foreground deletion removes the ReplicaSets and pods before the Deployment', async () => {
    const order: string[] = [];
    const watches = await Promise.all(['Deployment', 'ReplicaSet', 'Pod'].map((k) => cluster.store.watch(k, { namespace: 'default' })));
    const watching = watches.map(async (w) => {
      for await (const ev of w) if (ev.type === 'DELETED') order.push((ev.object as KubeObject).kind);
    });
    await cluster.store.delete('Deployment', 'default', 'nginx', { propagationPolicy: 'Foreground' });
    await until('deployment gone', async () => !(await cluster.store.list('Deployment', { namespace: 'default' })).items.length, 60_000);
    for (const w of watches) w.stop();
    await Promise.all(watching);
    expect(order.at(-1)).toBe('Deployment');
    expect(order.filter((k) => k === 'ReplicaSet').length).toBeGreaterThanOrEqual(1);
    expect(order.filter((k) => k === 'Pod').length).toBeGreaterThanOrEqual(3);
    expect((await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=nginx' })).items).toHaveLength(0);
  }, 90_000);

  it('deleting a namespace removes every kind in it', async () => {
    await cluster.store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    const objs = parseManifests(MANIFEST).map((o) => ({ ...o, metadata: { ...o.metadata, namespace: 'shop' } }));
    for (const o of objs) await cluster.store.create(o);
    await cluster.store.create({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'once', namespace: 'shop' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1.36' }] } } } } as KubeObject);
    await cluster.store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'shop' }, data: { a: 'b' } });
    await until('shop running', async () => (await cluster.store.list('EndpointSlice', { namespace: 'shop' })).items.length === 1);
    await cluster.store.delete('Namespace', undefined, 'shop');
    await until('namespace gone', async () => !(await cluster.store.list('Namespace')).items.some((n) => n.metadata.name === 'shop'), 60_000);
    for (const kind of ['Deployment', 'ReplicaSet', 'Pod', 'Service', 'Endpoints', 'EndpointSlice', 'Job', 'ConfigMap', 'ServiceAccount']) {
      expect((await cluster.store.list(kind, { namespace: 'shop' })).items, kind).toHaveLength(0);
    }
  }, 90_000);
});
