import { describe, expect, it } from 'vitest';
import type { Node, PersistentVolume, PersistentVolumeClaim } from '../api-core.js';
import { checkVolumeSatisfyClaim, findBestMatchForClaim } from './pv-matching.js';

type PVOpts = {
  size?: string;
  modes?: PersistentVolume['spec']['accessModes'];
  cls?: string;
  mode?: 'Filesystem' | 'Block';
  labels?: Record<string, string>;
  phase?: string;
  claimRef?: PersistentVolume['spec']['claimRef'];
  zone?: string;
  betaClass?: string;
  deleting?: boolean;
};

function pv(name: string, o: PVOpts = {}): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      labels: o.labels,
      ...(o.betaClass !== undefined
        ? { annotations: { 'volume.beta.kubernetes.io/storage-class': o.betaClass } }
        : {}),
      ...(o.deleting ? { deletionTimestamp: '2026-01-01T00:00:00Z' } : {}),
    },
    spec: {
      capacity: { storage: o.size ?? '1Gi' },
      accessModes: o.modes ?? ['ReadWriteOnce'],
      storageClassName: o.cls ?? '',
      volumeMode: o.mode ?? 'Filesystem',
      claimRef: o.claimRef,
      csi: { driver: 'd', volumeHandle: name },
      ...(o.zone
        ? {
            nodeAffinity: {
              required: {
                nodeSelectorTerms: [
                  { matchExpressions: [{ key: 'zone', operator: 'In', values: [o.zone] }] },
                ],
              },
            },
          }
        : {}),
    },
    status: { phase: (o.phase ?? 'Available') as 'Available' },
  };
}

type PVCOpts = {
  size?: string;
  modes?: PersistentVolumeClaim['spec']['accessModes'];
  cls?: string;
  mode?: 'Filesystem' | 'Block';
  selector?: PersistentVolumeClaim['spec']['selector'];
  betaClass?: string;
};

function pvc(o: PVCOpts = {}): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: 'claim',
      namespace: 'ns',
      uid: 'uid-1',
      ...(o.betaClass !== undefined
        ? { annotations: { 'volume.beta.kubernetes.io/storage-class': o.betaClass } }
        : {}),
    },
    spec: {
      accessModes: o.modes ?? ['ReadWriteOnce'],
      resources: { requests: { storage: o.size ?? '1Gi' } },
      storageClassName: o.cls ?? '',
      volumeMode: o.mode ?? 'Filesystem',
      selector: o.selector,
    },
  };
}

const node = (zone: string): Node =>
  ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', labels: { zone } }, spec: {} }) as Node;

interface Row {
  rule: string;
  claim: PersistentVolumeClaim;
  volumes: PersistentVolume[];
  expect: string | undefined;
  node?: Node;
  delayBinding?: boolean;
}

const table: Row[] = [
  {
    rule: 'capacity: smallest volume that fits wins',
    claim: pvc({ size: '2Gi' }),
    volumes: [pv('a', { size: '10Gi' }), pv('b', { size: '3Gi' }), pv('c', { size: '1Gi' })],
    expect: 'b',
  },
  {
    rule: 'capacity: exact fit is taken',
    claim: pvc({ size: '3Gi' }),
    volumes: [pv('a', { size: '5Gi' }), pv('b', { size: '3Gi' })],
    expect: 'b',
  },
  {
    rule: 'capacity: units compare by value (1G < 1Gi)',
    claim: pvc({ size: '1Gi' }),
    volumes: [pv('a', { size: '1G' }), pv('b', { size: '1074Mi' })],
    expect: 'b',
  },
  {
    rule: 'capacity: nothing big enough',
    claim: pvc({ size: '20Gi' }),
    volumes: [pv('a', { size: '10Gi' })],
    expect: undefined,
  },
  {
    rule: 'access modes: smallest superset group first, even if bigger',
    claim: pvc({ modes: ['ReadWriteOnce'] }),
    volumes: [
      pv('rwo-rox', { size: '1Gi', modes: ['ReadWriteOnce', 'ReadOnlyMany'] }),
      pv('rwo', { size: '5Gi', modes: ['ReadWriteOnce'] }),
    ],
    expect: 'rwo',
  },
  {
    rule: 'access modes: a volume must offer every requested mode',
    claim: pvc({ modes: ['ReadWriteOnce', 'ReadWriteMany'] }),
    volumes: [pv('a', { modes: ['ReadWriteOnce'] }), pv('b', { modes: ['ReadWriteMany'] })],
    expect: undefined,
  },
  {
    rule: 'access modes: falls through to a larger group when the smaller has nothing fitting',
    claim: pvc({ size: '4Gi', modes: ['ReadWriteOnce'] }),
    volumes: [
      pv('small', { size: '1Gi', modes: ['ReadWriteOnce'] }),
      pv('multi', { size: '5Gi', modes: ['ReadWriteOnce', 'ReadWriteMany'] }),
    ],
    expect: 'multi',
  },
  {
    rule: 'storageClassName must be equal',
    claim: pvc({ cls: 'gold' }),
    volumes: [pv('a', { cls: 'silver' }), pv('b', { cls: 'gold', size: '9Gi' })],
    expect: 'b',
  },
  {
    rule: 'storageClassName "" only matches volumes without class',
    claim: pvc({ cls: '' }),
    volumes: [pv('a', { cls: 'gold' }), pv('b', { cls: '' })],
    expect: 'b',
  },
  {
    rule: 'beta storage-class annotation wins over spec',
    claim: pvc({ cls: 'gold', betaClass: 'silver' }),
    volumes: [pv('a', { cls: 'gold' }), pv('b', { cls: 'silver' })],
    expect: 'b',
  },
  {
    rule: 'volumeMode Block only matches Block',
    claim: pvc({ mode: 'Block' }),
    volumes: [pv('fs'), pv('blk', { mode: 'Block', size: '8Gi' })],
    expect: 'blk',
  },
  {
    rule: 'volumeMode Filesystem does not take Block',
    claim: pvc({ mode: 'Filesystem' }),
    volumes: [pv('blk', { mode: 'Block' })],
    expect: undefined,
  },
  {
    rule: 'selector matchLabels',
    claim: pvc({ selector: { matchLabels: { tier: 'fast' } } }),
    volumes: [pv('a', { labels: { tier: 'slow' } }), pv('b', { labels: { tier: 'fast' }, size: '7Gi' })],
    expect: 'b',
  },
  {
    rule: 'selector matchExpressions NotIn',
    claim: pvc({ selector: { matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['slow'] }] } }),
    volumes: [pv('a', { labels: { tier: 'slow' } }), pv('b', { size: '2Gi' })],
    expect: 'b',
  },
  {
    rule: 'only Available volumes are taken',
    claim: pvc(),
    volumes: [pv('a', { phase: 'Released' }), pv('b', { phase: 'Pending' })],
    expect: undefined,
  },
  {
    rule: 'a volume with a claimRef to another claim is skipped',
    claim: pvc(),
    volumes: [pv('a', { claimRef: { namespace: 'ns', name: 'other' } })],
    expect: undefined,
  },
  {
    rule: 'pre-bound volume (claimRef without uid) wins over a smaller fit and ignores the selector',
    claim: pvc({ selector: { matchLabels: { x: 'y' } } }),
    volumes: [pv('small'), pv('mine', { size: '9Gi', claimRef: { namespace: 'ns', name: 'claim' } })],
    expect: 'mine',
  },
  {
    rule: 'pre-bound volume with another uid is not ours',
    claim: pvc(),
    volumes: [pv('a', { claimRef: { namespace: 'ns', name: 'claim', uid: 'other' } })],
    expect: undefined,
  },
  {
    rule: 'pre-bound volume still has to be big enough',
    claim: pvc({ size: '5Gi' }),
    volumes: [pv('a', { claimRef: { namespace: 'ns', name: 'claim' } })],
    expect: undefined,
  },
  {
    rule: 'pre-bound volume still has to match the class',
    claim: pvc({ cls: 'gold' }),
    volumes: [pv('a', { claimRef: { namespace: 'ns', name: 'claim' } })],
    expect: undefined,
  },
  {
    rule: 'WaitForFirstConsumer without a node binds only pre-bound volumes',
    claim: pvc(),
    volumes: [pv('a')],
    delayBinding: true,
    expect: undefined,
  },
  {
    rule: 'WaitForFirstConsumer pre-bound volume is taken',
    claim: pvc(),
    volumes: [pv('a', { claimRef: { namespace: 'ns', name: 'claim' } })],
    delayBinding: true,
    expect: 'a',
  },
  {
    rule: 'with a node, node affinity must admit it',
    claim: pvc(),
    volumes: [pv('a', { zone: 'z1' }), pv('b', { zone: 'z2', size: '3Gi' })],
    node: node('z2'),
    delayBinding: true,
    expect: 'b',
  },
  {
    rule: 'volumes being deleted are skipped',
    claim: pvc(),
    volumes: [pv('a', { deleting: true })],
    expect: undefined,
  },
];

describe('PV matching rules (static provisioning)', () => {
  it.each(table)('$rule', (row) => {
    const got = findBestMatchForClaim(row.claim, row.volumes, {
      node: row.node,
      delayBinding: row.delayBinding,
    });
    expect(got?.metadata.name).toBe(row.expect);
  });

  it('explains why a requested volume cannot serve a claim', () => {
    expect(checkVolumeSatisfyClaim(pv('a', { size: '1Gi' }), pvc({ size: '2Gi' }))).toBe(
      'requested PV is too small',
    );
    expect(checkVolumeSatisfyClaim(pv('a', { cls: 'x' }), pvc())).toBe('storageClassName does not match');
    expect(checkVolumeSatisfyClaim(pv('a', { mode: 'Block' }), pvc())).toBe('incompatible volumeMode');
    expect(checkVolumeSatisfyClaim(pv('a', { modes: ['ReadOnlyMany'] }), pvc())).toBe(
      'incompatible accessMode',
    );
    expect(checkVolumeSatisfyClaim(pv('a'), pvc())).toBeUndefined();
  });
});
