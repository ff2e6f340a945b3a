import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore, type PersistentVolumeClaim, type Pod, type StatefulSet } from '@kemu/core';
import { ControllerManager } from './controller-manager.js';
import { fakeKubelet, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function cluster() {
  const store = await MemoryStore.open();
  const stop = await fakeKubelet(store, { readyAfterMs: 15 });
  const cm = new ControllerManager({ store, controllers: 'statefulset', leaderElect: false });
  await cm.start();
  cleanup.push(() => store.close(), stop, () => cm.stop());
  return store;
}

const sts = (policy: StatefulSet['spec']['podManagementPolicy'], whenScaled: 'Retain' | 'Delete'): StatefulSet => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name: 'db', namespace: 'default' },
  spec: {
    replicas: 3,
    serviceName: 'db',
    podManagementPolicy: policy,
    persistentVolumeClaimRetentionPolicy: { whenScaled, whenDeleted: 'Retain' },
    selector: { matchLabels: { app: 'db' } },
    template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'postgres:16' }] } },
    volumeClaimTemplates: [
      { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } as PersistentVolumeClaim,
    ],
  },
});

describe('StatefulSet controller', () => {
  it('starts ordinals in order, each with its own claim, hostname and subdomain', async () => {
    const store = await cluster();
    const order: string[] = [];
    const w = await store.watch('Pod', { namespace: 'default' });
    const watching = (async () => {
      for await (const ev of w) if (ev.type === 'ADDED') order.push((ev.object as Pod).metadata.name!);
    })();
    await store.create(sts('OrderedReady', 'Retain'));
    const s = await until('ready', async () => {
      const x = await store.get('StatefulSet', 'default', 'db');
      return x.status?.readyReplicas === 3 && x.status.currentRevision === x.status.updateRevision && x;
    });
    w.stop();
    await watching;
    expect(order).toEqual(['db-0', 'db-1', 'db-2']);
    const pods = (await store.list('Pod', { namespace: 'default' })).items as Pod[];
    for (const p of pods) {
      expect(p.spec.hostname).toBe(p.metadata.name);
      expect(p.spec.subdomain).toBe('db');
      expect(p.spec.volumes).toContainEqual({ name: 'data', persistentVolumeClaim: { claimName: `data-${p.metadata.name}` } });
      expect(p.metadata.labels?.['statefulset.kubernetes.io/pod-name']).toBe(p.metadata.name);
      expect(p.metadata.labels?.['controller-revision-hash']).toBe(s.status?.updateRevision);
    }
    const claims = (await store.list('PersistentVolumeClaim', { namespace: 'default' })).items.map((c) => c.metadata.name).sort();
    expect(claims).toEqual(['data-db-0', 'data-db-1', 'data-db-2']);
    const revs = (await store.list('ControllerRevision', { namespace: 'default' })).items;
    expect(revs.map((r) => r.metadata.name)).toEqual([s.status?.updateRevision]);
  });

  it('scales down from the highest ordinal and keeps or deletes claims per whenScaled', async () => {
    for (const whenScaled of ['Retain', 'Delete'] as const) {
      const store = await cluster();
      await store.create(sts('Parallel', whenScaled));
      await until('ready', async () => (await store.get('StatefulSet', 'default', 'db')).status?.readyReplicas === 3);
      await store.patch('StatefulSet', 'default', 'db', { spec: { replicas: 1 } }, 'merge');
      await until('scaled', async () => (await store.list('Pod', { namespace: 'default' })).items.map((p) => p.metadata.name).join() === 'db-0');
      const want = whenScaled === 'Retain' ? ['data-db-0', 'data-db-1', 'data-db-2'] : ['data-db-0'];
      await until(`claims ${whenScaled}`, async () => (await store.list('PersistentVolumeClaim', { namespace: 'default' })).items.map((c) => c.metadata.name).sort().join() === want.join());
    }
  });

  it('rolls a new template out from the highest ordinal, sparing ordinals below the partition', async () => {
    const store = await cluster();
    const s = sts('OrderedReady', 'Retain');
    s.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: 1 } };
    await store.create(s);
    const first = await until('ready', async () => {
      const x = await store.get('StatefulSet', 'default', 'db');
      return x.status?.readyReplicas === 3 && x;
    });
    await store.patch('StatefulSet', 'default', 'db', { spec: { template: { spec: { containers: [{ name: 'db', image: 'postgres:17' }] } } } }, 'strategic');
    const after = await until('updated above the partition', async () => {
      const x = await store.get('StatefulSet', 'default', 'db');
      return x.status?.updatedReplicas === 2 && x.status.readyReplicas === 3 && x;
    });
    expect(after.status?.updateRevision).not.toBe(first.status?.updateRevision);
    const images = Object.fromEntries(((await store.list('Pod', { namespace: 'default' })).items as Pod[]).map((p) => [p.metadata.name, p.spec.containers[0].image]));
    expect(images).toEqual({ 'db-0': 'postgres:16', 'db-1': 'postgres:17', 'db-2': 'postgres:17' });
  });

  for (const [policy, maxUnavailable, expected] of [
    ['Parallel', 2, 2],
    ['OrderedReady', '40%', 2],
    ['Parallel', undefined, 1],
  ] as const) {
    it(`rolls out with ${policy} pods at most ${expected} unavailable at a time (maxUnavailable ${maxUnavailable ?? 'unset'})`, async () => {
      const store = await cluster();
      const s = sts(policy, 'Retain');
      s.spec.replicas = 5;
      s.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: maxUnavailable === undefined ? {} : { maxUnavailable } };
      await store.create(s);
      await until('ready', async () => (await store.get('StatefulSet', 'default', 'db')).status?.readyReplicas === 5, 15_000);
      // Every pod event: how many ordinals lack a ready pod that is not terminating.
      const w = await store.watch('Pod', { namespace: 'default' });
      const byName = new Map<string, Pod>();
      for (const p of (await store.list('Pod', { namespace: 'default' })).items as Pod[]) byName.set(p.metadata.name!, p);
      const ready = (p?: Pod) => !!p && !p.metadata.deletionTimestamp && !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      let most = 0;
      const watching = (async () => {
        for await (const ev of w) {
          const p = ev.object as Pod;
          if (ev.type === 'DELETED') byName.delete(p.metadata.name!);
          else byName.set(p.metadata.name!, p);
          most = Math.max(most, [0, 1, 2, 3, 4].filter((o) => !ready(byName.get(`db-${o}`))).length);
        }
      })();
      const patched = await store.patch('StatefulSet', 'default', 'db', { spec: { template: { spec: { containers: [{ name: 'db', image: 'postgres:17' }] } } } }, 'strategic');
      await until(
        'rolled out',
        async () => {
          const x = await store.get('StatefulSet', 'default', 'db');
          const st = x.status;
          return !!st && st.observedGeneration === patched.metadata.generation && st.updatedReplicas === 5 && st.readyReplicas === 5 && st.currentRevision === st.updateRevision;
        },
        15_000,
      );
      w.stop();
      await watching;
      expect(most).toBe(expected);
      const images = ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).map((p) => p.spec.containers[0].image);
      expect(images).toEqual(Array(5).fill('postgres:17'));
    });
  }

  it('refuses a maxUnavailable of 0 or above 100% as kube-apiserver does', async () => {
    const store = await MemoryStore.open();
    cleanup.push(() => store.close());
    const bad = (v: number | string) => {
      const s = sts('Parallel', 'Retain');
      s.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: v } };
      return store.create(s);
    };
    await expect(bad(0)).rejects.toThrow('StatefulSet.apps "db" is invalid: spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: must be greater than 0');
    await expect(bad('0%')).rejects.toThrow('StatefulSet.apps "db" is invalid: spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "0%": must be greater than 0');
    await expect(bad('101%')).rejects.toThrow('StatefulSet.apps "db" is invalid: spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "101%": must not be greater than 100%');
  });
});
