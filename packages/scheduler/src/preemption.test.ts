// Pod priority and preemption, as documented: a pending higher-priority pod evicts lower-priority pods
// from one node, is nominated there, and lands once they are gone.
import { describe, expect, it } from 'vitest';
import { simulate } from './simulate.js';
import { makeNode, makePod } from './testing.js';
import type { KubeObject, PriorityClass } from './types.js';

const pc = (name: string, value: number, extra: Partial<PriorityClass> = {}): PriorityClass => ({
  apiVersion: 'scheduling.k8s.io/v1',
  kind: 'PriorityClass',
  metadata: { name },
  value,
  ...extra,
});

async function run(cluster: KubeObject[], pods: ReturnType<typeof makePod>[]) {
  const r = await simulate(cluster, pods);
  return { by: new Map(r.placements.map((p) => [p.pod.split('/')[1], p])), events: r.events };
}

describe('preemption', () => {
  const classes = [
    pc('high-priority', 1000000),
    pc('low', 10),
    pc('high-priority-nonpreempting', 1000000, { preemptionPolicy: 'Never' }),
  ];

  it('evicts the lower-priority pod, nominates the node, then binds there', async () => {
    const cluster = [
      ...classes,
      makeNode('n1', { cpu: '2' }),
      makeNode('n2', { cpu: '2' }),
      makePod('low-1', { cpu: '2', nodeName: 'n1', spec: { priorityClassName: 'low' } }),
      makePod('low-2', { cpu: '2', nodeName: 'n2', spec: { priority: 5 } }),
    ];
    const { by, events } = await run(cluster, [
      makePod('important', { cpu: '2', spec: { priorityClassName: 'high-priority' } }),
    ]);
    const p = by.get('important')!;
    // The victim with the lowest priority goes (low-2 has 5 < low-1's 10).
    expect(p.preempted).toEqual(['default/low-2']);
    expect(p.nominatedNodeName).toBe('n2');
    expect(p.node).toBe('n2');
    expect(p.reason).toBe('Scheduled');
    expect(events.find((e) => e.reason === 'Preempted')).toEqual({
      pod: 'default/low-2',
      type: 'Normal',
      reason: 'Preempted',
      message: 'Preempted by pod uid-important on node n2',
    });
  });

  it('preemptionPolicy Never waits instead of evicting', async () => {
    const cluster = [
      ...classes,
      makeNode('n1', { cpu: '2' }),
      makePod('low-1', { cpu: '2', nodeName: 'n1', spec: { priority: 10 } }),
    ];
    const { by } = await run(cluster, [
      makePod('polite', { cpu: '2', spec: { priorityClassName: 'high-priority-nonpreempting' } }),
    ]);
    expect(by.get('polite')?.node).toBeNull();
    expect(by.get('polite')?.preempted).toBeUndefined();
    expect(by.get('polite')?.message).toBe(
      '0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never..',
    );
  });

  it('equal or higher priority pods are never victims', async () => {
    const cluster = [
      makeNode('n1', { cpu: '2' }),
      makePod('peer', { cpu: '2', nodeName: 'n1', priority: 100 }),
    ];
    const { by } = await run(cluster, [makePod('p', { cpu: '2', priority: 100 })]);
    expect(by.get('p')?.message).toBe(
      '0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..',
    );
  });

  it('evicts as few pods as needed, preferring the node with fewer PDB violations', async () => {
    const pdb = {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'guard', namespace: 'default' },
      spec: { selector: { matchLabels: { app: 'guarded' } } },
      status: { disruptionsAllowed: 0 },
    };
    const cluster: KubeObject[] = [
      pdb,
      makeNode('n1', { cpu: '4' }),
      makeNode('n2', { cpu: '4' }),
      makePod('g1', { cpu: '2', nodeName: 'n1', priority: 1, labels: { app: 'guarded' } }),
      makePod('g2', { cpu: '2', nodeName: 'n1', priority: 1, labels: { app: 'guarded' } }),
      makePod('f1', { cpu: '2', nodeName: 'n2', priority: 1 }),
      makePod('f2', { cpu: '2', nodeName: 'n2', priority: 1 }),
    ];
    const { by } = await run(cluster, [makePod('p', { cpu: '2', priority: 100 })]);
    expect(by.get('p')?.node).toBe('n2');
    expect(by.get('p')?.preempted).toHaveLength(1);
  });

  it('picks the node whose most important victim has the lowest priority', async () => {
    const cluster = [
      makeNode('n1', { cpu: '2' }),
      makeNode('n2', { cpu: '2' }),
      makePod('mid', { cpu: '2', nodeName: 'n1', priority: 50 }),
      makePod('low', { cpu: '2', nodeName: 'n2', priority: 10 }),
    ];
    const { by } = await run(cluster, [makePod('p', { cpu: '2', priority: 100 })]);
    expect(by.get('p')?.node).toBe('n2');
    expect(by.get('p')?.preempted).toEqual(['default/low']);
  });

  it('unresolvable nodes are not preemption candidates', async () => {
    const cluster = [
      makeNode('tainted', { cpu: '2', taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }] }),
      makePod('low', { cpu: '2', nodeName: 'tainted', priority: 1 }),
    ];
    const { by } = await run(cluster, [makePod('p', { cpu: '2', priority: 100 })]);
    expect(by.get('p')?.message).toBe(
      '0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: x}. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling..',
    );
  });

  it("evicts a lower-priority pod that the incoming pod's anti-affinity rules out", async () => {
    const cluster = [
      makeNode('only'),
      makePod('noisy', { nodeName: 'only', priority: 1, labels: { app: 'noisy' } }),
      makePod('quiet', { nodeName: 'only', priority: 1, labels: { app: 'quiet' } }),
    ];
    const pod = makePod('picky', {
      priority: 100,
      spec: {
        affinity: {
          podAntiAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'noisy' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    });
    const { by } = await run(cluster, [pod]);
    expect(by.get('picky')?.preempted).toEqual(['default/noisy']);
    expect(by.get('picky')?.node).toBe('only');
  });
});
