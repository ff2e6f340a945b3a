// Preemption picks one node by, in order: fewest PDB violations, lowest highest victim priority, smallest
// priority sum, fewest victims, latest start of the highest-priority victims, then the first candidate
// found. The plugin skips computing victims on nodes that provably cannot win; on random clusters it
// must choose exactly what computing every candidate's victims chooses.
import { describe, expect, it } from 'vitest';
import { defaultPreemptionFactory } from './plugins/default-preemption.js';
import { seededRandom, simulate } from './simulate.js';
import { makeNode, makePod } from './testing.js';
import type { KubeObject, Pod } from './types.js';

const START = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(START + s * 1000).toISOString();

function scenario(seed: number): { cluster: KubeObject[]; pods: Pod[]; absolute: number } {
  const rnd = seededRandom(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const cluster: KubeObject[] = [];
  const nodes = 3 + Math.floor(rnd() * 10);
  // Half the clusters are full nodes of same-priority pods (like scheduler_perf's PreemptionBasic),
  // where start times decide; the others mix priorities, sizes and budgets.
  const uniform = rnd() < 0.5;
  for (let n = 0; n < nodes; n++) {
    cluster.push(makeNode(`n${n}`, { cpu: '4' }));
    const count = uniform ? 4 : 1 + Math.floor(rnd() * 4);
    for (let j = 0; j < count && uniform; j++) {
      cluster.push(
        makePod(`p${n}-${j}`, { cpu: '1', nodeName: `n${n}`, priority: 1, startTime: at(pick([0, 1, 2, 3])) }),
      );
    }
    for (let j = 0; j < count && !uniform; j++) {
      const app = pick(['a', 'b', 'c', undefined]);
      cluster.push(
        makePod(`p${n}-${j}`, {
          cpu: pick(['1', '1', '2']),
          nodeName: `n${n}`,
          priority: pick([1, 1, 2, 3, 5, 20]),
          labels: app ? { app } : undefined,
          // Few distinct start times, so later criteria often decide.
          startTime: at(pick([0, 0, 1, 2])),
        }),
      );
    }
  }
  for (const app of ['a', 'b']) {
    if (rnd() < 0.4) {
      cluster.push({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: `pdb-${app}`, namespace: 'default' },
        spec: { selector: { matchLabels: { app } } },
        status: { disruptionsAllowed: pick([0, 0, 1]) },
      } as KubeObject);
    }
  }
  const pods = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, k) =>
    makePod(`new-${k}`, { cpu: uniform ? '1' : pick(['2', '3', '4']), priority: pick([4, 10]) }),
  );
  return { cluster, pods, absolute: 1 + Math.floor(rnd() * nodes) };
}

async function place(s: ReturnType<typeof scenario>, prune: boolean, seed: number) {
  const r = await simulate(s.cluster, s.pods, {
    seed,
    plugins: { DefaultPreemption: defaultPreemptionFactory({ prune }) },
    config: {
      profiles: [
        {
          pluginConfig: [
            {
              name: 'DefaultPreemption',
              args: { minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: s.absolute },
            },
          ],
        },
      ],
    },
  });
  return r.placements.map((p) => [p.pod, p.node, p.nominatedNodeName, p.preempted, p.message]);
}

describe('choosing the node to preempt on', () => {
  it('skipping hopeless nodes chooses the same node and victims as computing them all', async () => {
    let preempted = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const s = scenario(seed);
      const pruned = await place(s, true, seed);
      expect(pruned, `seed ${seed}`).toEqual(await place(s, false, seed));
      preempted += pruned.filter((p) => p[3] !== undefined).length;
    }
    // The scenarios do exercise preemption.
    expect(preempted).toBeGreaterThan(50);
  });

  it('prefers the later-started victim when everything else ties, and the first node on a full tie', async () => {
    const cluster = [
      makeNode('n1', { cpu: '1' }),
      makeNode('n2', { cpu: '1' }),
      makeNode('n3', { cpu: '1' }),
      makePod('old', { cpu: '1', nodeName: 'n1', priority: 1, startTime: at(0) }),
      makePod('young', { cpu: '1', nodeName: 'n2', priority: 1, startTime: at(5) }),
      makePod('young-too', { cpu: '1', nodeName: 'n3', priority: 1, startTime: at(5) }),
    ];
    for (const seed of [1, 2, 3, 4, 5]) {
      const r = await simulate(cluster, [makePod('p', { cpu: '1', priority: 10 })], { seed });
      const p = r.placements.find((x) => x.pod === 'default/p')!;
      // n2 and n3 tie on everything; which comes first depends on the random starting offset.
      expect(['default/young', 'default/young-too']).toContain(p.preempted?.[0]);
    }
  });

  it('prefers fewer victims, then the smaller priority sum', async () => {
    const cluster = [
      makeNode('two', { cpu: '2' }),
      makeNode('one', { cpu: '2' }),
      makeNode('sum', { cpu: '2' }),
      makePod('t1', { cpu: '1', nodeName: 'two', priority: 3 }),
      makePod('t2', { cpu: '1', nodeName: 'two', priority: 3 }),
      makePod('o1', { cpu: '2', nodeName: 'one', priority: 3 }),
      makePod('s1', { cpu: '1', nodeName: 'sum', priority: 3 }),
      makePod('s2', { cpu: '1', nodeName: 'sum', priority: 1 }),
    ];
    // A 2-CPU pod must evict both pods on "two" and on "sum", or the one on "one": the smallest sum
    // (3) wins over "sum" (3 + 1) and "two" (3 + 3).
    const r = await simulate(cluster, [makePod('p', { cpu: '2', priority: 10 })]);
    expect(r.placements.find((x) => x.pod === 'default/p')?.preempted).toEqual(['default/o1']);
  });
});
