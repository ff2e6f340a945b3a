// A node update retries unschedulable pods only when it changes something scheduling reads (as
// kube-scheduler decides): a status heartbeat does not, a taint removal or more allocatable does.
import { describe, expect, it } from 'vitest';
import { MemoryClient } from './client-memory.js';
import { nodeSchedulingPropertiesChanged, Scheduler } from './scheduler.js';
import { makeNode, makePod } from './testing.js';
import type { Node } from './types.js';

const withHeartbeat = (n: Node, at: string): Node => ({
  ...n,
  status: { ...n.status, conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: at }] },
});

describe('node updates and unschedulable pods', () => {
  it('a heartbeat leaves the pod waiting; removing the taint that kept it out retries it', async () => {
    const client = new MemoryClient();
    const sched = new Scheduler({ client, now: () => 1_000_000, random: () => 0 });
    const tainted = makeNode('n', { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] });
    sched.onNodeAdd(withHeartbeat(tainted, '2026-01-01T00:00:00Z'));
    const p = makePod('p');
    client.pods.set('default/p', p);
    sched.onPodUpsert(p);
    const [r] = await sched.drain();
    expect(r.reason).toBe('Unschedulable');
    expect(sched.queue.where('default/p')).toBe('unschedulable');

    sched.onNodeUpdate(withHeartbeat(tainted, '2026-01-01T00:00:10Z'));
    expect(sched.queue.where('default/p')).toBe('unschedulable');

    sched.onNodeUpdate(withHeartbeat(makeNode('n'), '2026-01-01T00:00:20Z'));
    expect(['active', 'backoff']).toContain(sched.queue.where('default/p'));
  });

  it('names the properties that count', () => {
    const base = withHeartbeat(makeNode('n', { labels: { zone: 'a' } }), 't0');
    const changed = (f: (n: Node) => void) => {
      const n = structuredClone(base);
      f(n);
      return nodeSchedulingPropertiesChanged(base, n);
    };
    expect(changed((n) => (n.status!.conditions![0].lastHeartbeatTime = 't1'))).toBe(false);
    expect(changed((n) => (n.status!.images = [{ names: ['x'], sizeBytes: 1 }]))).toBe(false);
    expect(changed((n) => (n.status!.conditions![0].status = 'False'))).toBe(true);
    expect(changed((n) => (n.spec!.unschedulable = true))).toBe(true);
    expect(changed((n) => (n.status!.allocatable = { ...n.status!.allocatable, cpu: '8' }))).toBe(true);
    expect(changed((n) => (n.metadata.labels = { zone: 'b' }))).toBe(true);
    expect(changed((n) => (n.spec!.taints = [{ key: 'k', effect: 'NoSchedule' }]))).toBe(true);
    expect(changed((n) => (n.metadata.annotations = { a: 'b' }))).toBe(true);
  });
});
