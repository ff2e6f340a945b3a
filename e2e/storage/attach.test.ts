// Pod volumes on a node: the attach/detach controller asks, the external-attacher publishes over the socket.
import type { Node, Pod, VolumeAttachment } from '@kemu/core';
import { attachmentName } from '@kemu/core/controllers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER, Stack, until } from './harness.js';

let s: Stack;
beforeAll(async () => {
  s = await new Stack({ backend: 'sim', enableAttach: true }).start();
  await s.storageClass('sc');
});
afterAll(async () => {
  await s?.stop();
});

describe('attach and detach', () => {
  it('publishes a pod volume to its node and unpublishes it when the pod is gone', async () => {
    await s.claim('c', { storageClassName: 'sc' });
    const claim = await s.bound('c');
    const handle = (await s.getPV(claim.spec.volumeName!))!.spec.csi!.volumeHandle;
    await s.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace: 'default' },
      spec: {
        nodeName: s.nodeName,
        containers: [{ name: 'c', image: 'x' }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }],
      },
    } as Pod);
    const name = attachmentName(handle, DRIVER, s.nodeName);
    const va = await until('attached', async () => {
      const v = (await s.store.get('VolumeAttachment', '', name).catch(() => undefined)) as
        | VolumeAttachment
        | undefined;
      return v?.status?.attached ? v : undefined;
    });
    expect(va.spec).toEqual({
      attacher: DRIVER,
      nodeName: s.nodeName,
      source: { persistentVolumeName: claim.spec.volumeName },
    });
    expect(va.metadata.finalizers).toEqual([`external-attacher/${DRIVER}`]);
    const vol = await s.conn.controller.ControllerGetVolume({ volumeId: handle });
    expect(vol.status?.publishedNodeIds).toEqual([s.nodeName]);
    const node = await until('node status', async () => {
      const n = (await s.store.get('Node', '', s.nodeName)) as Node;
      return n.status?.volumesAttached?.length ? n : undefined;
    });
    expect(node.status?.volumesAttached).toEqual([
      { name: `kubernetes.io/csi/${DRIVER}^${handle}`, devicePath: '' },
    ]);
    await s.store.delete('Pod', 'default', 'app', { gracePeriodSeconds: 0 });
    await until(
      'detached',
      async () => (await s.store.get('VolumeAttachment', '', name).catch(() => undefined)) === undefined,
    );
    expect(
      (await s.conn.controller.ControllerGetVolume({ volumeId: handle })).status?.publishedNodeIds,
    ).toEqual([]);
    await s.store.delete('PersistentVolumeClaim', 'default', 'c');
    await until('volume deleted', async () => (await s.driverVolumes()).size === 0);
    await until('pv gone', async () => (await s.getPV(claim.spec.volumeName!)) === undefined);
  });
});
