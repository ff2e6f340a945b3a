import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PersistentVolume, PersistentVolumeClaim } from '../api-core.js';
import type { StorageClass } from '../api-storage.js';
import { MemoryStore } from '../store-memory.js';
import { PersistentVolumeBinder } from './pv-binder.js';
import { events, makePV, makePVC, until } from './test-helpers.js';

let store: MemoryStore;
let binder: PersistentVolumeBinder;

beforeEach(async () => {
  store = await MemoryStore.open();
  binder = new PersistentVolumeBinder({ store, resyncPeriodMs: 200 });
  await binder.start();
});
afterEach(async () => {
  await binder.stop();
  await store.close();
});

const pvc = (name: string) =>
  store.get('PersistentVolumeClaim', 'default', name) as Promise<PersistentVolumeClaim>;
const pv = (name: string) => store.get('PersistentVolume', '', name) as Promise<PersistentVolume>;
const sc = (name: string, o: Partial<StorageClass> = {}): StorageClass => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name },
  provisioner: 'test.csi.k8s.io',
  ...o,
});

describe('PersistentVolumeBinder', () => {
  it('binds a claim to the smallest fitting volume, both ways, with the bind annotations and phases', async () => {
    await store.create(makePV('big', { capacity: { storage: '10Gi' } }));
    await store.create(makePV('fit', { capacity: { storage: '2Gi' } }));
    await store.create(makePVC('c', { resources: { requests: { storage: '2Gi' } } }));
    const c = await until('claim bound', async () =>
      (await pvc('c')).status?.phase === 'Bound' ? pvc('c') : undefined,
    );
    expect(c.spec.volumeName).toBe('fit');
    expect(c.metadata.annotations).toMatchObject({
      'pv.kubernetes.io/bind-completed': 'yes',
      'pv.kubernetes.io/bound-by-controller': 'yes',
    });
    expect(c.status).toMatchObject({
      phase: 'Bound',
      accessModes: ['ReadWriteOnce'],
      capacity: { storage: '2Gi' },
    });
    const v = await until('volume bound', async () =>
      (await pv('fit')).status?.phase === 'Bound' ? pv('fit') : undefined,
    );
    expect(v.spec.claimRef).toMatchObject({
      kind: 'PersistentVolumeClaim',
      namespace: 'default',
      name: 'c',
      uid: c.metadata.uid,
    });
    expect(v.metadata.annotations?.['pv.kubernetes.io/bound-by-controller']).toBe('yes');
    expect((await pv('big')).status?.phase).toBe('Available');
  });

  it('binds a claim that names its volume (volumeName) without the bound-by-controller annotation', async () => {
    await store.create(makePV('chosen', { capacity: { storage: '5Gi' } }));
    await store.create(makePV('other'));
    await store.create(makePVC('c', { volumeName: 'chosen' }));
    const c = await until('bound', async () =>
      (await pvc('c')).status?.phase === 'Bound' ? pvc('c') : undefined,
    );
    expect(c.spec.volumeName).toBe('chosen');
    expect(c.metadata.annotations?.['pv.kubernetes.io/bound-by-controller']).toBeUndefined();
    expect(c.metadata.annotations?.['pv.kubernetes.io/bind-completed']).toBe('yes');
  });

  it('reports a requested volume that does not satisfy the claim and keeps it Pending', async () => {
    await store.create(makePV('tiny', { capacity: { storage: '1Mi' } }));
    await store.create(makePVC('c', { volumeName: 'tiny' }));
    const ev = await until('mismatch event', async () =>
      (await events(store, 'c')).find((e) => e.reason === 'VolumeMismatch'),
    );
    expect(ev.message).toBe('Cannot bind to requested volume "tiny": requested PV is too small');
    expect((await pvc('c')).status?.phase).toBe('Pending');
  });

  it('binds a volume pre-bound to a claim (claimRef without uid) even over a better fit', async () => {
    await store.create(makePV('fit'));
    await store.create(
      makePV('reserved', { capacity: { storage: '8Gi' }, claimRef: { namespace: 'default', name: 'c' } }),
    );
    await store.create(makePVC('c'));
    const c = await until('bound', async () =>
      (await pvc('c')).status?.phase === 'Bound' ? pvc('c') : undefined,
    );
    expect(c.spec.volumeName).toBe('reserved');
    const v = await pv('reserved');
    expect(v.spec.claimRef?.uid).toBe(c.metadata.uid);
    // Pre-bound by the user: the volume side is not marked bound-by-controller.
    expect(v.metadata.annotations?.['pv.kubernetes.io/bound-by-controller']).toBeUndefined();
  });

  it('annotates a claim of a class with its provisioner and says so in an event', async () => {
    await store.create(sc('fast'));
    await store.create(makePVC('c', { storageClassName: 'fast' }));
    const c = await until('annotated', async () => {
      const c = await pvc('c');
      return c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner'] ? c : undefined;
    });
    expect(c.metadata.annotations).toMatchObject({
      'volume.kubernetes.io/storage-provisioner': 'test.csi.k8s.io',
      'volume.beta.kubernetes.io/storage-provisioner': 'test.csi.k8s.io',
    });
    expect(c.status?.phase).toBe('Pending');
    const ev = await until('event', async () =>
      (await events(store, 'c')).find((e) => e.reason === 'ExternalProvisioning'),
    );
    expect(ev.message).toContain("external provisioner 'test.csi.k8s.io'");
  });

  it('hands a claim without a class to the default class provisioner (DefaultStorageClass)', async () => {
    await store.create(sc('other'));
    await store.create(
      sc('standard', {
        metadata: {
          name: 'standard',
          annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
        },
        provisioner: 'default.csi.k8s.io',
      }),
    );
    await store.create(makePVC('c'));
    const c = await until('annotated', async () => {
      const c = await pvc('c');
      return c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner'] ? c : undefined;
    });
    expect(c.spec.storageClassName).toBe('standard');
    expect(c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner']).toBe('default.csi.k8s.io');
  });

  it('reports a missing class', async () => {
    await store.create(makePVC('c', { storageClassName: 'nope' }));
    const ev = await until('event', async () =>
      (await events(store, 'c')).find((e) => e.reason === 'ProvisioningFailed'),
    );
    expect(ev.message).toBe('storageclass.storage.k8s.io "nope" not found');
  });

  it('leaves WaitForFirstConsumer claims to the scheduler until a node is selected', async () => {
    await store.create(sc('late', { volumeBindingMode: 'WaitForFirstConsumer' }));
    await store.create(makePV('static', { storageClassName: 'late' }));
    await store.create(makePVC('c', { storageClassName: 'late' }));
    const ev = await until('event', async () =>
      (await events(store, 'c')).find((e) => e.reason === 'WaitForFirstConsumer'),
    );
    expect(ev.message).toBe('waiting for first consumer to be created before binding');
    let c = await pvc('c');
    expect(c.spec.volumeName).toBeUndefined();
    expect(c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner']).toBeUndefined();
    // The scheduler picked a node and no static volume: now the provisioner is asked.
    await store.patch(
      'PersistentVolumeClaim',
      'default',
      'c',
      { metadata: { annotations: { 'volume.kubernetes.io/selected-node': 'n1' } } },
      'merge',
    );
    c = await until('annotated', async () => {
      const c = await pvc('c');
      return c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner'] ? c : undefined;
    });
    expect(c.spec.volumeName).toBeUndefined();
  });

  it('says why a classless claim stays Pending', async () => {
    await store.create(makePVC('c', { storageClassName: '' }));
    const ev = await until('event', async () =>
      (await events(store, 'c')).find((e) => e.reason === 'FailedBinding'),
    );
    expect(ev.message).toBe('no persistent volumes available for this claim and no storage class is set');
  });

  it('releases a Retain volume when its claim is deleted and keeps it', async () => {
    await store.create(makePV('keep', { persistentVolumeReclaimPolicy: 'Retain' }));
    await store.create(makePVC('c'));
    await until('bound', async () => (await pv('keep')).status?.phase === 'Bound');
    await store.delete('PersistentVolumeClaim', 'default', 'c');
    const v = await until('released', async () =>
      (await pv('keep')).status?.phase === 'Released' ? pv('keep') : undefined,
    );
    expect(v.spec.claimRef?.name).toBe('c');
    // A new claim of the same name does not get the released volume.
    await store.create(makePVC('c'));
    await new Promise((r) => setTimeout(r, 300));
    expect((await pvc('c')).status?.phase).toBe('Pending');
  });

  it('fails a released static volume with Delete policy (no provisioner owns it)', async () => {
    await store.create(makePV('static', { persistentVolumeReclaimPolicy: 'Delete' }));
    await store.create(makePVC('c'));
    await until('bound', async () => (await pv('static')).status?.phase === 'Bound');
    await store.delete('PersistentVolumeClaim', 'default', 'c');
    const v = await until('failed', async () =>
      (await pv('static')).status?.phase === 'Failed' ? pv('static') : undefined,
    );
    expect(v.status?.message).toContain('no deletable volume plugin matched');
  });

  it('leaves a released provisioned Delete volume to its provisioner', async () => {
    await store.create({
      ...makePV('pvc-x', { persistentVolumeReclaimPolicy: 'Delete' }),
      metadata: { name: 'pvc-x', annotations: { 'pv.kubernetes.io/provisioned-by': 'test.csi.k8s.io' } },
    });
    await store.create(makePVC('c'));
    await until('bound', async () => (await pv('pvc-x')).status?.phase === 'Bound');
    await store.delete('PersistentVolumeClaim', 'default', 'c');
    await until('released', async () => (await pv('pvc-x')).status?.phase === 'Released');
    await new Promise((r) => setTimeout(r, 300));
    expect((await pv('pvc-x')).status?.phase).toBe('Released');
  });

  it('marks a bound claim Lost when its volume disappears', async () => {
    await store.create(makePV('v'));
    await store.create(makePVC('c'));
    await until('bound', async () => (await pvc('c')).status?.phase === 'Bound');
    await store.delete('PersistentVolume', '', 'v');
    await until('lost', async () => (await pvc('c')).status?.phase === 'Lost');
    const ev = await until('event', async () =>
      (await events(store, 'c')).find((e) => e.reason === 'ClaimLost'),
    );
    expect(ev.type).toBe('Warning');
  });

  it('binds a pending claim when a matching volume appears later', async () => {
    await store.create(makePVC('c', { storageClassName: '' }));
    await until('pending', async () => (await pvc('c')).status?.phase === 'Pending');
    await store.create(makePV('late'));
    await until(
      'bound',
      async () => (await pvc('c')).spec.volumeName === 'late' && (await pvc('c')).status?.phase === 'Bound',
    );
  });

  it('binds 50 claims to 50 volumes one-to-one', async () => {
    for (let i = 0; i < 50; i++) await store.create(makePV(`v${i}`, { capacity: { storage: `${i + 1}Gi` } }));
    for (let i = 0; i < 50; i++)
      await store.create(makePVC(`c${i}`, { resources: { requests: { storage: `${i + 1}Gi` } } }));
    await until(
      'all bound',
      async () => (await store.list('PersistentVolumeClaim')).items.every((c) => c.status?.phase === 'Bound'),
      25_000,
    );
    const claims = (await store.list('PersistentVolumeClaim')).items;
    const used = new Set(claims.map((c) => c.spec.volumeName));
    expect(used.size).toBe(50);
    for (const c of claims) expect(c.spec.volumeName).toBe(`v${c.metadata.name!.slice(1)}`);
  });
});
