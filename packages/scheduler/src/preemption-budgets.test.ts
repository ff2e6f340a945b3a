// How preemption counts PodDisruptionBudgets, as kube-scheduler does: a budget with a nil or empty
// selector covers no pod, a pod without labels is covered by no budget, pods already in a budget's
// status.disruptedPods cost it nothing, and each further covered victim uses up disruptionsAllowed.
import { describe, expect, it } from 'vitest';
import { newPodInfo } from './pod-info.js';
import { indexPDBs, splitByPDB } from './plugins/default-preemption.js';
import { simulate } from './simulate.js';
import { makeNode, makePod } from './testing.js';
import type { KubeObject, PodDisruptionBudget } from './types.js';

const pdb = (
  name: string,
  selector: PodDisruptionBudget['spec']['selector'],
  status: PodDisruptionBudget['status'] = { disruptionsAllowed: 0 },
): PodDisruptionBudget => ({
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name, namespace: 'default' },
  spec: { selector },
  status,
});

/**
 * n1's only victim has priority 5, n2's has priority 1 and is protected by a budget with nothing left.
 * Without a budget violation on n1, fewest violations picks n1; were n1's victim counted as violating,
 * the tie would go to n2 (lower highest victim priority).
 */
async function placeWith(n1Victim: { labels?: Record<string, string> }, n1Budget: PodDisruptionBudget) {
  const cluster: KubeObject[] = [
    n1Budget,
    pdb('guard-n2', { matchLabels: { app: 'n2' } }),
    makeNode('n1', { cpu: '1' }),
    makeNode('n2', { cpu: '1' }),
    makePod('v1', { cpu: '1', nodeName: 'n1', priority: 5, labels: n1Victim.labels }),
    makePod('v2', { cpu: '1', nodeName: 'n2', priority: 1, labels: { app: 'n2' } }),
  ];
  const r = await simulate(cluster, [makePod('p', { cpu: '1', priority: 100 })]);
  return r.placements.find((p) => p.pod === 'default/p')!;
}

describe('preemption and PodDisruptionBudgets', () => {
  it('the node whose victim breaks no budget wins over a lower-priority victim that does', async () => {
    const p = await placeWith({ labels: { app: 'n1' } }, pdb('other', { matchLabels: { app: 'elsewhere' } }));
    expect(p.preempted).toEqual(['default/v1']);
    expect(p.node).toBe('n1');
  });

  it('with a budget violation on both nodes, the lower victim priority decides', async () => {
    const p = await placeWith({ labels: { app: 'n1' } }, pdb('guard-n1', { matchLabels: { app: 'n1' } }));
    expect(p.preempted).toEqual(['default/v2']);
  });

  it.each([
    ['{}', {}],
    ['{matchLabels: {}}', { matchLabels: {} }],
    ['{matchExpressions: []}', { matchExpressions: [] }],
  ])('a budget with the empty selector %s covers no pod', async (_, selector) => {
    const p = await placeWith({ labels: { app: 'n1' } }, pdb('empty', selector));
    expect(p.preempted).toEqual(['default/v1']);
  });

  it('a budget with a nil selector covers no pod', async () => {
    const p = await placeWith({ labels: { app: 'n1' } }, pdb('nil', undefined));
    expect(p.preempted).toEqual(['default/v1']);
  });

  it('a pod without labels is covered by no budget, even one selecting on a missing label', async () => {
    const p = await placeWith({}, pdb('no-app', { matchExpressions: [{ key: 'app', operator: 'DoesNotExist' }] }));
    expect(p.preempted).toEqual(['default/v1']);
  });

  it('a pod already in status.disruptedPods does not count against its budget', async () => {
    const p = await placeWith(
      { labels: { app: 'n1' } },
      pdb(
        'guard-n1',
        { matchLabels: { app: 'n1' } },
        { disruptionsAllowed: 0, disruptedPods: { v1: '2026-01-01T00:00:00Z' } },
      ),
    );
    expect(p.preempted).toEqual(['default/v1']);
  });

  it('a budget with an invalid selector covers no pod and does not fail the attempt', async () => {
    const bad = pdb('bad', { matchExpressions: [{ key: 'app', operator: 'Near' as 'In', values: ['n1'] }] });
    const p = await placeWith({ labels: { app: 'n1' } }, bad);
    expect(p.reason).toBe('Scheduled');
    expect(p.preempted).toEqual(['default/v1']);
  });

  it('counts victims against disruptionsAllowed in order, per namespace, keeping the order', () => {
    const pods = ['a', 'b', 'c'].map((n) => newPodInfo(makePod(n, { labels: { app: 'web' } })));
    const other = newPodInfo(makePod('d', { namespace: 'other', labels: { app: 'web' } }));
    const idx = indexPDBs([pdb('web', { matchLabels: { app: 'web' } }, { disruptionsAllowed: 1 })]);
    const { violating, nonViolating } = splitByPDB([...pods, other], idx);
    expect(nonViolating.map((p) => p.key)).toEqual(['default/a', 'other/d']);
    expect(violating.map((p) => p.key)).toEqual(['default/b', 'default/c']);
  });

  it('a pod covered by two budgets violates when either runs out', () => {
    const pods = [newPodInfo(makePod('a', { labels: { app: 'web', tier: 'x' } }))];
    const idx = indexPDBs([
      pdb('roomy', { matchLabels: { app: 'web' } }, { disruptionsAllowed: 5 }),
      pdb('tight', { matchLabels: { tier: 'x' } }, { disruptionsAllowed: 0 }),
    ]);
    expect(splitByPDB(pods, idx).violating).toHaveLength(1);
  });
});
