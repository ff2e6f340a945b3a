// Volume binding: Immediate and WaitForFirstConsumer claims, static PVs with node affinity, dynamic
// provisioning with allowed topologies and CSIStorageCapacity, zones and CSI attach limits.
import { describe, expect, it } from 'vitest';
import { simulate } from './simulate.js';
import { makeNode, makePod } from './testing.js';
import type { KubeObject } from './types.js';

const sc = (
  name: string,
  mode: 'Immediate' | 'WaitForFirstConsumer',
  provisioner = 'kubernetes.io/no-provisioner',
  extra = {},
) => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name },
  provisioner,
  volumeBindingMode: mode,
  ...extra,
});
const pvc = (name: string, cls: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'default', uid: `pvc-${name}` },
  spec: {
    storageClassName: cls,
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '10Gi' } },
    ...extra,
  },
});
const localPV = (name: string, node: string, size = '20Gi', cls = 'local-storage') => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    capacity: { storage: size },
    accessModes: ['ReadWriteOnce'],
    storageClassName: cls,
    local: { path: '/mnt/disks/ssd1' },
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] },
        ],
      },
    },
  },
  status: { phase: 'Available' },
});
const withClaim = (name: string, claim: string) =>
  makePod(name, { spec: { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] } });

async function run(cluster: KubeObject[], pods: ReturnType<typeof makePod>[]) {
  const r = await simulate(cluster, pods);
  return new Map(r.placements.map((p) => [p.pod.split('/')[1], p]));
}

describe('VolumeBinding', () => {
  it('WaitForFirstConsumer: the pod goes where a matching local PV is, and the PV is pre-bound to the claim', async () => {
    const cluster = [
      sc('local-storage', 'WaitForFirstConsumer'),
      pvc('claim', 'local-storage'),
      localPV('pv-n2', 'n2'),
      makeNode('n1'),
      makeNode('n2'),
      makeNode('n3'),
    ];
    const by = await run(cluster, [withClaim('p', 'claim')]);
    expect(by.get('p')?.node).toBe('n2');
  });

  it('WaitForFirstConsumer with no fitting PV and no provisioner explains it', async () => {
    const cluster = [
      sc('local-storage', 'WaitForFirstConsumer'),
      pvc('claim', 'local-storage'),
      localPV('small', 'n1', '1Gi'),
      makeNode('n1'),
    ];
    const by = await run(cluster, [withClaim('p', 'claim')]);
    expect(by.get('p')?.message).toMatch(
      /^0\/1 nodes are available: 1 node\(s\) didn't find available persistent volumes to bind\./,
    );
  });

  it('a PV promised to one pod is not handed to the next', async () => {
    const cluster = [
      sc('local-storage', 'WaitForFirstConsumer'),
      pvc('c1', 'local-storage'),
      pvc('c2', 'local-storage'),
      localPV('only', 'n1'),
      makeNode('n1'),
    ];
    const by = await run(cluster, [withClaim('a', 'c1'), withClaim('b', 'c2')]);
    expect(by.get('a')?.node).toBe('n1');
    expect(by.get('b')?.node).toBeNull();
  });

  it('dynamic provisioning honours allowedTopologies and CSIStorageCapacity', async () => {
    const cls = sc('fast', 'WaitForFirstConsumer', 'hostpath.csi.kemu.dev', {
      allowedTopologies: [
        { matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['z1', 'z2'] }] },
      ],
    });
    const cap = (zone: string, size: string) => ({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIStorageCapacity',
      metadata: { name: `cap-${zone}`, namespace: 'kube-system' },
      storageClassName: 'fast',
      nodeTopology: { matchLabels: { 'topology.kubernetes.io/zone': zone } },
      capacity: size,
    });
    const cluster = [
      cls,
      cap('z1', '5Gi'),
      cap('z2', '100Gi'),
      pvc('claim', 'fast'),
      makeNode('a', { labels: { 'topology.kubernetes.io/zone': 'z1' } }),
      makeNode('b', { labels: { 'topology.kubernetes.io/zone': 'z2' } }),
      makeNode('c', { labels: { 'topology.kubernetes.io/zone': 'z3' } }),
    ];
    const by = await run(cluster, [withClaim('p', 'claim')]);
    expect(by.get('p')?.node).toBe('b');
    const tight = await run(
      [
        cls,
        cap('z1', '5Gi'),
        pvc('claim', 'fast'),
        makeNode('a', { labels: { 'topology.kubernetes.io/zone': 'z1' } }),
      ],
      [withClaim('q', 'claim')],
    );
    expect(tight.get('q')?.message).toMatch(
      /^0\/1 nodes are available: 1 node\(s\) did not have enough free storage\./,
    );
  });

  it('Immediate claims that are still unbound keep the pod pending', async () => {
    const by = await run(
      [sc('std', 'Immediate', 'x.csi'), pvc('claim', 'std'), makeNode('n1')],
      [withClaim('p', 'claim')],
    );
    expect(by.get('p')?.message).toBe(
      '0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling..',
    );
  });

  it('a bound PV with node affinity restricts the pod to that node', async () => {
    const pv = {
      ...localPV('pv', 'n2'),
      spec: { ...localPV('pv', 'n2').spec, claimRef: { name: 'claim', namespace: 'default' } },
    };
    const claim = pvc('claim', 'local-storage', { volumeName: 'pv' });
    const by = await run(
      [sc('local-storage', 'WaitForFirstConsumer'), claim, pv, makeNode('n1'), makeNode('n2')],
      [withClaim('p', 'claim')],
    );
    expect(by.get('p')?.node).toBe('n2');
    const missing = await run(
      [pvc('claim', 'x', { volumeName: 'gone' }), makeNode('n1')],
      [withClaim('q', 'claim')],
    );
    expect(missing.get('q')?.message).toContain(
      '1 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)',
    );
  });
});

describe('VolumeZone, VolumeRestrictions and NodeVolumeLimits', () => {
  it('a zonal PV only mounts in its zone', async () => {
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'zonal', labels: { 'topology.kubernetes.io/zone': 'z2' } },
      spec: {
        capacity: { storage: '10Gi' },
        accessModes: ['ReadWriteOnce'],
        csi: { driver: 'd', volumeHandle: 'h' },
      },
    };
    const cluster = [
      pv,
      pvc('claim', '', { volumeName: 'zonal' }),
      makeNode('a', { labels: { 'topology.kubernetes.io/zone': 'z1' } }),
      makeNode('b', { labels: { 'topology.kubernetes.io/zone': 'z2' } }),
    ];
    const by = await run(cluster, [withClaim('p', 'claim')]);
    expect(by.get('p')?.node).toBe('b');
  });

  it('ReadWriteOncePod claims are used by one pod at a time', async () => {
    const pv = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'v' },
      spec: {
        capacity: { storage: '10Gi' },
        accessModes: ['ReadWriteOncePod'],
        csi: { driver: 'd', volumeHandle: 'h' },
      },
    };
    const claim = pvc('solo', '', { volumeName: 'v', accessModes: ['ReadWriteOncePod'] });
    const by = await run(
      [pv, claim, makeNode('a'), makeNode('b')],
      [withClaim('first', 'solo'), withClaim('second', 'solo')],
    );
    expect(by.get('first')?.node).not.toBeNull();
    expect(by.get('second')?.message).toMatch(
      /node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode/,
    );
  });

  it('CSINode allocatable count caps attachable volumes per node', async () => {
    const csiNode = (node: string, count: number) => ({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: node },
      spec: { drivers: [{ name: 'd', nodeID: node, allocatable: { count } }] },
    });
    const pv = (n: string) => ({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: n },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        csi: { driver: 'd', volumeHandle: n },
      },
    });
    const cluster = [
      csiNode('a', 1),
      csiNode('b', 1),
      pv('v1'),
      pv('v2'),
      pv('v3'),
      pvc('c1', '', { volumeName: 'v1' }),
      pvc('c2', '', { volumeName: 'v2' }),
      pvc('c3', '', { volumeName: 'v3' }),
      makeNode('a'),
      makeNode('b'),
    ];
    const by = await run(cluster, [withClaim('p1', 'c1'), withClaim('p2', 'c2'), withClaim('p3', 'c3')]);
    expect(new Set([by.get('p1')?.node, by.get('p2')?.node])).toEqual(new Set(['a', 'b']));
    expect(by.get('p3')?.message).toMatch(/^0\/2 nodes are available: 2 node\(s\) exceed max volume count\./);
  });
});
