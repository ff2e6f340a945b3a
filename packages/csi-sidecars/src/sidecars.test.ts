// The sidecars against our driver called in process (the scale path), with the core controllers.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryStore, type Node, type Pod, type VolumeAttachment } from '@kemu/core';
import { AttachDetachController, attachmentName, PersistentVolumeBinder } from '@kemu/core/controllers';
import {
  createCsiDriver,
  type CsiDriver,
  DEFAULT_DRIVER_NAME as DRIVER,
  DEFAULT_TOPOLOGY_KEY,
  type SimBackend,
} from '@kemu/csi';
import { pluginregistration, grpc, unaryCall } from '@kemu/proto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attacherFinalizer, ExternalAttacher } from './attacher.js';
import { CapacityPublisher } from './capacity.js';
import { type CsiConnection, inProcessCsi } from './connection.js';
import { ExternalProvisioner } from './provisioner.js';
import { NodeDriverRegistrar } from './registrar.js';

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let store: MemoryStore;
let driver: CsiDriver;
let conn: CsiConnection;
const stops: (() => Promise<void>)[] = [];

beforeEach(async () => {
  store = await MemoryStore.open();
  driver = await createCsiDriver({
    backend: 'sim',
    nodeId: 'n1',
    enableAttach: true,
    capacityBytes: 10 * 2 ** 30,
  });
  conn = inProcessCsi(driver);
  await store.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'n1',
      labels: { [DEFAULT_TOPOLOGY_KEY]: 'n1' },
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    spec: {},
  } as Node);
  await store.create({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSINode',
    metadata: { name: 'n1' },
    spec: { drivers: [{ name: DRIVER, nodeID: 'n1', topologyKeys: [DEFAULT_TOPOLOGY_KEY] }] },
  });
});
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
  await store.close();
});

async function run<T extends { start(): Promise<void>; stop(): Promise<void> }>(x: T): Promise<T> {
  await x.start();
  stops.push(() => x.stop());
  return x;
}

describe('sidecars in process', () => {
  it('provisions, attaches (ControllerPublish with the CSINode id), detaches and deletes', async () => {
    await run(new PersistentVolumeBinder({ store }));
    await run(new AttachDetachController({ store }));
    const prov = await run(
      new ExternalProvisioner({ store, csi: conn, topology: true, retryIntervalStartMs: 20 }),
    );
    expect(prov.driverName).toBe(DRIVER); // asked with GetPluginInfo
    const att = await run(new ExternalAttacher({ store, csi: conn, retryIntervalStartMs: 20 }));
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'sc' },
      provisioner: DRIVER,
    });
    await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: 'sc',
      },
    });
    const claim = await until('bound', async () => {
      const c = await store.get('PersistentVolumeClaim', 'default', 'c');
      return c.status?.phase === 'Bound' ? c : undefined;
    });
    const pv = await store.get('PersistentVolume', '', claim.spec.volumeName!);
    const handle = pv.spec.csi!.volumeHandle;
    await store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'default' },
      spec: {
        nodeName: 'n1',
        containers: [{ name: 'c', image: 'x' }],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'c' } }],
      },
    } as Pod);
    const vaName = attachmentName(handle, DRIVER, 'n1');
    const va = await until('attached', async () => {
      const v = (await store.get('VolumeAttachment', '', vaName)) as VolumeAttachment;
      return v.status?.attached ? v : undefined;
    });
    expect(va.metadata.finalizers).toEqual([attacherFinalizer(DRIVER)]);
    expect((await store.get('PersistentVolume', '', pv.metadata.name!)).metadata.finalizers).toContain(
      `external-attacher/${DRIVER}`,
    );
    expect(driver.driver.snapshotState().volumes[handle]?.published).toHaveProperty('n1');
    expect(att.stats.publishCalls).toBe(1);
    // Pod gone: detached in the driver, attachment and the PV's attacher finalizer gone.
    await store.delete('Pod', 'default', 'p', { gracePeriodSeconds: 0 });
    await until(
      'detached',
      async () => (await store.get('VolumeAttachment', '', vaName).catch(() => undefined)) === undefined,
    );
    expect(Object.keys(driver.driver.snapshotState().volumes[handle]!.published)).toEqual([]);
    await store.delete('PersistentVolumeClaim', 'default', 'c');
    await until('volume deleted', async () => !driver.driver.snapshotState().volumes[handle]);
    await until(
      'pv deleted',
      async () =>
        (await store.get('PersistentVolume', '', pv.metadata.name!).catch(() => undefined)) === undefined,
    );
  });

  it('deletes a provisioned volume whose claim got bound to another volume meanwhile', async () => {
    await run(new PersistentVolumeBinder({ store }));
    await run(new ExternalProvisioner({ store, csi: conn, retryIntervalStartMs: 20 }));
    await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'static' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        csi: { driver: DRIVER, volumeHandle: 'static-handle' },
      },
    });
    const claim = await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: '',
        volumeName: 'static',
      },
    });
    await until(
      'bound to the static volume',
      async () => (await store.get('PersistentVolumeClaim', 'default', 'c')).status?.phase === 'Bound',
    );
    const vol = await conn.controller.CreateVolume({
      name: 'late',
      capacityRange: { requiredBytes: 2 ** 20, limitBytes: 0 },
      volumeCapabilities: [
        { mount: { fsType: '', mountFlags: [], volumeMountGroup: '' }, accessMode: { mode: 1 } },
      ],
      parameters: {},
      secrets: {},
      mutableParameters: {},
    });
    await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name: 'pvc-late',
        annotations: { 'pv.kubernetes.io/provisioned-by': DRIVER },
        finalizers: ['external-provisioner.volume.kubernetes.io/finalizer'],
      },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: '',
        claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'c', uid: claim.metadata.uid },
        csi: { driver: DRIVER, volumeHandle: vol.volume!.volumeId! },
      },
    });
    await until(
      'late volume deleted',
      async () => !driver.driver.snapshotState().volumes[vol.volume!.volumeId!],
    );
    await until(
      'late PV gone',
      async () => (await store.get('PersistentVolume', '', 'pvc-late').catch(() => undefined)) === undefined,
    );
    expect((await store.get('PersistentVolumeClaim', 'default', 'c')).spec.volumeName).toBe('static');
  });

  it('reports an attach failure in the attachment status and retries until it works', async () => {
    const sim = driver.backend as SimBackend;
    await run(new ExternalAttacher({ store, csi: conn, retryIntervalStartMs: 20 }));
    const vol = await conn.controller.CreateVolume({
      name: 'v1',
      capacityRange: { requiredBytes: 2 ** 20, limitBytes: 0 },
      volumeCapabilities: [
        { mount: { fsType: '', mountFlags: [], volumeMountGroup: '' }, accessMode: { mode: 1 } },
      ],
      parameters: {},
      secrets: {},
      mutableParameters: {},
    });
    await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv1' },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        csi: { driver: DRIVER, volumeHandle: vol.volume!.volumeId },
      },
    });
    // No CSINode entry for this node: the attacher cannot know the driver's node id.
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: 'va1' },
      spec: { attacher: DRIVER, nodeName: 'n2', source: { persistentVolumeName: 'pv1' } },
    });
    const failed = await until('attach error', async () => {
      const v = (await store.get('VolumeAttachment', '', 'va1')) as VolumeAttachment;
      return v.status?.attachError ? v : undefined;
    });
    expect(failed.status?.attached).toBe(false);
    expect(failed.status?.attachError?.message).toContain('node "n2" has no NodeID annotation');
    expect(sim.calls.publish ?? 0).toBe(0);
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: 'n2' },
      // The driver knows this node by another id: ControllerPublish must use the CSINode's, not the node name.
      spec: { drivers: [{ name: DRIVER, nodeID: 'n1', topologyKeys: [] }] },
    });
    const ok = await until('attached', async () => {
      const v = (await store.get('VolumeAttachment', '', 'va1')) as VolumeAttachment;
      return v.status?.attached ? v : undefined;
    });
    expect(ok.status?.attachError).toBeUndefined();
    expect(Object.keys(driver.driver.snapshotState().volumes[vol.volume!.volumeId!]!.published)).toEqual([
      'n1',
    ]);
  });

  it('publishes CSIStorageCapacity per class and topology segment from GetCapacity', async () => {
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'late' },
      provisioner: DRIVER,
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'now' },
      provisioner: DRIVER,
    });
    const cap = await run(
      new CapacityPublisher({ store, csi: conn, namespace: 'kube-system', pollIntervalMs: 60_000 }),
    );
    const list = async () => (await store.list('CSIStorageCapacity', { namespace: 'kube-system' })).items;
    const items = await until('capacity objects', async () =>
      (await list()).length === 1 ? list() : undefined,
    );
    expect(items[0]).toMatchObject({
      storageClassName: 'late',
      nodeTopology: { matchLabels: { [DEFAULT_TOPOLOGY_KEY]: 'n1' } },
      capacity: '10Gi',
      metadata: {
        labels: {
          'csi.storage.k8s.io/drivername': DRIVER,
          'csi.storage.k8s.io/managed-by': 'external-provisioner',
        },
      },
    });
    // Capacity changes are seen on the next poll; a removed class takes its objects along.
    await conn.controller.CreateVolume({
      name: 'big',
      capacityRange: { requiredBytes: 4 * 2 ** 30, limitBytes: 0 },
      volumeCapabilities: [
        { mount: { fsType: '', mountFlags: [], volumeMountGroup: '' }, accessMode: { mode: 1 } },
      ],
      parameters: {},
      secrets: {},
      mutableParameters: {},
    });
    await cap.syncNow();
    expect((await list())[0]?.capacity).toBe('6Gi');
    await store.delete('StorageClass', '', 'late');
    await until('objects removed', async () => (await list()).length === 0);
  });

  it('registers a driver with the kubelet plugin watcher protocol', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-reg-'));
    try {
      const reg = new NodeDriverRegistrar({
        csi: conn,
        kubeletRegistrationPath: '/var/lib/kubelet/plugins/kemu/csi.sock',
        pluginRegistrationDir: dir,
      });
      await reg.start();
      stops.push(() => reg.stop());
      expect(reg.socketPath).toBe(path.join(dir, `${DRIVER}-reg.sock`));
      expect(await reg.healthy()).toBe(true);
      const client = new pluginregistration.RegistrationClient(
        `unix://${reg.socketPath}`,
        grpc.credentials.createInsecure(),
      );
      const info = await unaryCall(client, 'GetInfo', {});
      expect(info).toMatchObject({
        type: 'CSIPlugin',
        name: DRIVER,
        endpoint: '/var/lib/kubelet/plugins/kemu/csi.sock',
        supportedVersions: ['1.0.0'],
      });
      await unaryCall(client, 'NotifyRegistrationStatus', {
        pluginRegistered: false,
        error: 'version mismatch',
      });
      expect(reg.status).toEqual({ registered: false, error: 'version mismatch' });
      client.close();
      expect(
        () => new NodeDriverRegistrar({ csi: conn, kubeletRegistrationPath: 'relative/csi.sock' }),
      ).toThrow('must be an absolute path');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
