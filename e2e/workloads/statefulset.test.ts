// A StatefulSet of 3 with volumeClaimTemplates on the composed cluster: pods start in ordinal order, each
// replica's claim is provisioned by the CSI driver and bound, and scaling down keeps the claims (Retain) or
// deletes them (Delete) per persistentVolumeClaimRetentionPolicy.
import { type PersistentVolumeClaim, type Pod, parseManifests } from '@kemu/core';
import { Cluster } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from '../cluster/composed-cluster.js';
import { until } from '../cluster/util.js';

const manifest = (name: string, whenScaled: 'Retain' | 'Delete') => `
apiVersion: v1
kind: Service
metadata:
  name: ${name}
spec:
  clusterIP: None
  selector:
    app: ${name}
  ports:
  - port: 5432
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: ${name}
spec:
  serviceName: ${name}
  replicas: 3
  persistentVolumeClaimRetentionPolicy:
    whenScaled: ${whenScaled}
  selector:
    matchLabels:
      app: ${name}
  template:
    metadata:
      labels:
        app: ${name}
    spec:
      containers:
      - name: db
        image: postgres:16
        volumeMounts:
        - name: data
          mountPath: /var/lib/postgresql/data
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
`;

describe('a StatefulSet with volumeClaimTemplates on the composed cluster', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-sts-', { nodes: 3, fast: true }, (c) => (cluster = c));

  for (const whenScaled of ['Retain', 'Delete'] as const) {
    it(`starts in order with a bound claim per replica; scale-down ${whenScaled === 'Retain' ? 'keeps' : 'deletes'} the claims`, async () => {
      const name = `db-${whenScaled.toLowerCase()}`;
      const order: string[] = [];
      const w = await cluster.store.watch('Pod', { namespace: 'default', labelSelector: `app=${name}` });
      const watching = (async () => {
        for await (const ev of w) if (ev.type === 'ADDED') order.push((ev.object as Pod).metadata.name!);
      })();
      for (const o of parseManifests(manifest(name, whenScaled))) await cluster.store.create(o);
      await until('three ready replicas', async () => (await cluster.store.get('StatefulSet', 'default', name)).status?.readyReplicas === 3, 90_000);
      w.stop();
      await watching;
      expect(order).toEqual([`${name}-0`, `${name}-1`, `${name}-2`]);
      const claims = (await cluster.store.list('PersistentVolumeClaim', { namespace: 'default', labelSelector: `app=${name}` })).items as PersistentVolumeClaim[];
      expect(claims.map((c) => c.metadata.name).sort()).toEqual([0, 1, 2].map((i) => `data-${name}-${i}`));
      expect(claims.every((c) => c.status?.phase === 'Bound' && c.spec.volumeName)).toBe(true);
      expect(new Set(claims.map((c) => c.spec.volumeName)).size).toBe(3);
      const pods = (await cluster.store.list('Pod', { namespace: 'default', labelSelector: `app=${name}` })).items as Pod[];
      expect(pods.every((p) => p.status?.phase === 'Running' && p.spec.subdomain === name && p.spec.hostname === p.metadata.name)).toBe(true);
      await cluster.store.patch('StatefulSet', 'default', name, { spec: { replicas: 1 } }, 'merge');
      await until('scaled to one', async () => (await cluster.store.list('Pod', { namespace: 'default', labelSelector: `app=${name}` })).items.length === 1, 60_000);
      const want = whenScaled === 'Retain' ? [0, 1, 2] : [0];
      await until(`claims after scale-down (${whenScaled})`, async () => {
        const left = (await cluster.store.list('PersistentVolumeClaim', { namespace: 'default', labelSelector: `app=${name}` })).items.map((c) => c.metadata.name).sort();
        return left.join() === want.map((i) => `data-${name}-${i}`).join();
      }, 60_000);
    }, 180_000);
  }
});

describe('a StatefulSet rolling out with maxUnavailable 2 on the composed cluster', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-sts-mu-', { nodes: 2, fast: true }, (c) => (cluster = c));

  it('replaces two replicas at a time, never more', async () => {
    const [svc, sts] = parseManifests(`
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 4
  podManagementPolicy: Parallel
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
`);
    await cluster.store.create(svc!);
    await cluster.store.create(sts!);
    const ready = (p?: Pod) => !!p && !p.metadata.deletionTimestamp && !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    const pods = async () => (await cluster.store.list('Pod', { namespace: 'default', labelSelector: 'app=web' })).items as Pod[];
    await until('4 ready', async () => (await pods()).filter(ready).length === 4, 60_000);
    const byName = new Map<string, Pod>((await pods()).map((p) => [p.metadata.name!, p]));
    const w = await cluster.store.watch('Pod', { namespace: 'default', labelSelector: 'app=web' });
    let most = 0;
    const watching = (async () => {
      for await (const ev of w) {
        const p = ev.object as Pod;
        if (ev.type === 'DELETED') byName.delete(p.metadata.name!);
        else byName.set(p.metadata.name!, p);
        most = Math.max(most, [0, 1, 2, 3].filter((o) => !ready(byName.get(`web-${o}`))).length);
      }
    })();
    const patched = await cluster.store.patch('StatefulSet', 'default', 'web', { spec: { template: { spec: { containers: [{ name: 'web', image: 'nginx:1.28' }] } } } }, 'strategic');
    await until('rolled out', async () => {
      const st = (await cluster.store.get('StatefulSet', 'default', 'web')).status;
      return !!st && st.observedGeneration === patched.metadata.generation && st.updatedReplicas === 4 && st.readyReplicas === 4 && st.currentRevision === st.updateRevision;
    }, 90_000);
    w.stop();
    await watching;
    expect(most).toBe(2);
    expect((await pods()).map((p) => p.spec.containers[0]!.image)).toEqual(Array(4).fill('nginx:1.28'));
  }, 150_000);
});
