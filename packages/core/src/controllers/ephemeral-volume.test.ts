import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../api-core.js';
import type { Store } from '../store.js';
import { createMemoryStore } from '../store-memory.js';
import { EphemeralVolumeController } from './ephemeral-volume.js';

const running: { c: EphemeralVolumeController; s: Store }[] = [];
afterEach(async () => {
  for (const { c, s } of running.splice(0)) {
    await c.stop();
    await s.close();
  }
});

async function until<T>(fn: () => Promise<T | undefined | false>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const pod = (name: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: {
    containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
    volumes: [
      {
        name: 'scratch',
        ephemeral: {
          volumeClaimTemplate: {
            metadata: { labels: { type: 'scratch' } },
            spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
          },
        },
      },
    ],
  },
});

describe('EphemeralVolumeController', () => {
  it('creates the pod-owned claim <pod>-<volume> from the template; it goes with the pod', async () => {
    const s = await createMemoryStore();
    const c = new EphemeralVolumeController({ store: s });
    running.push({ c, s });
    await c.start();
    const p = await s.create(pod('web'));
    const pvc = await until(() => s.get('PersistentVolumeClaim', 'default', 'web-scratch'));
    expect(pvc.metadata.labels).toEqual({ type: 'scratch' });
    expect(pvc.spec).toMatchObject({ accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } });
    expect(pvc.metadata.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: p.metadata.uid, controller: true, blockOwnerDeletion: true }]);
    await s.delete('Pod', 'default', 'web', { gracePeriodSeconds: 0 });
    await until(async () => !(await s.list('PersistentVolumeClaim', { namespace: 'default' })).items.length);
  });

  it('leaves a same-named claim it does not own alone and says so on the pod', async () => {
    const s = await createMemoryStore();
    const c = new EphemeralVolumeController({ store: s });
    running.push({ c, s });
    await s.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'db-scratch', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } } },
    });
    await c.start();
    await s.create(pod('db'));
    const ev = await until(async () => (await s.list('Event', { namespace: 'default' })).items.find((e) => e.reason === 'FailedBinding'));
    expect(ev.message).toBe('PVC default/db-scratch was not created for the pod');
    expect((await s.get('PersistentVolumeClaim', 'default', 'db-scratch')).spec.resources?.requests?.storage).toBe('5Gi');
  });
});
