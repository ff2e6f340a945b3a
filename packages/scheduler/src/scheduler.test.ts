import { createMemoryStore } from '@kemu/core';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryClient } from './client-memory.js';
import type { FilterPlugin, PermitPlugin, PluginFactory } from './framework.js';
import { registerPlugin, unregisterPlugin } from './registry.js';
import { Scheduler } from './scheduler.js';
import { Code, Status } from './status.js';
import { makeNode, makePod } from './testing.js';
import type { Pod } from './types.js';

function harness(opts: Partial<ConstructorParameters<typeof Scheduler>[0]> = {}) {
  let clock = 1_000_000;
  const client = new MemoryClient();
  const sched = new Scheduler({ client, now: () => clock, random: () => 0, ...opts });
  client.onPodChange = (p) => sched.onPodUpsert(p);
  client.onPodDeleted = (p) => sched.onPodDelete(p);
  client.onObjectChange = (o) => sched.onObject(o, 'Update');
  const add = (p: Pod) => {
    client.pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    sched.onPodUpsert(p);
  };
  return {
    client,
    sched,
    add,
    tick: (ms: number) => (clock += ms),
    pod: (n: string) => client.pods.get(`default/${n}`)!,
  };
}

describe('scheduling queue', () => {
  it('pops by priority, then by arrival', () => {
    const { sched, add, tick } = harness();
    add(makePod('low', { priority: 1 }));
    tick(1);
    add(makePod('high', { priority: 100 }));
    tick(1);
    add(makePod('low2', { priority: 1 }));
    expect([
      sched.queue.tryPop()?.pi.key,
      sched.queue.tryPop()?.pi.key,
      sched.queue.tryPop()?.pi.key,
    ]).toEqual(['default/high', 'default/low', 'default/low2']);
  });

  it('backoff doubles from 1 s and caps at 10 s', () => {
    const { sched } = harness();
    const q = { attempts: 0 } as Parameters<typeof sched.queue.backoffDuration>[0];
    const seq = [1, 2, 3, 4, 5, 6].map((a) => sched.queue.backoffDuration({ ...q, attempts: a }));
    expect(seq).toEqual([1000, 2000, 4000, 8000, 10000, 10000]);
  });

  it('an unschedulable pod waits for a relevant event, then backs off before retrying', async () => {
    const { sched, add, tick, pod } = harness();
    sched.onNodeAdd(makeNode('small', { cpu: '1' }));
    add(makePod('big', { cpu: '2' }));
    const [r] = await sched.drain();
    expect(r.reason).toBe('Unschedulable');
    expect(sched.queue.where('default/big')).toBe('unschedulable');
    // An unrelated kind of event does not move it (NodeResourcesFit listens to nodes and pod deletions).
    sched.onObject(
      { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'x' }, provisioner: 'p' },
      'Add',
    );
    expect(sched.queue.where('default/big')).toBe('unschedulable');
    sched.onNodeAdd(makeNode('large', { cpu: '4' }));
    expect(sched.queue.where('default/big')).toBe('backoff');
    expect(await sched.drain()).toEqual([]);
    tick(1001);
    sched.queue.flushBackoffCompleted();
    const [again] = await sched.drain();
    expect(again.node).toBe('large');
    expect(pod('big').spec.nodeName).toBe('large');
  });

  it('pods left unschedulable are retried after 5 minutes even without events', async () => {
    const { sched, add, tick } = harness();
    sched.onNodeAdd(makeNode('n', { cpu: '1' }));
    add(makePod('p', { cpu: '2' }));
    await sched.drain();
    tick(299_000);
    sched.queue.flushUnschedulableLeftover();
    expect(sched.queue.where('default/p')).toBe('unschedulable');
    tick(2_000);
    sched.queue.flushUnschedulableLeftover();
    expect(sched.queue.where('default/p')).toBe('active');
  });

  it('scheduling gates hold a pod until they are removed', async () => {
    const { sched, add, pod, client } = harness();
    sched.onNodeAdd(makeNode('n'));
    add(makePod('gated', { spec: { schedulingGates: [{ name: 'example.com/foo' }] } }));
    expect(await sched.drain()).toEqual([]);
    expect(sched.queue.gatedMessage(pod('gated'))?.message).toBe(
      'waiting for scheduling gates: [example.com/foo]',
    );
    await new Promise((r) => setTimeout(r, 0));
    expect(pod('gated').status?.conditions?.[0]).toMatchObject({
      type: 'PodScheduled',
      status: 'False',
      reason: 'SchedulingGated',
    });
    const ungated = { ...pod('gated'), spec: { ...pod('gated').spec, schedulingGates: [] } };
    client.pods.set('default/gated', ungated);
    sched.onPodUpsert(ungated);
    const [r] = await sched.drain();
    expect(r.node).toBe('n');
  });

  it('round-robins the start node when only part of the cluster is searched', async () => {
    const { sched, add } = harness({ config: { percentageOfNodesToScore: 10 } });
    for (let i = 0; i < 1000; i++) sched.onNodeAdd(makeNode(`n${i}`));
    add(makePod('a'));
    add(makePod('b'));
    const [ra, rb] = await sched.drain();
    expect(ra.evaluatedNodes).toBe(100);
    expect(ra.feasibleNodes).toBe(100);
    const idx = (n: string | null) => Number(n?.slice(1));
    expect(idx(ra.node)).toBeLessThan(100);
    expect(idx(rb.node)).toBeGreaterThanOrEqual(100);
    expect(idx(rb.node)).toBeLessThan(200);
  });
});

describe('bad input', () => {
  it('a pod naming a missing PriorityClass stays pending with a clear condition until the class exists', async () => {
    const { sched, add, pod } = harness();
    sched.onNodeAdd(makeNode('n'));
    add(makePod('p', { spec: { priorityClassName: 'gold' } }));
    expect(await sched.drain()).toEqual([]);
    await new Promise((r) => setTimeout(r, 0));
    expect(pod('p').status?.conditions?.[0]).toMatchObject({
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: 'no PriorityClass with name gold was found',
    });
    sched.onObject(
      { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'gold' }, value: 1000 },
      'Add',
    );
    const [r] = await sched.drain();
    expect(r.node).toBe('n');
  });

  it('a pod referencing a missing PVC stays pending with the claim named', async () => {
    const { sched, add, pod, client } = harness();
    sched.onNodeAdd(makeNode('n'));
    add(makePod('p', { spec: { volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }] } }));
    const [r] = await sched.drain();
    expect(r.node).toBeNull();
    expect(r.message).toBe(
      '0/1 nodes are available: persistentvolumeclaim "data" not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling..',
    );
    expect(pod('p').status?.conditions?.[0]).toMatchObject({
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: r.message,
    });
    expect(client.events.at(-1)).toMatchObject({
      type: 'Warning',
      reason: 'FailedScheduling',
      message: r.message,
    });
    // Creating the claim (bound to a PV) lets it through on the next attempt.
    sched.onObject(
      {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'pv' },
        spec: { capacity: { storage: '1Gi' } },
      },
      'Add',
    );
    sched.onObject(
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'data', namespace: 'default' },
        spec: { volumeName: 'pv' },
      },
      'Add',
    );
    expect(sched.queue.where('default/p')).toBe('backoff');
  });

  it('a plugin that throws fails that pod with the plugin name and the scheduler keeps going', async () => {
    const boom: PluginFactory = (): FilterPlugin => ({
      name: 'Boom',
      filter(_s, pi) {
        if (pi.labels?.explode) throw new Error('kaboom');
        return null;
      },
    });
    const { sched, add, pod } = harness({
      plugins: { Boom: boom },
      config: { profiles: [{ plugins: { filter: { enabled: [{ name: 'Boom' }] } } }] },
    });
    sched.onNodeAdd(makeNode('n'));
    add(makePod('bad', { labels: { explode: 'yes' } }));
    add(makePod('good'));
    const [bad, good] = await sched.drain();
    expect(bad.reason).toBe('SchedulerError');
    expect(bad.message).toBe('running "Boom" filter plugin: kaboom');
    expect(pod('bad').status?.conditions?.[0]).toMatchObject({
      reason: 'SchedulerError',
      message: 'running "Boom" filter plugin: kaboom',
    });
    expect(sched.queue.where('default/bad')).toBe('backoff');
    expect(good.node).toBe('n');
  });

  it('a failing bind forgets the assumed pod and requeues it', async () => {
    const client = new MemoryClient();
    const sched = new Scheduler({ client, random: () => 0 });
    sched.onNodeAdd(makeNode('n', { pods: 1 }));
    const p = makePod('p');
    sched.onPodUpsert(p); // not in the client's pod map: bind fails like a deleted pod would
    const [r] = await sched.drain();
    expect(r.reason).toBe('SchedulerError');
    expect(r.message).toContain('pods "p" not found');
    expect(sched.cache.isAssumed('default/p')).toBe(false);
    expect(sched.cache.get('n')!.pods.length).toBe(0);
  });
});

describe('out-of-tree plugins', () => {
  afterEach(() => unregisterPlugin('GangPermit'));

  it('registerPlugin + Permit Wait: the binding waits until the plugin allows it', async () => {
    const waiting: string[] = [];
    registerPlugin(
      'GangPermit',
      (_args, handle): PermitPlugin => ({
        name: 'GangPermit',
        permit(_s, pi) {
          waiting.push(pi.uid);
          if (waiting.length < 2) return { status: new Status(Code.Wait), timeoutMs: 5000 };
          for (const uid of waiting) handle.waitingPods.get(uid)?.allow('GangPermit');
          return { status: null };
        },
      }),
    );
    const { sched, add, pod } = harness({
      config: { profiles: [{ plugins: { permit: { enabled: [{ name: 'GangPermit' }] } } }] },
    });
    sched.onNodeAdd(makeNode('n'));
    add(makePod('g1'));
    const first = sched.queue.tryPop()!;
    const r1 = await sched.runCycle(first);
    expect(r1.node).toBe('n');
    await new Promise((r) => setTimeout(r, 10));
    expect(pod('g1').spec.nodeName).toBeUndefined(); // parked at Permit
    add(makePod('g2'));
    await sched.drain();
    await sched.flushBindings();
    expect(pod('g1').spec.nodeName).toBe('n');
    expect(pod('g2').spec.nodeName).toBe('n');
  });

  it('a Permit timeout rejects the pod and releases its resources', async () => {
    registerPlugin(
      'GangPermit',
      (): PermitPlugin => ({
        name: 'GangPermit',
        permit: () => ({ status: new Status(Code.Wait), timeoutMs: 20 }),
      }),
    );
    const { sched, add, pod } = harness({
      config: { profiles: [{ plugins: { permit: { enabled: [{ name: 'GangPermit' }] } } }] },
    });
    sched.onNodeAdd(makeNode('n'));
    add(makePod('lonely'));
    const [r] = await sched.drain();
    expect(r.reason).toBe('Unschedulable');
    expect(r.message).toBe('rejected due to timeout after waiting 0.02s at plugin GangPermit');
    expect(pod('lonely').spec.nodeName).toBeUndefined();
    expect(sched.cache.get('n')!.pods).toHaveLength(0);
  });

  it('refuses to shadow an in-tree plugin', () => {
    expect(() => registerPlugin('NodeResourcesFit', () => ({ name: 'x' }))).toThrow(
      'a plugin named "NodeResourcesFit" already exists in the in-tree registry',
    );
  });
});

describe('the scheduling loop shares the event loop', () => {
  it('lets timers and I/O run between cycles while a backlog of pods keeps failing', async () => {
    // Everything of a composed cluster runs on one event loop: a loop that chained cycle after cycle on
    // promises alone would hold back every timer (lease renewals, kubelet work) until its queue ran dry.
    const { client, sched, add } = harness({ config: { podInitialBackoffSeconds: 1, podMaxBackoffSeconds: 1 } });
    sched.onNodeAdd(makeNode('node-a', { cpu: '1' }));
    for (let i = 0; i < 3000; i++) add(makePod(`big-${i}`, { cpu: '8' }));
    let attemptsWhenTimerRan = -1;
    const timer = new Promise<void>((r) =>
      setTimeout(() => {
        attemptsWhenTimerRan = [...client.pods.values()].filter((p) =>
          p.status?.conditions?.some((c) => c.type === 'PodScheduled'),
        ).length;
        r();
      }, 0),
    );
    await sched.start();
    await timer;
    // The timer came due at once: it runs after a slice of cycles, not after all 3,000.
    expect(attemptsWhenTimerRan).toBeLessThan(3000);
    await sched.stop();
  });
});

describe('run against a @kemu/core store', () => {
  it('binds pending pods, writes PodScheduled=False and FailedScheduling events for the rest', async () => {
    const store = await createMemoryStore();
    await store.create(makeNode('node-a', { cpu: '2' }));
    const sched = new Scheduler({ store });
    await sched.start();
    await store.create(makePod('fits', { cpu: '1' }));
    await store.create(makePod('too-big', { cpu: '8' }));
    const deadline = Date.now() + 5000;
    let fits: Pod | undefined;
    let big: Pod | undefined;
    while (Date.now() < deadline) {
      fits = (await store.get('Pod', 'default', 'fits')) as Pod;
      big = (await store.get('Pod', 'default', 'too-big')) as Pod;
      if (fits.spec.nodeName && big.status?.conditions?.some((c) => c.type === 'PodScheduled')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(fits?.spec.nodeName).toBe('node-a');
    expect(big?.spec.nodeName).toBeUndefined();
    const cond = big?.status?.conditions?.find((c) => c.type === 'PodScheduled');
    expect(cond).toMatchObject({ status: 'False', reason: 'Unschedulable' });
    expect(cond?.message).toBe(
      '0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..',
    );
    await new Promise((r) => setTimeout(r, 50));
    const events = (await store.list('Event', { namespace: 'default' })).items as {
      reason?: string;
      message?: string;
    }[];
    expect(events.find((e) => e.reason === 'Scheduled')?.message).toBe(
      'Successfully assigned default/fits to node-a',
    );
    expect(events.some((e) => e.reason === 'FailedScheduling')).toBe(true);
    await sched.stop();
    await store.close();
  });

  it('watches every kind it reads, PodDisruptionBudgets and CSIStorageCapacities included', async () => {
    const store = await createMemoryStore();
    const sched = new Scheduler({ store });
    const { connectStore } = await import('./client-store.js');
    const conn = await connectStore(store, sched);
    expect(conn.skipped).toEqual([]);
    await store.create({
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'guard', namespace: 'default' },
      spec: { selector: { matchLabels: { app: 'x' } } },
    });
    for (let i = 0; i < 50 && !sched.cluster.pdbs.has('default/guard'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(sched.cluster.pdbs.has('default/guard')).toBe(true);
    await conn.stop();
    await store.close();
  });

  it('an invalid configuration stops startup with the field named', () => {
    expect(
      () => new Scheduler({ client: new MemoryClient(), config: { percentageOfNodesToScore: -1 } }),
    ).toThrow('percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]');
  });
});

describe('incremental indexes stay consistent', () => {
  it('anti-affinity and spread counts follow binds, deletions and node label changes', async () => {
    const { sched, add, client, pod, tick } = harness();
    const anti = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { app: 'db' } }, topologyKey: 'kubernetes.io/hostname' },
        ],
      },
    };
    sched.onNodeAdd(makeNode('a'));
    add(makePod('db-1', { labels: { app: 'db' }, spec: { affinity: anti } }));
    add(makePod('db-2', { labels: { app: 'db' }, spec: { affinity: anti } }));
    const [r1, r2] = await sched.drain();
    expect(r1.node).toBe('a');
    expect(r2.message).toContain("1 node(s) didn't match pod anti-affinity rules");
    // Deleting the first frees the node for the second.
    await client.deletePod(pod('db-1'));
    expect(sched.queue.where('default/db-2')).toBe('backoff');
    tick(1001);
    sched.queue.flushBackoffCompleted();
    const retry = sched.queue.tryPop() ?? null;
    expect(retry).not.toBeNull();
    const r3 = await sched.runCycle(retry!, true);
    expect(r3.node).toBe('a');

    const spread = (n: string) =>
      makePod(n, {
        labels: { app: 'web' },
        spec: {
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'zone',
              whenUnsatisfiable: 'DoNotSchedule',
              labelSelector: { matchLabels: { app: 'web' } },
            },
          ],
        },
      });
    sched.onNodeAdd(makeNode('z1', { labels: { zone: 'one' } }));
    sched.onNodeAdd(makeNode('z2', { labels: { zone: 'two' } }));
    add(spread('w1'));
    add(spread('w2'));
    add(spread('w3'));
    const placed = (await sched.drain()).map((r) => r.node);
    expect(placed.slice(0, 2).sort()).toEqual(['z1', 'z2']);
    expect(placed[2]).not.toBeNull();
    // Relabel z2 into zone one: now zone "one" holds every web pod, and a new domain appears empty.
    sched.onNodeUpdate(makeNode('z2', { labels: { zone: 'one' } }));
    sched.onNodeAdd(makeNode('z3', { labels: { zone: 'three' } }));
    add(spread('w4'));
    const [r4] = await sched.drain();
    expect(r4.node).toBe('z3');
  });
});

describe('unreadable specs', () => {
  it('a pending pod with a malformed quantity is reported on the pod and the next pod still schedules', async () => {
    const { sched, add, pod, client } = harness();
    sched.onNodeAdd(makeNode('n'));
    add(makePod('bad', { cpu: 'lots' }));
    add(makePod('good'));
    await new Promise((r) => setTimeout(r, 0));
    expect(pod('bad').status?.conditions?.[0]).toMatchObject({ reason: 'SchedulerError' });
    expect(pod('bad').status?.conditions?.[0].message).toMatch(/^invalid pod spec: invalid quantity "lots"/);
    expect(client.events.find((e) => e.pod === 'default/bad')?.reason).toBe('FailedScheduling');
    const [r] = await sched.drain();
    expect(r.pod).toBe('default/good');
    expect(r.node).toBe('n');
  });
});

describe('preemption against a @kemu/core store', () => {
  it('deletes the victim gracefully, records nominatedNodeName, and binds once the victim is gone', async () => {
    const store = await createMemoryStore();
    await store.create(makeNode('only', { cpu: '2' }));
    for (const [name, value] of [
      ['low', 1],
      ['vip', 1000],
    ] as const) {
      await store.create({
        apiVersion: 'scheduling.k8s.io/v1',
        kind: 'PriorityClass',
        metadata: { name },
        value,
      });
    }
    await store.create({
      ...makePod('victim', { cpu: '2', spec: { priorityClassName: 'low' } }),
      metadata: { name: 'victim', namespace: 'default' },
    });
    const sched = new Scheduler({ store, config: { podInitialBackoffSeconds: 1, podMaxBackoffSeconds: 1 } });
    await sched.start();
    const waitFor = async <T>(fn: () => Promise<T | undefined>): Promise<T | undefined> => {
      for (let i = 0; i < 100; i++) {
        const v = await fn();
        if (v) return v;
        await new Promise((r) => setTimeout(r, 50));
      }
      return undefined;
    };
    expect(
      await waitFor(async () => ((await store.get('Pod', 'default', 'victim')) as Pod).spec.nodeName),
    ).toBe('only');
    await store.create({
      ...makePod('vip', { cpu: '2', spec: { priorityClassName: 'vip' } }),
      metadata: { name: 'vip', namespace: 'default' },
    });
    const nominated = await waitFor(
      async () => ((await store.get('Pod', 'default', 'vip')) as Pod).status?.nominatedNodeName,
    );
    expect(nominated).toBe('only');
    const victim = (await store.get('Pod', 'default', 'victim')) as Pod;
    expect(victim.metadata.deletionTimestamp).toBeDefined(); // graceful: the kubelet finishes it
    expect(((await store.get('Pod', 'default', 'vip')) as Pod).spec.nodeName).toBeUndefined();
    await store.delete('Pod', 'default', 'victim', { gracePeriodSeconds: 0 });
    expect(await waitFor(async () => ((await store.get('Pod', 'default', 'vip')) as Pod).spec.nodeName)).toBe(
      'only',
    );
    const events = (await store.list('Event', { namespace: 'default' })).items as {
      reason?: string;
      message?: string;
    }[];
    expect(events.find((e) => e.reason === 'Preempted')?.message).toMatch(
      /^Preempted by pod .+ on node only$/,
    );
    await sched.stop();
    await store.close();
  }, 30_000);
});

describe('debug mode for one pod', () => {
  it('the explain annotation records every node’s filter result and the weighted scores', async () => {
    const { sched, add } = harness();
    sched.onNodeAdd(makeNode('small', { cpu: '1' }));
    sched.onNodeAdd(makeNode('big', { cpu: '8' }));
    sched.onNodeAdd(makeNode('also-big', { cpu: '8' }));
    const traced = makePod('traced', { cpu: '2' });
    traced.metadata.annotations = { 'scheduler.kemu.dev/explain': 'true' };
    add(traced);
    add(makePod('untraced', { cpu: '2' }));
    await sched.drain();
    expect([...sched.explanations.keys()]).toEqual(['default/traced']);
    const e = sched.explanations.get('default/traced')!;
    expect(e.filters).toEqual({ small: { plugin: 'NodeResourcesFit', code: 'Unschedulable', reasons: ['Insufficient cpu'] } });
    expect(e.scores?.map((s) => s.node).sort()).toEqual(['also-big', 'big']);
    expect(e.scores?.[0].plugins).toHaveProperty('NodeResourcesFit');
  });
});
