// A StatefulSet of 3 with volumeClaimTemplates on the composed cluster: pods start in ordinal order, each
// replica's claim is provisioned by the CSI driver and bound, and scaling down keeps the claims (Retain) or
// deletes them (Delete) per persistentVolumeClaimRetentionPolicy.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type PersistentVolumeClaim, type Pod, parseManifests } from '@kemu/core';
import { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-sts-'));

  beforeAll(async () => {
    cluster = await Cluster.start({ stateDir, nodes: 3, fast: true });
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

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
