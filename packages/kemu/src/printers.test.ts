import type { Pod } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { humanDuration, podStatusReason, printTable, resolveKind } from './printers.js';

describe('humanDuration (kubectl)', () => {
  it.each([
    [5_000, '5s'],
    [119_000, '119s'],
    [125_000, '2m5s'],
    [600_000, '10m'],
    [3 * 3600_000 + 120_000, '3h2m'],
    [30 * 3600_000, '30h'],
    [50 * 3600_000, '2d2h'],
    [400 * 86400_000, '400d'],
    [3 * 365 * 86400_000 + 86400_000, '3y1d'],
  ])('%d ms -> %s', (ms, s) => expect(humanDuration(ms)).toBe(s));
});

const base = (status: Pod['status'], extra: Partial<Pod['spec']> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { containers: [{ name: 'a' }], ...extra },
  status,
});

describe('pod STATUS column', () => {
  it('shows waiting and terminated reasons, init progress and Terminating like kubectl', () => {
    expect(podStatusReason(base({ phase: 'Running', containerStatuses: [{ name: 'a', ready: false, restartCount: 3, image: '', imageID: '', state: { waiting: { reason: 'CrashLoopBackOff' } } }] }))).toBe('CrashLoopBackOff');
    expect(podStatusReason(base({ phase: 'Succeeded', containerStatuses: [{ name: 'a', ready: false, restartCount: 0, image: '', imageID: '', state: { terminated: { exitCode: 0, reason: 'Completed' } } }] }))).toBe('Completed');
    expect(
      podStatusReason(
        base({ phase: 'Pending', initContainerStatuses: [{ name: 'i', ready: false, restartCount: 0, image: '', imageID: '', state: { running: {} } }] }, { initContainers: [{ name: 'i' }] }),
      ),
    ).toBe('Init:0/1');
    const p = base({ phase: 'Running' });
    p.metadata.deletionTimestamp = '2026-01-01T00:00:10Z';
    expect(podStatusReason(p)).toBe('Terminating');
  });

  it('prints the pod table with kubectl columns', () => {
    const now = Date.parse('2026-01-01T00:01:00Z');
    const pod = base({ phase: 'Running', podIP: '10.244.1.5', containerStatuses: [{ name: 'a', ready: true, restartCount: 0, image: '', imageID: '', state: { running: {} } }] }, { nodeName: 'n1' });
    expect(printTable('Pod', [pod], { now, wide: true }).split('\n')).toEqual([
      'NAME   READY   STATUS    RESTARTS   AGE   IP           NODE   NOMINATED NODE   READINESS GATES',
      'p      1/1     Running   0          60s   10.244.1.5   n1     <none>           <none>',
    ]);
  });

  it('resolves kubectl short names', () => {
    expect([resolveKind('po'), resolveKind('PVC'), resolveKind('sc'), resolveKind('no'), resolveKind('bogus')]).toEqual([
      'Pod',
      'PersistentVolumeClaim',
      'StorageClass',
      'Node',
      undefined,
    ]);
  });
});
