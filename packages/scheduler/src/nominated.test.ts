// Pods nominated to a node (preemptors waiting for their victims to go) hold their room against pods of
// lower or equal priority, are filtered without changing the node, and stop counting once assumed.
import { describe, expect, it } from 'vitest';
import { MemoryClient } from './client-memory.js';
import { CycleState, type PermitPlugin, type PluginFactory } from './framework.js';
import { newPodInfo } from './pod-info.js';
import { Scheduler } from './scheduler.js';
import { Code, Status } from './status.js';
import { makeNode, makePod } from './testing.js';
import type { Pod } from './types.js';

function harness(opts: Partial<ConstructorParameters<typeof Scheduler>[0]> = {}) {
  const client = new MemoryClient();
  const sched = new Scheduler({ client, now: () => 1_000_000, random: () => 0, ...opts });
  client.onPodChange = (p) => sched.onPodUpsert(p);
  client.onPodDeleted = (p) => sched.onPodDelete(p);
  const add = (p: Pod) => {
    client.pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    sched.onPodUpsert(p);
  };
  const fw = sched.profiles.get('default-scheduler')!;
  const filter = (p: Pod, node: string) => {
    const pi = newPodInfo(p);
    const state = new CycleState();
    fw.runPreFilter(state, pi, sched.cache.list());
    return fw.runFilterWithNominatedPods(state, pi, sched.cache.get(node)!);
  };
  return { client, sched, add, fw, filter };
}

/** What a filter may read from a node, to check it is unchanged. */
function shape(sched: Scheduler, node: string) {
  const n = sched.cache.get(node)!;
  return {
    pods: n.pods.map((p) => p.key),
    requested: { ...n.requested, scalar: n.requested.scalar && [...n.requested.scalar] },
    nonZero: [n.nonZeroCPU, n.nonZeroMem],
    ports: [...n.usedPorts].map(([k, v]) => [k, [...v]]),
    withAffinity: n.podsWithAffinity.length,
    withAnti: n.podsWithRequiredAntiAffinity.length,
  };
}

const withPort = (name: string, o: Parameters<typeof makePod>[1]) => {
  const p = makePod(name, o);
  p.spec.containers[0].ports = [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }];
  return p;
};

describe('nominated pods', () => {
  it('hold their room against equal or lower priority pods, not against higher ones', () => {
    const { sched, add, filter } = harness();
    sched.onNodeAdd(makeNode('n', { cpu: '2' }));
    add(makePod('running', { cpu: '1', nodeName: 'n', priority: 0 }));
    const waiting = newPodInfo(makePod('waiting', { cpu: '1', priority: 10 }));
    sched.queue.addNominatedPod(waiting, 'n');
    expect(sched.cache.get('n')!.nominated.map((p) => p.key)).toEqual(['default/waiting']);
    expect(filter(makePod('low', { cpu: '1', priority: 5 }), 'n')?.reasons).toEqual(['Insufficient cpu']);
    expect(filter(makePod('peer', { cpu: '1', priority: 10 }), 'n')?.reasons).toEqual(['Insufficient cpu']);
    expect(filter(makePod('high', { cpu: '1', priority: 11 }), 'n')).toBeNull();
    // The nominated pod itself is not counted twice.
    expect(filter(waiting.pod, 'n')).toBeNull();
  });

  it('leave the node exactly as it was after a filter pass, ports and extended resources included', () => {
    const { sched, add, filter } = harness();
    sched.onNodeAdd(makeNode('n', { cpu: '4', extra: { 'example.com/gpu': '2' } }));
    add(withPort('running', { cpu: '1', nodeName: 'n', labels: { app: 'a' } }));
    const before = shape(sched, 'n');
    const gpu = makePod('waiting', { cpu: '1', priority: 10, labels: { app: 'a' } });
    gpu.spec.containers[0].resources = { requests: { cpu: '1', 'example.com/gpu': '1' } };
    gpu.spec.containers[0].ports = [{ containerPort: 80, hostPort: 9090, protocol: 'TCP' }];
    gpu.spec.affinity = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { app: 'b' } }, topologyKey: 'kubernetes.io/hostname' },
        ],
      },
    };
    sched.queue.addNominatedPod(newPodInfo(gpu), 'n');
    // Accepted pods pass twice (with and without it), rejected ones fail with it added; both restore.
    expect(filter(makePod('fits', { cpu: '1', priority: 10 }), 'n')).toBeNull();
    expect(filter(withPort('clash', { cpu: '1', priority: 10 }), 'n')?.reasons).toEqual([
      "node(s) didn't have free ports for the requested pod ports",
    ]);
    const p2 = makePod('ports', { cpu: '1', priority: 10 });
    p2.spec.containers[0].ports = [{ containerPort: 80, hostPort: 9090, protocol: 'TCP' }];
    expect(filter(p2, 'n')?.reasons).toEqual(["node(s) didn't have free ports for the requested pod ports"]);
    const g2 = makePod('gpu2', { cpu: '1', priority: 10 });
    g2.spec.containers[0].resources = { requests: { cpu: '1', 'example.com/gpu': '2' } };
    expect(filter(g2, 'n')?.reasons).toEqual(['Insufficient example.com/gpu']);
    expect(shape(sched, 'n')).toEqual(before);
  });

  it('stop counting once the pod is assumed on the node, so its room is not reserved twice', async () => {
    const hold: PluginFactory = (): PermitPlugin => ({
      name: 'Hold',
      permit: () => ({ status: new Status(Code.Wait), timeoutMs: 60_000 }),
    });
    const { sched, add, filter } = harness({
      plugins: { Hold: hold },
      config: { profiles: [{ plugins: { permit: { enabled: [{ name: 'Hold' }] } } }] },
    });
    sched.onNodeAdd(makeNode('n', { cpu: '2' }));
    add(makePod('preemptor', { cpu: '1', priority: 10 }));
    const qpi = sched.queue.tryPop()!;
    sched.queue.addNominatedPod(qpi.pi, 'n');
    // Assumed and parked at Permit: the assumed copy alone holds its CPU.
    const r = await sched.runCycle(qpi);
    expect(r.node).toBe('n');
    expect(sched.cache.isAssumed('default/preemptor')).toBe(true);
    expect(sched.queue.nominatedPodsForNode('n')).toEqual([]);
    expect(sched.cache.get('n')!.nominated).toEqual([]);
    expect(filter(makePod('late', { cpu: '1', priority: 10 }), 'n')).toBeNull();
    await sched.stop();
  });
});
