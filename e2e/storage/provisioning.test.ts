// Dynamic provisioning end to end over the CSI socket (sim backend): Immediate and WaitForFirstConsumer
// classes, Retain and Delete policies, 100 claims, deletion, resize, static volumes beside dynamic ones.
import type { PersistentVolumeClaim } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER, Stack, TOPOLOGY_KEY, until } from './harness.js';

const GiB = 2 ** 30;
let s: Stack;

beforeAll(async () => {
  s = await new Stack({ backend: 'sim' }).start();
  await s.storageClass('fast-delete', {
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    mountOptions: ['noatime'],
    parameters: { tier: 'fast', 'csi.storage.k8s.io/fstype': 'ext4' },
  });
  await s.storageClass('keep', { reclaimPolicy: 'Retain', volumeBindingMode: 'Immediate' });
  await s.storageClass('late', {
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
  });
});
afterAll(async () => {
  await s?.stop();
});

describe('dynamic provisioning through the sidecars', () => {
  const claims: {
    name: string;
    cls: string;
    size: number;
    modes: PersistentVolumeClaim['spec']['accessModes'];
  }[] = [];

  it('binds 100 claims of Immediate and WaitForFirstConsumer classes to correctly shaped PVs', async () => {
    for (let i = 0; i < 100; i++) {
      const cls = i % 3 === 0 ? 'fast-delete' : i % 3 === 1 ? 'keep' : 'late';
      const size = (i % 4) + 1;
      const modes: PersistentVolumeClaim['spec']['accessModes'] =
        i % 5 === 0 ? ['ReadWriteMany'] : ['ReadWriteOnce'];
      claims.push({ name: `data-${i}`, cls, size, modes });
    }
    await Promise.all(
      claims.map((c) =>
        s.claim(c.name, {
          storageClassName: c.cls,
          accessModes: c.modes,
          resources: { requests: { storage: `${c.size}Gi` } },
        }),
      ),
    );
    // WaitForFirstConsumer claims wait for a node; the scheduler's part is played here.
    const late = claims.filter((c) => c.cls === 'late');
    await until('WaitForFirstConsumer events', async () =>
      (await s.events(late[0]!.name)).some((e) => e.reason === 'WaitForFirstConsumer'),
    );
    expect((await s.getClaim(late[0]!.name)).status?.phase).toBe('Pending');
    for (const c of late) {
      await s.store.patch(
        'PersistentVolumeClaim',
        'default',
        c.name,
        { metadata: { annotations: { 'volume.kubernetes.io/selected-node': s.nodeName } } },
        'merge',
      );
    }
    const driverVols = await until(
      '100 volumes bound',
      async () => {
        const l = (await s.store.list('PersistentVolumeClaim')).items;
        return l.length === 100 && l.every((c) => c.status?.phase === 'Bound')
          ? s.driverVolumes()
          : undefined;
      },
      60_000,
    );
    expect(driverVols.size).toBe(100);
    const pvs = (await s.store.list('PersistentVolume')).items;
    expect(pvs).toHaveLength(100);
    for (const c of claims) {
      const claim = await s.getClaim(c.name);
      const pvName = `pvc-${claim.metadata.uid}`;
      expect(claim.spec.volumeName).toBe(pvName);
      expect(claim.metadata.annotations).toMatchObject({
        'pv.kubernetes.io/bind-completed': 'yes',
        'pv.kubernetes.io/bound-by-controller': 'yes',
        'volume.kubernetes.io/storage-provisioner': DRIVER,
        'volume.beta.kubernetes.io/storage-provisioner': DRIVER,
      });
      expect(claim.status).toMatchObject({
        phase: 'Bound',
        accessModes: c.modes,
        capacity: { storage: `${c.size}Gi` },
      });
      const pv = (await s.getPV(pvName))!;
      expect(pv.status?.phase).toBe('Bound');
      expect(pv.metadata.annotations?.['pv.kubernetes.io/provisioned-by']).toBe(DRIVER);
      expect(pv.spec).toMatchObject({
        accessModes: c.modes,
        capacity: { storage: `${c.size}Gi` },
        storageClassName: c.cls,
        persistentVolumeReclaimPolicy: c.cls === 'keep' ? 'Retain' : 'Delete',
        volumeMode: 'Filesystem',
        claimRef: {
          kind: 'PersistentVolumeClaim',
          namespace: 'default',
          name: c.name,
          uid: claim.metadata.uid,
        },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: TOPOLOGY_KEY, operator: 'In', values: [s.nodeName] }] },
            ],
          },
        },
      });
      expect(pv.metadata.finalizers ?? []).toEqual(
        c.cls === 'keep' ? [] : ['external-provisioner.volume.kubernetes.io/finalizer'],
      );
      expect(pv.spec.csi?.driver).toBe(DRIVER);
      expect(driverVols.get(pv.spec.csi!.volumeHandle)?.capacityBytes).toBe(c.size * GiB);
      expect(pv.spec.csi?.volumeAttributes?.['storage.kubernetes.io/csiProvisionerIdentity']).toContain(
        DRIVER,
      );
      if (c.cls === 'fast-delete') {
        expect(pv.spec.mountOptions).toEqual(['noatime']);
        expect(pv.spec.csi?.fsType).toBe('ext4');
      }
    }
    const ev = await s.events(claims[0]!.name);
    expect(ev.find((e) => e.reason === 'ProvisioningSucceeded')?.message).toMatch(
      /^Successfully provisioned volume pvc-/,
    );
    expect(ev.find((e) => e.reason === 'Provisioning')?.message).toBe(
      `External provisioner is provisioning volume for claim "default/${claims[0]!.name}"`,
    );
    expect(s.provisioner.inProgress.size).toBe(0);
  });

  it('grows a volume when its claim asks for more', async () => {
    const c = claims.find((x) => x.cls === 'late')!;
    const claim = await s.getClaim(c.name);
    const pv = (await s.getPV(claim.spec.volumeName!))!;
    await s.store.patch(
      'PersistentVolumeClaim',
      'default',
      c.name,
      { spec: { resources: { requests: { storage: '10Gi' } } } },
      'merge',
    );
    const after = await until('resize', async () => {
      const cur = await s.getClaim(c.name);
      return cur.status?.conditions?.some((x) => x.type === 'FileSystemResizePending') ? cur : undefined;
    });
    // The driver's volume and the PV grew; the node step (NodeExpandVolume) is the kubelet's.
    expect((await s.driverVolumes()).get(pv.spec.csi!.volumeHandle)?.capacityBytes).toBe(10 * GiB);
    expect((await s.getPV(pv.metadata.name!))?.spec.capacity?.storage).toBe('10Gi');
    expect(after.status?.allocatedResources?.storage).toBe('10Gi');
    expect((await s.events(c.name)).map((e) => e.reason)).toEqual(
      expect.arrayContaining(['Resizing', 'FileSystemResizeRequired']),
    );
  });

  it('grows a block volume without a node step: capacity is final at once', async () => {
    await s.claim('raw', { storageClassName: 'keep', volumeMode: 'Block' });
    const claim = await s.bound('raw');
    const pv = (await s.getPV(claim.spec.volumeName!))!;
    expect(pv.spec.volumeMode).toBe('Block');
    expect(pv.spec.csi?.fsType).toBeUndefined();
    await s.store.patch(
      'PersistentVolumeClaim',
      'default',
      'raw',
      { spec: { resources: { requests: { storage: '3Gi' } } } },
      'merge',
    );
    const after = await until('resized', async () => {
      const c = await s.getClaim('raw');
      return c.status?.capacity?.storage === '3Gi' ? c : undefined;
    });
    expect(after.status?.conditions ?? []).toEqual([]);
    expect((await s.driverVolumes()).get(pv.spec.csi!.volumeHandle)?.capacityBytes).toBe(3 * GiB);
    expect((await s.events('raw')).map((e) => e.reason)).toContain('VolumeResizeSuccessful');
    await s.store.delete('PersistentVolumeClaim', 'default', 'raw');
    await until('released', async () => (await s.getPV(pv.metadata.name!))?.status?.phase === 'Released');
    await s.store.delete('PersistentVolume', '', pv.metadata.name!);
    await s.conn.controller.DeleteVolume({ volumeId: pv.spec.csi!.volumeHandle, secrets: {} });
  });

  it('deletes Delete-policy volumes in the driver and keeps Retain-policy ones when claims go', async () => {
    const before = await s.driverVolumes();
    const handles = new Map<string, string>();
    for (const c of claims) {
      const pvName = (await s.getClaim(c.name)).spec.volumeName!;
      handles.set(c.name, (await s.getPV(pvName))!.spec.csi!.volumeHandle);
    }
    await Promise.all(claims.map((c) => s.store.delete('PersistentVolumeClaim', 'default', c.name)));
    const retained = claims.filter((c) => c.cls === 'keep');
    await until(
      'Delete volumes gone',
      async () => (await s.store.list('PersistentVolume')).items.length === retained.length,
      30_000,
    );
    const after = await s.driverVolumes();
    expect(after.size).toBe(retained.length);
    for (const c of claims) expect(after.has(handles.get(c.name)!)).toBe(c.cls === 'keep');
    for (const pv of (await s.store.list('PersistentVolume')).items) {
      expect(pv.status?.phase).toBe('Released');
      expect(pv.spec.persistentVolumeReclaimPolicy).toBe('Retain');
    }
    expect(before.size).toBe(100);
  });

  it('binds a pre-created (static) volume instead of provisioning when one matches', async () => {
    const vol = await s.conn.controller.CreateVolume({
      name: 'static-one',
      capacityRange: { requiredBytes: 3 * GiB, limitBytes: 0 },
      volumeCapabilities: [
        { mount: { fsType: '', mountFlags: [], volumeMountGroup: '' }, accessMode: { mode: 1 } },
      ],
      parameters: {},
      secrets: {},
      mutableParameters: {},
    });
    await s.store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'static-pv' },
      spec: {
        capacity: { storage: '3Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'fast-delete',
        persistentVolumeReclaimPolicy: 'Retain',
        csi: { driver: DRIVER, volumeHandle: vol.volume!.volumeId },
      },
    });
    await until(
      'static pv available',
      async () => (await s.getPV('static-pv'))?.status?.phase === 'Available',
    );
    const calls = s.provisioner.stats.createVolumeCalls;
    await s.claim('uses-static', {
      storageClassName: 'fast-delete',
      resources: { requests: { storage: '2Gi' } },
    });
    const c = await s.bound('uses-static');
    expect(c.spec.volumeName).toBe('static-pv');
    expect(s.provisioner.stats.createVolumeCalls).toBe(calls);
  });
});
