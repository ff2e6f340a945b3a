// Clone and restore-from-snapshot carry data (hostpath backend, real files), through the provisioner's
// data source handling; the attach path publishes the volume on the node first.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { VolumeSnapshot, VolumeSnapshotContent } from '@kemu/csi-sidecars';
import { registerSidecarKinds } from '@kemu/csi-sidecars';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER, Stack, until } from './harness.js';

let s: Stack;
const cap = { mount: { fsType: '', mountFlags: [], volumeMountGroup: '' }, accessMode: { mode: 1 } };

/** Stage and publish a claim's volume under the test directory and return the path a pod would see. */
async function mount(claimName: string): Promise<string> {
  const claim = await s.getClaim(claimName);
  const pv = (await s.getPV(claim.spec.volumeName!))!;
  const volumeId = pv.spec.csi!.volumeHandle;
  const staging = path.join(s.dir, 'staging', claimName);
  const target = path.join(s.dir, 'pods', claimName, 'mount');
  await fs.mkdir(staging, { recursive: true });
  await fs.mkdir(path.dirname(target), { recursive: true });
  const volumeContext = pv.spec.csi!.volumeAttributes ?? {};
  await s.conn.node.NodeStageVolume({
    volumeId,
    stagingTargetPath: staging,
    volumeCapability: cap,
    publishContext: {},
    secrets: {},
    volumeContext,
  });
  await s.conn.node.NodePublishVolume({
    volumeId,
    stagingTargetPath: staging,
    targetPath: target,
    volumeCapability: cap,
    readonly: false,
    publishContext: {},
    secrets: {},
    volumeContext,
  });
  return target;
}

async function unmount(claimName: string): Promise<void> {
  const claim = await s.getClaim(claimName);
  const volumeId = (await s.getPV(claim.spec.volumeName!))!.spec.csi!.volumeHandle;
  await s.conn.node.NodeUnpublishVolume({
    volumeId,
    targetPath: path.join(s.dir, 'pods', claimName, 'mount'),
  });
  await s.conn.node.NodeUnstageVolume({
    volumeId,
    stagingTargetPath: path.join(s.dir, 'staging', claimName),
  });
}

beforeAll(async () => {
  registerSidecarKinds();
  s = await new Stack({ backend: 'hostpath' }).start();
  await s.storageClass('hp', { reclaimPolicy: 'Delete' });
  await s.claim('src', { storageClassName: 'hp' });
  await s.bound('src');
  const dir = await mount('src');
  await fs.writeFile(path.join(dir, 'greeting.txt'), 'hello from the source volume\n');
});
afterAll(async () => {
  await s?.stop();
});

describe('data sources (hostpath)', () => {
  it('a clone carries the source claim data and the source is protected while cloning', async () => {
    await s.claim('copy', {
      storageClassName: 'hp',
      dataSource: { kind: 'PersistentVolumeClaim', name: 'src' },
    });
    const c = await s.bound('copy');
    const pv = (await s.getPV(c.spec.volumeName!))!;
    expect(pv.spec.csi?.driver).toBe(DRIVER);
    const dir = await mount('copy');
    expect(await fs.readFile(path.join(dir, 'greeting.txt'), 'utf8')).toBe('hello from the source volume\n');
    // The cloning-protection finalizer is gone once the clone exists.
    await until(
      'finalizer released',
      async () =>
        !(await s.getClaim('src')).metadata.finalizers?.includes(
          'provisioner.storage.kubernetes.io/cloning-protection',
        ),
    );
    // Independent copies: writing the clone leaves the source alone.
    await fs.writeFile(path.join(dir, 'greeting.txt'), 'changed in the clone\n');
    const srcDir = path.join(s.dir, 'pods', 'src', 'mount');
    expect(await fs.readFile(path.join(srcDir, 'greeting.txt'), 'utf8')).toBe(
      'hello from the source volume\n',
    );
    await unmount('copy');
  });

  it('a clone smaller than its source is refused with the upstream message', async () => {
    await s.claim('too-small', {
      storageClassName: 'hp',
      resources: { requests: { storage: '10Mi' } },
      dataSource: { kind: 'PersistentVolumeClaim', name: 'src' },
    });
    const ev = await until('event', async () =>
      (await s.events('too-small')).find((e) => e.reason === 'ProvisioningFailed'),
    );
    expect(ev.message).toContain(
      'new PVC request must be greater than or equal in size to the specified PVC data source',
    );
  });

  it('a claim restored from a VolumeSnapshot holds the data as it was at snapshot time', async () => {
    const srcClaim = await s.getClaim('src');
    const srcHandle = (await s.getPV(srcClaim.spec.volumeName!))!.spec.csi!.volumeHandle;
    // The snapshot controller's part, done by hand: CreateSnapshot and the two API objects.
    const snap = await s.conn.controller.CreateSnapshot({
      sourceVolumeId: srcHandle,
      name: 'snapshot-1',
      secrets: {},
      parameters: {},
    });
    const vs = (await s.store.create({
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { name: 'snap', namespace: 'default' },
      spec: { source: { persistentVolumeClaimName: 'src' } },
    } satisfies VolumeSnapshot)) as VolumeSnapshot;
    const content = (await s.store.create({
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshotContent',
      metadata: { name: 'snapcontent-1' },
      spec: {
        driver: DRIVER,
        deletionPolicy: 'Delete',
        source: { volumeHandle: srcHandle },
        volumeSnapshotRef: {
          kind: 'VolumeSnapshot',
          namespace: 'default',
          name: 'snap',
          uid: vs.metadata.uid,
        },
      },
    } satisfies VolumeSnapshotContent)) as VolumeSnapshotContent;
    await s.store.updateStatus({
      ...content,
      status: {
        snapshotHandle: snap.snapshot!.snapshotId,
        readyToUse: true,
        restoreSize: snap.snapshot!.sizeBytes,
      },
    });
    // Not ready yet: the claim waits with a reason.
    await s.claim('restored', {
      storageClassName: 'hp',
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' },
    });
    const ev = await until('not ready event', async () =>
      (await s.events('restored')).find((e) => e.reason === 'ProvisioningFailed'),
    );
    expect(ev.message).toContain('snapshot snap is not Ready');
    // The source changes after the snapshot; the restore must not see that.
    await fs.writeFile(
      path.join(s.dir, 'pods', 'src', 'mount', 'greeting.txt'),
      'written after the snapshot\n',
    );
    await s.store.updateStatus({
      ...vs,
      status: { boundVolumeSnapshotContentName: 'snapcontent-1', readyToUse: true, restoreSize: '1Gi' },
    });
    await s.bound('restored');
    const dir = await mount('restored');
    expect(await fs.readFile(path.join(dir, 'greeting.txt'), 'utf8')).toBe('hello from the source volume\n');
    await unmount('restored');
  });
});
