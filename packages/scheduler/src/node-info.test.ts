// Dry runs change a node and must leave it exactly as it was: withoutPods() for preemption's victim
// search, checkpoint()/rollback() for filtering with nominated pods added.
import { describe, expect, it } from 'vitest';
import { NodeInfo } from './node-info.js';
import { newPodInfo, type PodInfo } from './pod-info.js';
import { makeNode, makePod } from './testing.js';

function pod(name: string, o: { port?: number; gpu?: string; labels?: Record<string, string>; anti?: boolean } = {}) {
  const p = makePod(name, { cpu: '1', memory: '1Gi', labels: o.labels });
  const c = p.spec.containers[0];
  if (o.port) c.ports = [{ containerPort: 80, hostPort: o.port, protocol: 'TCP' }];
  if (o.gpu) c.resources = { requests: { cpu: '1', memory: '1Gi', 'example.com/gpu': o.gpu } };
  if (o.anti) {
    p.spec.affinity = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { app: 'x' } }, topologyKey: 'kubernetes.io/hostname' },
        ],
      },
    };
  }
  return newPodInfo(p);
}

function shape(n: NodeInfo) {
  return {
    pods: n.pods.map((p) => p.key),
    requested: { ...n.requested, scalar: n.requested.scalar && [...n.requested.scalar] },
    nonZero: [n.nonZeroCPU, n.nonZeroMem],
    ports: [...n.usedPorts].map(([k, v]) => [k, [...v]]),
    withAffinity: n.podsWithAffinity.map((p) => p.key),
    withAnti: n.podsWithRequiredAntiAffinity.map((p) => p.key),
    byLabel: n.candidatePods('app=web').map((p) => p.key),
    generation: n.generation,
  };
}

function node(): { n: NodeInfo; pods: PodInfo[] } {
  const n = new NodeInfo(makeNode('n', { cpu: '8', extra: { 'example.com/gpu': '4' } }));
  const pods = [
    pod('a', { port: 8080, labels: { app: 'web' } }),
    pod('b', { gpu: '1', anti: true, labels: { app: 'web' } }),
    pod('c'),
    pod('d', { port: 9090, gpu: '2' }),
  ];
  for (const p of pods) n.addPod(p);
  n.candidatePods('app=web'); // build the label index
  return { n, pods };
}

describe('NodeInfo dry runs', () => {
  it('withoutPods shows the node without the pods and restores it, whatever happens inside', () => {
    const { n, pods } = node();
    const before = shape(n);
    const gone = [pods[0], pods[1], pods[3]];
    const seen = n.withoutPods(gone, () => {
      const inside = shape(n);
      // Put one back, take it off again, add a newcomer with a clashing port.
      n.addPod(pods[1]);
      n.removeLastPod(pods[1]);
      n.addPod(pod('new', { port: 8080, gpu: '3', anti: true, labels: { app: 'web' } }));
      return inside;
    });
    expect(seen.pods).toEqual(['default/c']);
    expect(seen.ports).toEqual([]);
    expect(seen.requested.milliCPU).toBe(1000);
    expect(seen.requested.scalar).toEqual([['example.com/gpu', 0]]);
    expect(seen.withAnti).toEqual([]);
    expect(seen.byLabel).toEqual([]);
    expect(shape(n)).toEqual(before);
  });

  it('withoutPods restores the node when the function throws', () => {
    const { n, pods } = node();
    const before = shape(n);
    expect(() =>
      n.withoutPods([pods[2]], () => {
        n.addPod(pod('x', { port: 7070 }));
        throw new Error('plugin bug');
      }),
    ).toThrow('plugin bug');
    expect(shape(n)).toEqual(before);
  });

  it('withoutPods keeps a node without host ports without them, even if the function leaves one', () => {
    const n = new NodeInfo(makeNode('plain'));
    const c = pod('c');
    n.addPod(c);
    const before = shape(n);
    n.withoutPods([c], () => n.addPod(pod('leftover', { port: 6060 })));
    expect(shape(n)).toEqual(before);
    expect(n.usedPorts.size).toBe(0);
  });

  it('rollback undoes pods added since the checkpoint', () => {
    const { n } = node();
    const before = shape(n);
    const cp = n.checkpoint();
    n.addPod(pod('e', { port: 8080, gpu: '1', anti: true, labels: { app: 'web' } }));
    n.addPod(pod('f', { labels: { app: 'web' } }));
    expect(n.pods).toHaveLength(6);
    n.rollback(cp);
    expect(shape(n)).toEqual(before);
  });
});
