// Static provisioning through the live binder: pre-created PVs bind by the upstream matching rules.
// Each row uses its own storage class name so rows cannot see each other's volumes.
import type { PersistentVolume, PersistentVolumeClaim } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVER, Stack, until } from './harness.js';

let s: Stack;
beforeAll(async () => {
  s = await new Stack({ backend: 'sim' }).start();
});
afterAll(async () => {
  await s?.stop();
});

type PVSpec = Partial<PersistentVolume['spec']> & { labels?: Record<string, string> };
interface Row {
  rule: string;
  pvs: Record<string, PVSpec>;
  claim: Partial<PersistentVolumeClaim['spec']>;
  expect: string | null;
  before?: (cls: string) => Promise<void>;
}

const rows: Row[] = [
  {
    rule: 'smallest volume that fits',
    pvs: {
      a: { capacity: { storage: '10Gi' } },
      b: { capacity: { storage: '2Gi' } },
      c: { capacity: { storage: '1Gi' } },
    },
    claim: { resources: { requests: { storage: '2Gi' } } },
    expect: 'b',
  },
  {
    rule: 'access modes: smallest superset first',
    pvs: {
      wide: { accessModes: ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany'] },
      narrow: { accessModes: ['ReadWriteOnce'], capacity: { storage: '5Gi' } },
    },
    claim: {},
    expect: 'narrow',
  },
  {
    rule: 'access modes: every requested mode must be offered',
    pvs: { a: { accessModes: ['ReadWriteOnce'] } },
    claim: { accessModes: ['ReadWriteMany'] },
    expect: null,
  },
  {
    rule: 'volumeMode Block binds only Block',
    pvs: { fs: {}, blk: { volumeMode: 'Block', capacity: { storage: '4Gi' } } },
    claim: { volumeMode: 'Block' },
    expect: 'blk',
  },
  {
    rule: 'selector',
    pvs: { a: { labels: { disk: 'hdd' } }, b: { labels: { disk: 'ssd' }, capacity: { storage: '9Gi' } } },
    claim: { selector: { matchLabels: { disk: 'ssd' } } },
    expect: 'b',
  },
  {
    rule: 'too small: nothing binds',
    pvs: { a: { capacity: { storage: '1Gi' } } },
    claim: { resources: { requests: { storage: '3Gi' } } },
    expect: null,
  },
  {
    rule: 'pre-bound volume (claimRef) wins',
    pvs: {
      fit: {},
      mine: { capacity: { storage: '8Gi' }, claimRef: { namespace: 'default', name: '$claim' } },
    },
    claim: {},
    expect: 'mine',
  },
  {
    rule: 'claim naming its volume (volumeName)',
    pvs: { fit: {}, named: { capacity: { storage: '6Gi' } } },
    claim: { volumeName: '$pv:named' },
    expect: 'named',
  },
  {
    rule: 'WaitForFirstConsumer: the binder leaves it to the scheduler',
    pvs: { a: {} },
    claim: {},
    expect: null,
    before: async (cls) => {
      await s.store.create({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: cls },
        provisioner: 'kubernetes.io/no-provisioner',
        volumeBindingMode: 'WaitForFirstConsumer',
      });
    },
  },
];

describe('static provisioning through the binder', () => {
  it.each(rows.map((r, i) => ({ ...r, i })))('$rule', async (row) => {
    const cls = `static-${row.i}`;
    const claimName = `claim-${row.i}`;
    await row.before?.(cls);
    for (const [n, spec] of Object.entries(row.pvs)) {
      const { labels, claimRef, ...rest } = spec;
      await s.store.create({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `${cls}-${n}`, ...(labels ? { labels } : {}) },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: cls,
          csi: { driver: DRIVER, volumeHandle: `${cls}-${n}` },
          ...rest,
          ...(claimRef ? { claimRef: { ...claimRef, name: claimName } } : {}),
        },
      });
    }
    const { volumeName, ...claimSpec } = row.claim;
    await s.claim(claimName, {
      storageClassName: cls,
      ...claimSpec,
      ...(volumeName ? { volumeName: `${cls}-${volumeName.slice(4)}` } : {}),
    });
    if (row.expect) {
      const c = await s.bound(claimName);
      expect(c.spec.volumeName).toBe(`${cls}-${row.expect}`);
      const pv = (await s.getPV(c.spec.volumeName!))!;
      expect(pv.spec.claimRef?.uid).toBe(c.metadata.uid);
      expect(pv.status?.phase).toBe('Bound');
    } else {
      await until('claim looked at', async () => (await s.events(claimName)).length > 0);
      await new Promise((r) => setTimeout(r, 200));
      const c = await s.getClaim(claimName);
      expect(c.status?.phase).toBe('Pending');
      expect(c.spec.volumeName).toBeUndefined();
    }
  });
});
