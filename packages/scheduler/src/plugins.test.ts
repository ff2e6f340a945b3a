// Plugin behaviour that the end-to-end placement tests cannot reach directly.
import { describe, expect, it } from 'vitest';
import { MemoryClient } from './client-memory.js';
import { CycleState } from './framework.js';
import { NodeInfo } from './node-info.js';
import { newPodInfo } from './pod-info.js';
import { Scheduler } from './scheduler.js';
import { simulate } from './simulate.js';
import { makeNode, makePod } from './testing.js';

describe('NodeName', () => {
  it('only the node named in spec.nodeName passes', () => {
    const sched = new Scheduler({ client: new MemoryClient() });
    const pl = sched.profiles.get('default-scheduler')!.plugins.get('NodeName')!;
    const filter = (
      pl as unknown as { filter: (s: CycleState, pi: unknown, n: NodeInfo) => { message: string } | null }
    ).filter;
    const pi = newPodInfo(makePod('p', { spec: { nodeName: 'b' } }));
    expect(filter(new CycleState(), pi, new NodeInfo(makeNode('b')))).toBeNull();
    expect(filter(new CycleState(), pi, new NodeInfo(makeNode('a')))?.message).toBe(
      "node(s) didn't match the requested node name",
    );
  });
});

describe('InterPodAffinity scoring', () => {
  it('hardPodAffinityWeight pulls a pod toward existing pods whose required affinity it satisfies', async () => {
    const sticky = makePod('sticky', {
      nodeName: 'b',
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { role: 'cache' } }, topologyKey: 'kubernetes.io/hostname' },
            ],
          },
        },
      },
    });
    const cluster = [makeNode('a'), makeNode('b'), sticky];
    const pod = makePod('cache', { labels: { role: 'cache' } });
    const withWeight = await simulate(cluster, [pod], { explain: true });
    const b = withWeight.placements[0].scores!.find((s) => s.node === 'b')!;
    expect(b.plugins.InterPodAffinity).toBe(200);
    expect(withWeight.placements[0].node).toBe('b');
    const config = {
      profiles: [{ pluginConfig: [{ name: 'InterPodAffinity', args: { hardPodAffinityWeight: 0 } }] }],
    };
    const without = await simulate(cluster, [pod], { explain: true, config });
    expect(without.placements[0].scores!.find((s) => s.node === 'b')!.plugins.InterPodAffinity).toBe(0);
  });
});

describe('PodTopologySpread system defaults', () => {
  it('spreads pods owned by a ReplicaSet across nodes without explicit constraints', async () => {
    const owned = (n: string, nodeName?: string) =>
      makePod(n, {
        nodeName,
        labels: { app: 'web' },
        spec: {},
      });
    const withOwner = (p: ReturnType<typeof owned>) => ({
      ...p,
      metadata: {
        ...p.metadata,
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: 'rs', controller: true },
        ],
      },
    });
    const cluster = [makeNode('a'), makeNode('b'), withOwner(owned('w1', 'a')), withOwner(owned('w2', 'a'))];
    const r = await simulate(cluster, [withOwner(owned('w3'))], { explain: true });
    const a = r.placements[0].scores!.find((s) => s.node === 'a')!;
    const bb = r.placements[0].scores!.find((s) => s.node === 'b')!;
    expect(bb.plugins.PodTopologySpread).toBeGreaterThan(a.plugins.PodTopologySpread);
    // Without an owner the defaults do not apply.
    const plain = await simulate([makeNode('a'), makeNode('b'), owned('w1', 'a')], [owned('w3')], {
      explain: true,
    });
    expect(plain.placements[0].scores![0].plugins.PodTopologySpread).toBeUndefined();
  });
});

describe('VolumeBinding PreBind', () => {
  it('pre-binds the chosen static PV and annotates dynamically provisioned claims with the node', async () => {
    const client = new MemoryClient();
    const sched = new Scheduler({ client, random: () => 0 });
    client.onPodChange = (p) => sched.onPodUpsert(p);
    for (const o of [
      {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: 'local' },
        provisioner: 'kubernetes.io/no-provisioner',
        volumeBindingMode: 'WaitForFirstConsumer',
      },
      {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name: 'csi' },
        provisioner: 'hostpath.csi.kemu.dev',
        volumeBindingMode: 'WaitForFirstConsumer',
      },
      {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'pv-b' },
        spec: {
          capacity: { storage: '5Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: 'local',
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['b'] }] },
              ],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'static', namespace: 'default', uid: 'u1' },
        spec: {
          storageClassName: 'local',
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'dyn', namespace: 'default', uid: 'u2' },
        spec: {
          storageClassName: 'csi',
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
        },
      },
    ]) {
      sched.onObject(o as never, 'Add');
    }
    sched.onNodeAdd(makeNode('a'));
    sched.onNodeAdd(makeNode('b'));
    const pod = makePod('p', {
      spec: {
        volumes: [
          { name: 's', persistentVolumeClaim: { claimName: 'static' } },
          { name: 'd', persistentVolumeClaim: { claimName: 'dyn' } },
        ],
      },
    });
    client.pods.set('default/p', pod);
    sched.onPodUpsert(pod);
    const [r] = await sched.drain();
    expect(r.node).toBe('b');
    const pv = client.objects.get('PersistentVolume//pv-b');
    expect(pv?.spec.claimRef).toMatchObject({ name: 'static', namespace: 'default', uid: 'u1' });
    const dyn = client.objects.get('PersistentVolumeClaim/default/dyn');
    expect(dyn?.metadata.annotations?.['volume.kubernetes.io/selected-node']).toBe('b');
  });
});

describe('profiles and extension points', () => {
  it('each pod is scheduled by the profile named in spec.schedulerName', async () => {
    const config = {
      profiles: [
        { schedulerName: 'default-scheduler' },
        {
          schedulerName: 'bin-packer',
          pluginConfig: [{ name: 'NodeResourcesFit', args: { scoringStrategy: { type: 'MostAllocated' } } }],
        },
      ],
    };
    const cluster = [
      makeNode('busy', { cpu: '4', memory: '8Gi' }),
      makeNode('idle', { cpu: '4', memory: '8Gi' }),
      makePod('x', { cpu: '2', memory: '4Gi', nodeName: 'busy' }),
    ];
    const r = await simulate(
      cluster,
      [
        makePod('spread', { cpu: '1', memory: '1Gi' }),
        makePod('packed', { cpu: '1', memory: '1Gi', spec: { schedulerName: 'bin-packer' } }),
        makePod('other', { spec: { schedulerName: 'someone-else' } }),
      ],
      { config },
    );
    const by = new Map(r.placements.map((p) => [p.pod, p]));
    expect(by.get('default/spread')?.node).toBe('idle');
    expect(by.get('default/packed')?.node).toBe('busy');
    expect(by.get('default/other')?.message).toBe(
      'no profile for schedulerName "someone-else" in the configuration',
    );
  });

  it('Reserve, Permit, PreBind, Bind and PostBind run in order; a PreBind failure unreserves and requeues', async () => {
    const calls: string[] = [];
    let failPreBind = true;
    const plugins = {
      Recorder: () => ({
        name: 'Recorder',
        reserve: (_s: unknown, pi: { key: string }, node: string) => {
          calls.push(`reserve ${pi.key} ${node}`);
          return null;
        },
        unreserve: (_s: unknown, pi: { key: string }) => {
          calls.push(`unreserve ${pi.key}`);
        },
        permit: () => {
          calls.push('permit');
          return { status: null };
        },
        preBind: async () => {
          calls.push('preBind');
          if (failPreBind) throw new Error('volume not ready');
          return null;
        },
        postBind: () => {
          calls.push('postBind');
        },
      }),
    };
    const config = {
      profiles: [
        {
          plugins: {
            reserve: { enabled: [{ name: 'Recorder' }] },
            permit: { enabled: [{ name: 'Recorder' }] },
            preBind: { enabled: [{ name: 'Recorder' }] },
            postBind: { enabled: [{ name: 'Recorder' }] },
          },
        },
      ],
    };
    const client = new MemoryClient();
    let clock = 0;
    const sched = new Scheduler({ client, config, plugins, now: () => clock });
    client.onPodChange = (p) => sched.onPodUpsert(p);
    sched.onNodeAdd(makeNode('n'));
    const pod = makePod('p');
    client.pods.set('default/p', pod);
    sched.onPodUpsert(pod);
    const [first] = await sched.drain();
    expect(first.reason).toBe('SchedulerError');
    expect(first.message).toBe('running PreBind plugin "Recorder": volume not ready');
    expect(calls).toEqual(['reserve default/p n', 'permit', 'preBind', 'unreserve default/p']);
    expect(sched.cache.get('n')!.pods).toHaveLength(0);
    failPreBind = false;
    calls.length = 0;
    clock += 1001;
    sched.queue.flushBackoffCompleted();
    const [second] = await sched.drain();
    expect(second.node).toBe('n');
    expect(calls).toEqual(['reserve default/p n', 'permit', 'preBind', 'postBind']);
    expect(client.pods.get('default/p')?.spec.nodeName).toBe('n');
  });
});

describe('binding cycles', () => {
  it('run in parallel with the next scheduling cycles', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const client = new MemoryClient();
    const plugins = {
      SlowBinder: () => ({
        name: 'SlowBinder',
        bind: async (_s: unknown, pi: { pod: Parameters<MemoryClient['bind']>[0] }, node: string) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await gate;
          await client.bind(pi.pod, node);
          inFlight--;
          return null;
        },
      }),
    };
    const config = {
      profiles: [{ plugins: { bind: { enabled: [{ name: 'SlowBinder' }], disabled: [{ name: '*' }] } } }],
    };
    const sched = new Scheduler({ client, config, plugins });
    client.onPodChange = (p) => sched.onPodUpsert(p);
    sched.onNodeAdd(makeNode('n'));
    for (const name of ['a', 'b', 'c']) {
      const p = makePod(name);
      client.pods.set(`default/${name}`, p);
      sched.onPodUpsert(p);
    }
    const results = [await sched.scheduleOne(), await sched.scheduleOne(), await sched.scheduleOne()];
    expect(results.map((r) => r?.node)).toEqual(['n', 'n', 'n']);
    // All three scheduling cycles finished while every binding was still waiting.
    expect(maxInFlight).toBe(3);
    expect(sched.cache.get('n')!.pods).toHaveLength(3); // assumed
    release();
    await sched.flushBindings();
    expect([...client.pods.values()].every((p) => p.spec.nodeName === 'n')).toBe(true);
    await sched.stop();
  });
});

describe('Reserve rejection', () => {
  it('reports the Reserve plugin message, not a node histogram, and releases the node', async () => {
    const { Status } = await import('./status.js');
    const plugins = {
      Quota: () => ({
        name: 'Quota',
        reserve: () => Status.unschedulable('namespace quota exhausted'),
        unreserve: () => {},
      }),
    };
    const config = { profiles: [{ plugins: { reserve: { enabled: [{ name: 'Quota' }] } } }] };
    const client = new MemoryClient();
    const sched = new Scheduler({ client, config, plugins });
    sched.onNodeAdd(makeNode('ok'));
    sched.onNodeAdd(makeNode('tainted', { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }));
    const p = makePod('p');
    client.pods.set('default/p', p);
    sched.onPodUpsert(p);
    const [r] = await sched.drain();
    expect(r).toMatchObject({
      node: null,
      reason: 'Unschedulable',
      message: 'namespace quota exhausted',
      unschedulablePlugins: ['Quota'],
    });
    expect(sched.cache.get('ok')!.pods).toHaveLength(0);
    expect(sched.queue.where('default/p')).toBe('backoff');
  });

  it('counts on each node only the pods the whole selector matches, not those sharing its first label', async () => {
    const owned = (n: string, name: string, nodeName?: string) => {
      const p = makePod(n, { nodeName, labels: { group: 'load', name }, spec: {} });
      return {
        ...p,
        metadata: {
          ...p.metadata,
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name, uid: name, controller: true }],
        },
      };
    };
    const cluster = [
      makeNode('a'),
      makeNode('b'),
      makeNode('c'),
      owned('x1', 'x', 'a'),
      owned('x2', 'x', 'a'),
      ...['y1', 'y2', 'y3', 'y4'].map((n) => owned(n, 'y', 'b')),
    ];
    const r = await simulate(cluster, [owned('x3', 'x')], { explain: true });
    const score = (node: string) => r.placements[0].scores!.find((s) => s.node === node)!.plugins.PodTopologySpread;
    // b holds four pods of the same group but none of x's: it scores as the empty node c does, above a.
    expect(score('b')).toBe(score('c'));
    expect(score('b')).toBeGreaterThan(score('a'));
  });
});

