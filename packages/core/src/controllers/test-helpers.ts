// Helpers shared by the controller tests (not exported from the package).
import type { PersistentVolume, PersistentVolumeClaim } from '../api-core.js';
import type { Store } from '../store.js';

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 15_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function makePV(
  name: string,
  o: Partial<PersistentVolume['spec']> = {},
  labels?: Record<string, string>,
): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      csi: { driver: 'test.csi.k8s.io', volumeHandle: `h-${name}` },
      ...o,
    },
  };
}

export function makePVC(
  name: string,
  o: Partial<PersistentVolumeClaim['spec']> = {},
  namespace = 'default',
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...o },
  };
}

export async function events(
  store: Store,
  name: string,
): Promise<{ reason?: string; message?: string; type?: string }[]> {
  const l = await store.list('Event', { fieldSelector: `involvedObject.name=${name}` });
  return l.items;
}
