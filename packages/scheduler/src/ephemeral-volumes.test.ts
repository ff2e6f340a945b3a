// Generic ephemeral volumes in volume binding: the pod's own claim <pod>-<volume> is bound like any claim;
// until the ephemeral volume controller has made it the pod waits, and a claim the pod does not own stops it.
import { describe, expect, it } from 'vitest';
import { simulate } from './simulate.js';
import { makeNode, makePod } from './testing.js';

const wffc = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'local' }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' };
const pv = {
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name: 'pv-n2' },
  spec: {
    capacity: { storage: '20Gi' },
    accessModes: ['ReadWriteOnce'],
    storageClassName: 'local',
    local: { path: '/mnt/disks/ssd1' },
    nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n2'] }] }] } },
  },
  status: { phase: 'Available' },
};
const claim = (owner?: string) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'p-scratch', namespace: 'default', uid: 'pvc-1', ...(owner ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: owner, controller: true }] } : {}) },
  spec: { storageClassName: 'local', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
});
const pod = () =>
  makePod('p', {
    spec: {
      volumes: [
        { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { storageClassName: 'local', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } } } } },
      ],
    },
  });

describe('VolumeBinding with generic ephemeral volumes', () => {
  it('binds the pod-owned claim on the node of a matching local PV', async () => {
    const r = await simulate([wffc, pv, claim('uid-p'), makeNode('n1'), makeNode('n2')], [pod()]);
    expect(r.placements[0]?.node).toBe('n2');
  });

  it('waits for the claim, and refuses one the pod does not own', async () => {
    const missing = await simulate([wffc, pv, makeNode('n1')], [pod()]);
    expect(missing.placements[0]?.message).toContain('waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"');
    const foreign = await simulate([wffc, pv, claim(), makeNode('n1')], [pod()]);
    expect(foreign.placements[0]?.message).toContain('PVC default/p-scratch was not created for pod default/p (pod is not owner)');
  });
});
