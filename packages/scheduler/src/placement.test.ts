// Placement behaviour from the Kubernetes documentation (assigning pods to nodes, taints and
// tolerations, pod priority and preemption, topology spread constraints, storage binding modes).
import { describe, expect, it } from 'vitest';
import { type Placement, simulate } from './simulate.js';
import { makeNode, makePod } from './testing.js';
import type { KubeObject, Pod } from './types.js';

async function place(cluster: KubeObject[], pods: Pod[], opts: Parameters<typeof simulate>[2] = {}) {
  const r = await simulate(cluster, pods, opts);
  const by = new Map<string, Placement>(r.placements.map((p) => [p.pod.split('/')[1], p]));
  return { by, events: r.events, placements: r.placements };
}

describe('nodeSelector', () => {
  it('places the pod only on a node with every selected label', async () => {
    const cluster = [
      makeNode('n1'),
      makeNode('n2', { labels: { disktype: 'ssd' } }),
      makeNode('n3', { labels: { disktype: 'hdd' } }),
    ];
    const { by } = await place(cluster, [makePod('nginx', { spec: { nodeSelector: { disktype: 'ssd' } } })]);
    expect(by.get('nginx')?.node).toBe('n2');
  });

  it('explains a selector no node matches', async () => {
    const { by } = await place(
      [makeNode('n1'), makeNode('n2')],
      [makePod('p', { spec: { nodeSelector: { disktype: 'ssd' } } })],
    );
    expect(by.get('p')?.node).toBeNull();
    expect(by.get('p')?.message).toBe(
      "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling..",
    );
  });
});

describe('node affinity', () => {
  const zoneNodes = [
    makeNode('east', { labels: { 'topology.kubernetes.io/zone': 'antarctica-east1' } }),
    makeNode('west', {
      labels: {
        'topology.kubernetes.io/zone': 'antarctica-west1',
        'another-node-label-key': 'another-node-label-value',
      },
    }),
    makeNode('north', {
      labels: {
        'topology.kubernetes.io/zone': 'antarctica-north1',
        'another-node-label-key': 'another-node-label-value',
      },
    }),
  ];
  const affinityPod = makePod('with-node-affinity', {
    spec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [
                  {
                    key: 'topology.kubernetes.io/zone',
                    operator: 'In',
                    values: ['antarctica-east1', 'antarctica-west1'],
                  },
                ],
              },
            ],
          },
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 1,
              preference: {
                matchExpressions: [
                  { key: 'another-node-label-key', operator: 'In', values: ['another-node-label-value'] },
                ],
              },
            },
          ],
        },
      },
    },
  });

  it('requires a listed zone and prefers the node with the preferred label', async () => {
    const { by } = await place(zoneNodes, [affinityPod], { explain: true });
    const p = by.get('with-node-affinity')!;
    expect(p.node).toBe('west');
    expect(p.filters?.north).toEqual({
      plugin: 'NodeAffinity',
      code: 'UnschedulableAndUnresolvable',
      reasons: ["node(s) didn't match Pod's node affinity/selector"],
    });
    const west = p.scores!.find((s) => s.node === 'west')!;
    expect(west.plugins.NodeAffinity).toBe(200); // normalised 100 × weight 2
  });

  it('sums preference weights: the weight-50 rule beats the weight-1 rule', async () => {
    const nodes = [
      makeNode('n1', { labels: { 'label-1': 'key-1' } }),
      makeNode('n2', { labels: { 'label-2': 'key-2' } }),
    ];
    const pod = makePod('with-affinity-preferred-weight', {
      spec: {
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 1,
                preference: { matchExpressions: [{ key: 'label-1', operator: 'In', values: ['key-1'] }] },
              },
              {
                weight: 50,
                preference: { matchExpressions: [{ key: 'label-2', operator: 'In', values: ['key-2'] }] },
              },
            ],
          },
        },
      },
    });
    const { by } = await place(nodes, [pod], { explain: true });
    expect(by.get('with-affinity-preferred-weight')?.node).toBe('n2');
    const s = by.get('with-affinity-preferred-weight')!.scores!;
    expect(s.find((x) => x.node === 'n1')!.plugins.NodeAffinity).toBe(2 * Math.trunc((100 * 1) / 50));
  });

  it('matchFields on metadata.name pins the node', async () => {
    const pod = makePod('pinned', {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['north'] }] },
              ],
            },
          },
        },
      },
    });
    const { by } = await place(zoneNodes, [pod]);
    expect(by.get('pinned')?.node).toBe('north');
  });

  it('a pod pinned to a node it does not fit names that node and the ones its affinity left out', async () => {
    const pinned = (name: string) =>
      makePod(name, {
        cpu: '3',
        spec: {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['north'] }] }],
              },
            },
          },
        },
      });
    const cluster = [...zoneNodes, makePod('filler', { cpu: '2', nodeName: 'north' })];
    const { by } = await place(cluster, [pinned('pinned-a')]);
    expect(by.get('pinned-a')?.node).toBeNull();
    expect(by.get('pinned-a')?.message).toBe(
      "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. " +
        'preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling..',
    );
    const explained = await place(cluster, [pinned('pinned-b')], { explain: true });
    const filters = explained.by.get('pinned-b')?.filters ?? {};
    expect(Object.keys(filters).sort()).toEqual(['east', 'north', 'west']);
    expect(filters.east).toMatchObject({ code: 'UnschedulableAndUnresolvable', reasons: ["node(s) didn't satisfy plugin(s) [NodeAffinity]"] });
    expect(filters.north?.plugin).toBe('NodeResourcesFit');
  });

  it('Gt and NotIn operators', async () => {
    const nodes = [
      makeNode('small', { labels: { cores: '4' } }),
      makeNode('big', { labels: { cores: '64' } }),
      makeNode('gpu', { labels: { cores: '96', gpu: 'yes' } }),
    ];
    const pod = makePod('p', {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                {
                  matchExpressions: [
                    { key: 'cores', operator: 'Gt', values: ['8'] },
                    { key: 'gpu', operator: 'DoesNotExist' },
                  ],
                },
              ],
            },
          },
        },
      },
    });
    expect((await place(nodes, [pod])).by.get('p')?.node).toBe('big');
  });
});

describe('taints and tolerations', () => {
  const nodes = [makeNode('node1', { taints: [{ key: 'key1', value: 'value1', effect: 'NoSchedule' }] })];

  it('a pod without a matching toleration is rejected with the taint named', async () => {
    const { by, events } = await place(nodes, [makePod('nginx')]);
    expect(by.get('nginx')?.node).toBeNull();
    expect(by.get('nginx')?.message).toMatch(
      /^0\/1 nodes are available: 1 node\(s\) had untolerated taint \{key1: value1\}\./,
    );
    expect(events.find((e) => e.reason === 'FailedScheduling')?.type).toBe('Warning');
  });

  it('Equal and Exists tolerations both tolerate the taint', async () => {
    const eq = makePod('eq', {
      spec: { tolerations: [{ key: 'key1', operator: 'Equal', value: 'value1', effect: 'NoSchedule' }] },
    });
    const ex = makePod('ex', {
      spec: { tolerations: [{ key: 'key1', operator: 'Exists', effect: 'NoSchedule' }] },
    });
    const wrong = makePod('wrong', {
      spec: { tolerations: [{ key: 'key1', operator: 'Equal', value: 'other', effect: 'NoSchedule' }] },
    });
    const { by } = await place(nodes, [eq, ex, wrong]);
    expect(by.get('eq')?.node).toBe('node1');
    expect(by.get('ex')?.node).toBe('node1');
    expect(by.get('wrong')?.node).toBeNull();
  });

  it('PreferNoSchedule steers pods away without forbidding the node', async () => {
    const ns = [
      makeNode('soft', { taints: [{ key: 'k', value: 'v', effect: 'PreferNoSchedule' }] }),
      makeNode('clean'),
    ];
    const { by } = await place(ns, [makePod('a')], { explain: true });
    expect(by.get('a')?.node).toBe('clean');
    const soft = by.get('a')!.scores!.find((s) => s.node === 'soft')!;
    expect(soft.plugins.TaintToleration).toBe(0);
    const only = await place([ns[0]], [makePod('b')]);
    expect(only.by.get('b')?.node).toBe('soft');
  });

  it('cordoned nodes are skipped', async () => {
    const { by } = await place([makeNode('c', { unschedulable: true }), makeNode('ok')], [makePod('p')]);
    expect(by.get('p')?.node).toBe('ok');
    const none = await place([makeNode('c', { unschedulable: true })], [makePod('q')]);
    expect(none.by.get('q')?.message).toContain('1 node(s) were unschedulable');
  });
});

describe('inter-pod affinity and anti-affinity', () => {
  const zones = ['z1', 'z1', 'z2', 'z2'].map((z, i) =>
    makeNode(`n${i + 1}`, { labels: { 'topology.kubernetes.io/zone': z } }),
  );

  it('required affinity lands in the zone of the matching pod; preferred anti-affinity avoids S2 nodes', async () => {
    const existing = [
      makePod('s1', { labels: { security: 'S1' }, nodeName: 'n3' }),
      makePod('s2', { labels: { security: 'S2' }, nodeName: 'n4' }),
    ];
    const pod = makePod('with-pod-affinity', {
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              {
                labelSelector: { matchExpressions: [{ key: 'security', operator: 'In', values: ['S1'] }] },
                topologyKey: 'topology.kubernetes.io/zone',
              },
            ],
          },
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 100,
                podAffinityTerm: {
                  labelSelector: { matchExpressions: [{ key: 'security', operator: 'In', values: ['S2'] }] },
                  topologyKey: 'kubernetes.io/hostname',
                },
              },
            ],
          },
        },
      },
    });
    const { by } = await place([...zones, ...existing], [pod]);
    expect(by.get('with-pod-affinity')?.node).toBe('n3');
  });

  it('redis cache replicas spread one per node and web servers co-locate with them', async () => {
    const nodes = [makeNode('a'), makeNode('b'), makeNode('c'), makeNode('d')];
    const cache = (i: number) =>
      makePod(`redis-cache-${i}`, {
        labels: { app: 'store' },
        spec: {
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  labelSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['store'] }] },
                  topologyKey: 'kubernetes.io/hostname',
                },
              ],
            },
          },
        },
      });
    const web = (i: number) =>
      makePod(`web-server-${i}`, {
        labels: { app: 'web-store' },
        spec: {
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  labelSelector: {
                    matchExpressions: [{ key: 'app', operator: 'In', values: ['web-store'] }],
                  },
                  topologyKey: 'kubernetes.io/hostname',
                },
              ],
            },
            podAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                {
                  labelSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['store'] }] },
                  topologyKey: 'kubernetes.io/hostname',
                },
              ],
            },
          },
        },
      });
    const { by } = await place(nodes, [cache(1), cache(2), cache(3), web(1), web(2), web(3), web(4)]);
    const cacheNodes = [1, 2, 3].map((i) => by.get(`redis-cache-${i}`)?.node);
    expect(new Set(cacheNodes).size).toBe(3);
    const webNodes = [1, 2, 3].map((i) => by.get(`web-server-${i}`)?.node);
    expect(new Set(webNodes)).toEqual(new Set(cacheNodes));
    // A fourth web server has no cache node left without a web server.
    expect(by.get('web-server-4')?.node).toBeNull();
    expect(by.get('web-server-4')?.message).toContain("node(s) didn't match pod affinity rules");
    expect(by.get('web-server-4')?.message).toContain("node(s) didn't match pod anti-affinity rules");
  });

  it("existing pods' anti-affinity keeps a matching pod away", async () => {
    const nodes = [makeNode('a'), makeNode('b')];
    const guard = makePod('guard', {
      nodeName: 'a',
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
    const { by } = await place(
      [...nodes, guard],
      [makePod('n1', { labels: { app: 'noisy' } }), makePod('n2', { labels: { app: 'noisy' } })],
    );
    expect(by.get('n1')?.node).toBe('b');
    expect(by.get('n2')?.node).toBe('b');
    const blocked = await place([nodes[0], guard], [makePod('n3', { labels: { app: 'noisy' } })]);
    expect(blocked.by.get('n3')?.message).toContain(
      "1 node(s) didn't satisfy existing pods anti-affinity rules",
    );
  });

  it('the first pod of a self-affine group may go anywhere', async () => {
    const pod = makePod('first', {
      labels: { app: 'x' },
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'x' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    });
    const second = { ...pod, metadata: { ...pod.metadata, name: 'second', uid: 'uid-second' } };
    const { by } = await place([makeNode('a'), makeNode('b')], [pod, second]);
    expect(by.get('first')?.node).not.toBeNull();
    expect(by.get('second')?.node).toBe(by.get('first')?.node);
  });
});

describe('pod topology spread constraints', () => {
  const nodes = [
    makeNode('node1', { labels: { zone: 'zoneA' } }),
    makeNode('node2', { labels: { zone: 'zoneA' } }),
    makeNode('node3', { labels: { zone: 'zoneB' } }),
    makeNode('node4', { labels: { zone: 'zoneB' } }),
  ];
  const existing = [
    makePod('e1', { labels: { foo: 'bar' }, nodeName: 'node1' }),
    makePod('e2', { labels: { foo: 'bar' }, nodeName: 'node2' }),
    makePod('e3', { labels: { foo: 'bar' }, nodeName: 'node3' }),
  ];
  const zoneConstraint = {
    maxSkew: 1,
    topologyKey: 'zone',
    whenUnsatisfiable: 'DoNotSchedule' as const,
    labelSelector: { matchLabels: { foo: 'bar' } },
  };

  it('one constraint: the incoming pod must go to zoneB (skew would be 3-1 in zoneA)', async () => {
    const { by } = await place(
      [...nodes, ...existing],
      [makePod('mypod', { labels: { foo: 'bar' }, spec: { topologySpreadConstraints: [zoneConstraint] } })],
    );
    expect(['node3', 'node4']).toContain(by.get('mypod')?.node);
  });

  it('two constraints: zone and node together pick node4', async () => {
    const nodeConstraint = { ...zoneConstraint, topologyKey: 'node' };
    const labelled = nodes.map((n) => ({
      ...n,
      metadata: { ...n.metadata, labels: { ...n.metadata.labels, node: n.metadata.name! } },
    }));
    const { by } = await place(
      [...labelled, ...existing],
      [
        makePod('mypod', {
          labels: { foo: 'bar' },
          spec: { topologySpreadConstraints: [zoneConstraint, nodeConstraint] },
        }),
      ],
    );
    expect(by.get('mypod')?.node).toBe('node4');
  });

  it('conflicting constraints leave the pod pending with the spread reason', async () => {
    const full = [...existing, makePod('e4', { labels: { foo: 'bar' }, nodeName: 'node3' })];
    // nodeAffinityPolicy Ignore counts zoneB too, so zoneA (3 pods) is 2 above the minimum (zoneB, 2).
    const onlyA = { ...zoneConstraint, nodeAffinityPolicy: 'Ignore' as const };
    const pod = makePod('mypod', {
      labels: { foo: 'bar' },
      spec: { topologySpreadConstraints: [onlyA], nodeSelector: { zone: 'zoneA' } },
    });
    const { by } = await place(
      [...nodes, ...full, makePod('e5', { labels: { foo: 'bar' }, nodeName: 'node1' })],
      [pod],
    );
    expect(by.get('mypod')?.node).toBeNull();
    expect(by.get('mypod')?.message).toMatch(
      /^0\/4 nodes are available: 2 node\(s\) didn't match Pod's node affinity\/selector, 2 node\(s\) didn't match pod topology spread constraints\./,
    );
  });

  it('nodes missing the topology key are unresolvable', async () => {
    const { by } = await place(
      [makeNode('bare')],
      [makePod('p', { labels: { foo: 'bar' }, spec: { topologySpreadConstraints: [zoneConstraint] } })],
    );
    expect(by.get('p')?.message).toContain(
      "1 node(s) didn't match pod topology spread constraints (missing required label)",
    );
  });

  it('minDomains treats the global minimum as 0 while there are too few zones', async () => {
    const two = [makeNode('a', { labels: { zone: 'z1' } }), makeNode('b', { labels: { zone: 'z2' } })];
    const c = { ...zoneConstraint, minDomains: 3 };
    const mk = (i: number) =>
      makePod(`p${i}`, { labels: { foo: 'bar' }, spec: { topologySpreadConstraints: [c] } });
    const { by } = await place(two, [mk(1), mk(2), mk(3)]);
    // With min forced to 0 and maxSkew 1, each zone holds at most one matching pod.
    expect(by.get('p1')?.node).not.toBeNull();
    expect(by.get('p2')?.node).not.toBeNull();
    expect(by.get('p3')?.node).toBeNull();
  });

  it('ScheduleAnyway prefers the emptier zone', async () => {
    const soft = { ...zoneConstraint, whenUnsatisfiable: 'ScheduleAnyway' as const };
    const { by } = await place(
      [...nodes, ...existing],
      [makePod('s', { labels: { foo: 'bar' }, spec: { topologySpreadConstraints: [soft] } })],
    );
    expect(['node3', 'node4']).toContain(by.get('s')?.node);
  });
});

describe('resources', () => {
  it('sums a histogram of reasons in the scheduler wording', async () => {
    const nodes = [
      makeNode('a', { cpu: '1' }),
      makeNode('b', { cpu: '1' }),
      makeNode('c', { cpu: '1' }),
      makeNode('t1', { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }),
      makeNode('t2', { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }),
    ];
    const { by } = await place(nodes, [makePod('big', { cpu: '2' })]);
    expect(by.get('big')?.message).toBe(
      '0/5 nodes are available: 2 node(s) had untolerated taint {k: v}, 3 Insufficient cpu. preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod..',
    );
  });

  it('init containers: the largest init step counts when bigger than the app containers', async () => {
    const pod = makePod('init', {
      containers: [{ name: 'app', image: 'x', resources: { requests: { cpu: '500m' } } }],
      spec: { initContainers: [{ name: 'setup', image: 'y', resources: { requests: { cpu: '3' } } }] },
    });
    const { by } = await place([makeNode('small', { cpu: '2' }), makeNode('large', { cpu: '4' })], [pod]);
    expect(by.get('init')?.node).toBe('large');
  });

  it('extended resources and pod count', async () => {
    const nodes = [makeNode('gpu', { extra: { 'example.com/gpu': '1' } }), makeNode('plain', { pods: 1 })];
    const pod = makePod('g', {
      containers: [{ name: 'c', image: 'x', resources: { requests: { 'example.com/gpu': '1' } } }],
    });
    const { by } = await place(
      [...nodes, makePod('filler', { nodeName: 'plain' })],
      [pod, { ...pod, metadata: { ...pod.metadata, name: 'g2', uid: 'g2' } }],
    );
    expect(by.get('g')?.node).toBe('gpu');
    expect(by.get('g2')?.message).toMatch(
      /^0\/2 nodes are available: 1 Too many pods, 2 Insufficient example.com\/gpu\./,
    );
  });

  it('LeastAllocated and BalancedAllocation scores match the reference formulas', async () => {
    const { by } = await place(
      [makeNode('n', { cpu: '4', memory: '8Gi' }), makeNode('m', { cpu: '8', memory: '8Gi' })],
      [makePod('p', { cpu: '1', memory: '2Gi' })],
      {
        explain: true,
      },
    );
    const n = by.get('p')!.scores!.find((s) => s.node === 'n')!;
    // cpu (4000-1000)*100/4000 = 75, memory (8-2)*100/8 = 75 → 75
    expect(n.plugins.NodeResourcesFit).toBe(75);
    // fractions 0.25 and 0.25 → std 0 → 100
    expect(n.plugins.NodeResourcesBalancedAllocation).toBe(100);
    const m = by.get('p')!.scores!.find((s) => s.node === 'm')!;
    expect(m.plugins.NodeResourcesFit).toBe(Math.trunc((87 + 75) / 2));
    expect(m.plugins.NodeResourcesBalancedAllocation).toBe(
      Math.trunc((1 - Math.abs(0.125 - 0.25) / 2) * 100),
    );
  });

  it('MostAllocated packs pods onto the fuller node', async () => {
    const config = {
      profiles: [
        {
          pluginConfig: [{ name: 'NodeResourcesFit', args: { scoringStrategy: { type: 'MostAllocated' } } }],
        },
      ],
    };
    const cluster = [
      makeNode('busy', { cpu: '4', memory: '8Gi' }),
      makeNode('idle', { cpu: '4', memory: '8Gi' }),
      makePod('x', { cpu: '2', memory: '4Gi', nodeName: 'busy' }),
    ];
    expect(
      (await place(cluster, [makePod('p', { cpu: '1', memory: '1Gi' })], { config })).by.get('p')?.node,
    ).toBe('busy');
    expect((await place(cluster, [makePod('p', { cpu: '1', memory: '1Gi' })])).by.get('p')?.node).toBe(
      'idle',
    );
  });

  it('RequestedToCapacityRatio follows the configured shape', async () => {
    const config = {
      profiles: [
        {
          pluginConfig: [
            {
              name: 'NodeResourcesFit',
              args: {
                scoringStrategy: {
                  type: 'RequestedToCapacityRatio',
                  resources: [{ name: 'cpu', weight: 1 }],
                  requestedToCapacityRatio: {
                    shape: [
                      { utilization: 0, score: 0 },
                      { utilization: 100, score: 10 },
                    ],
                  },
                },
              },
            },
          ],
        },
      ],
    };
    const { by } = await place([makeNode('n', { cpu: '4' })], [makePod('p', { cpu: '1' })], {
      config,
      explain: true,
    });
    expect(by.get('p')!.scores![0].plugins.NodeResourcesFit).toBe(25);
  });

  it('host ports conflict on the same protocol and port', async () => {
    const withPort = (name: string, nodeName?: string) =>
      makePod(name, {
        nodeName,
        containers: [
          { name: 'c', image: 'x', ports: [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }] },
        ],
      });
    const { by } = await place([makeNode('a'), makeNode('b'), withPort('old', 'a')], [withPort('new')]);
    expect(by.get('new')?.node).toBe('b');
    const full = await place([makeNode('a'), withPort('old', 'a')], [withPort('new')]);
    expect(full.by.get('new')?.message).toContain(
      "1 node(s) didn't have free ports for the requested pod ports",
    );
  });

  it('ImageLocality prefers the node that has the image', async () => {
    const img = { names: ['registry.example/big:1.0'], sizeBytes: 800 * 1024 * 1024 };
    const nodes = [makeNode('cold'), makeNode('warm', { images: [img] })];
    const pod = makePod('p', { containers: [{ name: 'c', image: 'registry.example/big:1.0' }] });
    const { by } = await place(nodes, [pod], { explain: true });
    expect(by.get('p')?.node).toBe('warm');
    expect(by.get('p')!.scores!.find((s) => s.node === 'warm')!.plugins.ImageLocality).toBeGreaterThan(0);
  });
});
