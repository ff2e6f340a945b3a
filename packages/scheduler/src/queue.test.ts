// Popping from the backoff queue when the active queue is empty (kube-scheduler's SchedulerPopFromBackoffQ):
// an unschedulable pod in backoff is retried at once instead of after the flush; a pod that failed with
// an error still waits out its backoff; tryPop() (used by drain and simulate) never takes backoff pods.
import { describe, expect, it } from 'vitest';
import type { QueuedPodInfo } from './framework.js';
import { SchedulingQueue } from './queue.js';
import { makePod } from './testing.js';

function queue(opts: { popFromBackoffQ?: boolean } = {}) {
  let clock = 1_000_000;
  const q = new SchedulingQueue({
    less: (a, b) => a.pi.priority > b.pi.priority || (a.pi.priority === b.pi.priority && a.timestamp < b.timestamp),
    preEnqueue: () => null,
    interested: () => true,
    initialBackoffMs: 1000,
    maxBackoffMs: 10_000,
    maxInUnschedulableMs: 300_000,
    now: () => clock,
    ...opts,
  });
  return { q, tick: (ms: number) => (clock += ms) };
}

/** Pop a pod and fail it as unschedulable while a cluster event arrived, which sends it to backoff. */
function failIntoBackoff(q: SchedulingQueue, name: string): QueuedPodInfo {
  q.add(makePod(name));
  const qpi = q.tryPop()!;
  const cycle = q.schedulingCycle;
  q.moveAllToActiveOrBackoffQueue({ resource: 'Pod', action: 'Delete' });
  q.requeueUnschedulable(qpi, cycle);
  expect(q.where(`default/${name}`)).toBe('backoff');
  return qpi;
}

describe('popping from the backoff queue', () => {
  it('pop() takes an unschedulable pod still backing off when nothing is active', async () => {
    const { q } = queue();
    failIntoBackoff(q, 'a');
    expect(q.tryPop()).toBeNull();
    const got = await q.pop();
    expect(got?.pi.key).toBe('default/a');
    expect(got?.attempts).toBe(2);
    expect(q.where('default/a')).toBe('inflight');
  });

  it('active pods come first; among backing-off pods the earliest to finish goes first', async () => {
    const { q, tick } = queue();
    failIntoBackoff(q, 'early');
    tick(10);
    failIntoBackoff(q, 'late');
    q.add(makePod('fresh'));
    expect((await q.pop())?.pi.key).toBe('default/fresh');
    expect((await q.pop())?.pi.key).toBe('default/early');
    expect((await q.pop())?.pi.key).toBe('default/late');
  });

  it('a pop() already waiting receives a pod as soon as it enters backoff', async () => {
    const { q } = queue();
    q.add(makePod('p'));
    const first = q.tryPop()!;
    const waiting = q.pop();
    const cycle = q.schedulingCycle;
    q.moveAllToActiveOrBackoffQueue({ resource: 'Node', action: 'Add' });
    q.requeueUnschedulable(first, cycle);
    expect((await waiting)?.pi.key).toBe('default/p');
  });

  it('a pod that failed with an error waits out its backoff', async () => {
    const { q, tick } = queue();
    q.add(makePod('err'));
    q.requeueBackoff(q.tryPop()!);
    let got: QueuedPodInfo | null | undefined;
    void q.pop().then((r) => (got = r));
    await Promise.resolve();
    expect(got).toBeUndefined();
    expect(q.where('default/err')).toBe('backoff');
    tick(1001);
    q.flushBackoffCompleted();
    await Promise.resolve();
    expect(got?.pi.key).toBe('default/err');
  });

  it('can be turned off, and tryPop() never takes backoff pods', async () => {
    const { q, tick } = queue({ popFromBackoffQ: false });
    failIntoBackoff(q, 'a');
    let got: QueuedPodInfo | null | undefined;
    void q.pop().then((r) => (got = r));
    await Promise.resolve();
    expect(got).toBeUndefined();
    tick(1001);
    q.flushBackoffCompleted();
    await Promise.resolve();
    expect(got?.pi.key).toBe('default/a');

    const on = queue();
    failIntoBackoff(on.q, 'b');
    expect(on.q.tryPop()).toBeNull();
    expect(on.q.where('default/b')).toBe('backoff');
  });
});
