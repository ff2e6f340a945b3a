import { describe, expect, it } from 'vitest';
import type { Deployment, Pod, ReplicaSet } from '@kemu/core';
import { computeHash, equalIgnoreHash, newRSNewReplicas, resolveFenceposts, scaledValue } from './deployment-util.js';
import { podsToDelete } from './pod-ranking.js';

const dep = (replicas: number, maxSurge: number | string, maxUnavailable: number | string): Deployment =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'd', namespace: 'default' },
    spec: { replicas, selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [] } }, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge, maxUnavailable } } },
  }) as Deployment;
const rs = (replicas: number): ReplicaSet => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: `rs${replicas}` }, spec: { replicas, selector: {} } }) as ReplicaSet;

describe('rolling update arithmetic', () => {
  it('rounds surge up and unavailability down, and never lets both be zero', () => {
    expect(scaledValue('25%', 10, true)).toBe(3);
    expect(scaledValue('25%', 10, false)).toBe(2);
    expect(resolveFenceposts('25%', '25%', 10)).toEqual([3, 2]);
    expect(resolveFenceposts('25%', '25%', 1)).toEqual([1, 0]);
    expect(resolveFenceposts(0, '10%', 5)).toEqual([0, 1]);
    expect(resolveFenceposts('0%', '0%', 5)).toEqual([0, 1]);
  });

  it('grows the new ReplicaSet only within maxSurge', () => {
    const d = dep(3, 1, 0);
    const old = rs(3);
    const fresh = rs(0);
    expect(newRSNewReplicas(d, [old, fresh], fresh)).toBe(1);
    fresh.spec.replicas = 1;
    expect(newRSNewReplicas(d, [old, fresh], fresh)).toBe(1);
    old.spec.replicas = 2;
    expect(newRSNewReplicas(d, [old, fresh], fresh)).toBe(2);
    const big = dep(10, '50%', 0);
    expect(newRSNewReplicas(big, [rs(10), rs(0)], rs(0))).toBe(5);
  });

  it('hashes templates stably and ignores the hash label when comparing', () => {
    const t = { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx:1' }] } };
    const h = computeHash(t);
    expect(h).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
    expect(computeHash({ spec: t.spec, metadata: { labels: { app: 'web' } } })).toBe(h);
    expect(computeHash(t, 1)).not.toBe(h);
    expect(computeHash({ ...t, spec: { containers: [{ name: 'c', image: 'nginx:2' }] } })).not.toBe(h);
    expect(equalIgnoreHash({ ...t, metadata: { labels: { app: 'web', 'pod-template-hash': h } } }, t)).toBe(true);
  });
});

describe('scale-down ranking', () => {
  const pod = (name: string, o: { node?: string; phase?: string; ready?: boolean; readySince?: string; restarts?: number; created?: string }): Pod =>
    ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, creationTimestamp: o.created ?? '2026-01-01T00:00:00Z' },
      spec: { containers: [], nodeName: o.node },
      status: {
        phase: o.phase ?? 'Running',
        conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True', lastTransitionTime: o.readySince ?? '2026-01-01T00:00:00Z' }],
        containerStatuses: [{ name: 'c', restartCount: o.restarts ?? 0 }],
      },
    }) as unknown as Pod;

  it('deletes unassigned, then pending, then not-ready, then crowded, then recently ready, restarted and newer pods', () => {
    const unassigned = pod('unassigned', { phase: 'Pending', ready: false });
    const pending = pod('pending', { node: 'n1', phase: 'Pending', ready: false });
    const notReady = pod('not-ready', { node: 'n1', ready: false });
    const crowdedA = pod('crowded-a', { node: 'n2' });
    const crowdedB = pod('crowded-b', { node: 'n2' });
    const lonelyOld = pod('lonely-old', { node: 'n3', readySince: '2026-01-01T00:00:00Z' });
    const lonelyNew = pod('lonely-new', { node: 'n4', readySince: '2026-01-01T01:00:00Z' });
    const all = [lonelyOld, crowdedA, unassigned, lonelyNew, notReady, crowdedB, pending];
    expect(podsToDelete(all, all, 7).length).toBe(7);
    const order = podsToDelete(all, all, 6).map((p) => p.metadata.name);
    expect(order.slice(0, 3)).toEqual(['unassigned', 'pending', 'not-ready']);
    expect(order.slice(3, 5).sort()).toEqual(['crowded-a', 'crowded-b']);
    expect(order[5]).toBe('lonely-new');
    const restarted = pod('restarted', { node: 'n5', restarts: 3 });
    const calm = pod('calm', { node: 'n6' });
    expect(podsToDelete([calm, restarted], [calm, restarted], 1)[0].metadata.name).toBe('restarted');
    const newer = pod('newer', { node: 'n7', created: '2026-01-02T00:00:00Z' });
    expect(podsToDelete([calm, newer], [calm, newer], 1)[0].metadata.name).toBe('newer');
  });
});
