import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Node, Pod } from '../api-core.js';
import { MemoryStore } from '../store-memory.js';
import { AttachDetachController, attachmentName } from './attach-detach.js';
import { PersistentVolumeBinder } from './pv-binder.js';
import { makePV, makePVC, until } from './test-helpers.js';

let store: MemoryStore;
let adc: AttachDetachController;
let binder: PersistentVolumeBinder;

const DRIVER = 'test.csi.k8s.io';

function node(name: string, managed = true): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      ...(managed
        ? { annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' } }
        : {}),
    },
    spec: {},
  } as Node;
}

function pod(name: string, nodeName: string, claim: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      nodeName,
      containers: [{ name: 'c', image: 'busybox' }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
    },
  } as Pod;
}

beforeEach(async () => {
  store = await MemoryStore.open();
  binder = new PersistentVolumeBinder({ store });
  adc = new AttachDetachController({ store, resyncPeriodMs: 100 });
  await Promise.all([binder.start(), adc.start()]);
  await store.create(makePV('pv1'));
  await store.create(makePVC('c1'));
  await until(
    'bound',
    async () => (await store.get('PersistentVolumeClaim', 'default', 'c1')).status?.phase === 'Bound',
  );
});
afterEach(async () => {
  await Promise.all([binder.stop(), adc.stop()]);
  await store.close();
});

describe('AttachDetachController', () => {
  it('names attachments like the kubelet: csi-sha256(handle+driver+node)', () => {
    const want = createHash('sha256').update('h-pv1test.csi.k8s.ion1').digest('hex');
    expect(attachmentName('h-pv1', DRIVER, 'n1')).toBe(`csi-${want}`);
  });

  it('creates a VolumeAttachment for a pod volume on its node and deletes it when the pod goes', async () => {
    await store.create(node('n1'));
    await store.create(pod('p', 'n1', 'c1'));
    const name = attachmentName('h-pv1', DRIVER, 'n1');
    const va = await until('va', () => store.get('VolumeAttachment', '', name).catch(() => undefined));
    expect(va.spec).toEqual({ attacher: DRIVER, nodeName: 'n1', source: { persistentVolumeName: 'pv1' } });
    // The attacher reports success: the node lists the volume as attached and the pod hears of it.
    await store.patch('VolumeAttachment', '', name, { status: { attached: true } }, 'merge', {
      subresource: 'status',
    });
    const n = await until('node status', async () => {
      const n = (await store.get('Node', '', 'n1')) as Node;
      return n.status?.volumesAttached?.length ? n : undefined;
    });
    expect(n.status?.volumesAttached).toEqual([
      { name: `kubernetes.io/csi/${DRIVER}^h-pv1`, devicePath: '' },
    ]);
    const ev = await until('event', async () =>
      (await store.list('Event', { fieldSelector: 'involvedObject.name=p' })).items.find(
        (e) => e.reason === 'SuccessfulAttachVolume',
      ),
    );
    expect(ev.message).toContain('AttachVolume.Attach succeeded for volume "pv1"');
    await store.delete('Pod', 'default', 'p', { gracePeriodSeconds: 0 });
    await until(
      'va deleted',
      async () => (await store.get('VolumeAttachment', '', name).catch(() => undefined)) === undefined,
    );
  });

  it('waits for the kubelet to stop using the volume before detaching', async () => {
    const n = node('n1');
    n.status = { volumesInUse: [`kubernetes.io/csi/${DRIVER}^h-pv1`] };
    await store.create(n);
    await store.patch(
      'Node',
      '',
      'n1',
      { status: { volumesInUse: [`kubernetes.io/csi/${DRIVER}^h-pv1`] } },
      'merge',
      { subresource: 'status' },
    );
    await store.create(pod('p', 'n1', 'c1'));
    const name = attachmentName('h-pv1', DRIVER, 'n1');
    await until('va', () => store.get('VolumeAttachment', '', name).catch(() => undefined));
    await store.delete('Pod', 'default', 'p', { gracePeriodSeconds: 0 });
    await new Promise((r) => setTimeout(r, 300));
    expect(await store.get('VolumeAttachment', '', name).catch(() => undefined)).toBeDefined();
    await store.patch('Node', '', 'n1', { status: { volumesInUse: [] } }, 'merge', { subresource: 'status' });
    await until(
      'va deleted',
      async () => (await store.get('VolumeAttachment', '', name).catch(() => undefined)) === undefined,
    );
  });

  it('creates nothing when the CSIDriver says attachRequired: false, or the node is not controller-managed', async () => {
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: DRIVER },
      spec: { attachRequired: false },
    });
    await store.create(node('n1'));
    await store.create(node('n2', false));
    await store.create(pod('p', 'n1', 'c1'));
    await store.create(pod('q', 'n2', 'c1'));
    await new Promise((r) => setTimeout(r, 300));
    expect((await store.list('VolumeAttachment')).items).toHaveLength(0);
    // Once the driver needs attaching, only the managed node gets an attachment.
    await store.delete('CSIDriver', '', DRIVER);
    await until('va', async () => (await store.list('VolumeAttachment')).items.length === 1);
    await new Promise((r) => setTimeout(r, 200));
    const vas = (await store.list('VolumeAttachment')).items;
    expect(vas.map((v) => v.spec.nodeName)).toEqual(['n1']);
  });
  it('syncs a node again for pods with a claim, not for every change of a pod without one', async () => {
    const quiet = new AttachDetachController({ store, resyncPeriodMs: 0 });
    const queued: string[] = [];
    const enqueue = quiet.controller.enqueue.bind(quiet.controller);
    // Pod events name their node; the node's own events (objects) are left out.
    quiet.controller.enqueue = (key) => {
      if (typeof key === 'string') queued.push(key);
      enqueue(key);
    };
    await quiet.start();
    try {
      await store.create(node('n1'));
      const bare = pod('bare', 'n1', 'c1');
      bare.spec!.volumes = [{ name: 'tmp', emptyDir: {} }];
      await store.create(bare);
      await store.patch('Pod', 'default', 'bare', { status: { phase: 'Running' } }, 'merge', {
        subresource: 'status',
      });
      await store.delete('Pod', 'default', 'bare', { gracePeriodSeconds: 0 });
      // A claim not bound yet, so that no VolumeAttachment (whose events name the node too) is made.
      await store.create(pod('p', 'n1', 'unbound'));
      // The informer delivers in order: once the claim pod's add is seen, the bare pod's events were too.
      await until('claim pod seen', async () => queued.includes('n1'));
      expect(queued).toEqual(['n1']);
      await store.patch('Pod', 'default', 'p', { status: { phase: 'Running' } }, 'merge', {
        subresource: 'status',
      });
      await until('claim pod update seen', async () => queued.length === 2);
      expect(queued).toEqual(['n1', 'n1']);
    } finally {
      await quiet.stop();
    }
  });
});
