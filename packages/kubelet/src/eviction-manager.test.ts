import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Node, Pod } from '@kemu/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type Eviction, EvictionManager, MESSAGES } from './eviction-manager.js';
import { decodeKubeletConfiguration } from './kubelet-config.js';
import { CONDITION_TAINTS, NodeLifecycleController } from './node-lifecycle-controller.js';
import type { PodStats, Summary } from './stats-summary.js';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const MiB = 2 ** 20;
const HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

function podWith(name: string, resources: Record<string, Record<string, string>> | undefined, usageMiB: number, priority?: number): Pod {
  return testPod(name, { containers: [{ name: 'app', image: 'busybox', ...(resources ? { resources } : {}) }], ...(priority !== undefined ? { priority } : {}) }, {
    'kemu.io/sim-memory-mib': String(usageMiB),
  });
}

const guaranteed = (n: string, mib: number) => podWith(n, { requests: { cpu: '100m', memory: '300Mi' }, limits: { cpu: '100m', memory: '300Mi' } }, mib);
const burstable = (n: string, mib: number) => podWith(n, { requests: { memory: '100Mi' } }, mib);
const besteffort = (n: string, mib: number) => podWith(n, undefined, mib);

describe('eviction ranking and messages (upstream rankMemoryPressure, evictionMessage)', () => {
  const now = '2026-01-01T00:00:00Z';
  const stats = (p: Pod, mib: number): PodStats => ({
    podRef: { name: p.metadata.name!, namespace: 'default', uid: p.metadata.uid! },
    startTime: now,
    containers: [{ name: 'app', startTime: now, memory: { time: now, workingSetBytes: mib * MiB } }],
    memory: { time: now, workingSetBytes: mib * MiB },
  });
  const pods = [guaranteed('g', 250), burstable('b', 300), besteffort('e', 100), burstable('b-high', 300)].map((p, i) => ({ ...p, metadata: { ...p.metadata, uid: `u${i}` } }));
  pods[3].spec.priority = 1000;
  const usage = [250, 300, 100, 300];

  it('ranks pods over their requests first, then by priority, then by usage above requests', () => {
    const { config } = decodeKubeletConfiguration(HEAD);
    const m = new EvictionManager({ config, allocatable: {}, summary: async () => ({}) as Summary, activePods: () => [], evict: async () => {} });
    const s = new Map(pods.map((p, i) => [p.metadata.uid!, stats(p, usage[i])]));
    // b uses 200Mi over its request, e 100Mi over nothing: both exceed requests; b-high too but ranks after by priority.
    expect(m.rank('memory.available', pods, s).map((p) => p.metadata.name)).toEqual(['b', 'e', 'b-high', 'g']);
  });

  it('writes the upstream message for a memory eviction', async () => {
    const { config } = decodeKubeletConfiguration(HEAD + 'evictionHard: {memory.available: 500Mi}\n');
    const evicted: Eviction[] = [];
    const summary: Summary = {
      node: { nodeName: 'n', startTime: now, memory: { time: now, availableBytes: 400 * MiB, workingSetBytes: 624 * MiB } },
      pods: [stats(pods[2], 100)],
    };
    const m = new EvictionManager({ config, allocatable: {}, summary: async () => summary, activePods: () => [pods[2]], evict: async (e) => void evicted.push(e) });
    await m.synchronize();
    expect(evicted.map((e) => e.message)).toEqual([
      'The node was low on resource: memory. Threshold quantity: 500Mi, available: 400Mi. Container app was using 100Mi, request is 0, has larger consumption of memory. ',
    ]);
    expect(evicted[0].gracePeriodSeconds).toBe(0);
    expect(evicted[0].condition).toMatchObject({ type: 'DisruptionTarget', reason: 'TerminationByKubelet' });
    expect(m.conditions()).toEqual({ MemoryPressure: true, DiskPressure: false, PIDPressure: false });
  });

  it('waits out a soft threshold grace period, and holds a hard one until the minimum reclaim is back', async () => {
    let t = 0;
    let available = 400 * MiB;
    const { config } = decodeKubeletConfiguration(
      HEAD + 'evictionHard: {memory.available: 100Mi}\nevictionSoft: {memory.available: 500Mi}\nevictionSoftGracePeriod: {memory.available: 30s}\nevictionPressureTransitionPeriod: 10s\n',
    );
    const evicted: Eviction[] = [];
    const m = new EvictionManager({
      config,
      allocatable: {},
      summary: async () => ({ node: { nodeName: 'n', startTime: now, memory: { time: now, availableBytes: available, workingSetBytes: 1024 * MiB - available } }, pods: [stats(pods[2], 100)] }),
      activePods: () => [pods[2]],
      evict: async (e) => void evicted.push(e),
      now: () => t,
    });
    await m.synchronize();
    expect(evicted).toHaveLength(0); // soft threshold crossed, grace period not over
    expect(m.conditions().MemoryPressure).toBe(true); // the condition does not wait for the grace period
    t = 31_000;
    await m.synchronize();
    expect(evicted).toHaveLength(1);
    available = 600 * MiB;
    t = 32_000;
    await m.synchronize();
    expect(evicted).toHaveLength(1);
    expect(m.conditions().MemoryPressure).toBe(true); // held for the transition period
    t = 42_000;
    expect(m.conditions().MemoryPressure).toBe(false);
  });

  it('under disk pressure frees unused images first, and evicts no pod when that is enough', async () => {
    const { config } = decodeKubeletConfiguration(HEAD + 'evictionHard: {imagefs.available: 15%}\n');
    const GiB = 2 ** 30;
    let used = 90 * GiB;
    const fsStats = () => ({ time: now, capacityBytes: 100 * GiB, availableBytes: 100 * GiB - used, usedBytes: used });
    const evicted: Eviction[] = [];
    let reclaims = 0;
    const m = new EvictionManager({
      config,
      allocatable: {},
      summary: async () => ({ node: { nodeName: 'n', startTime: now, fs: fsStats(), runtime: { imageFs: fsStats() } }, pods: [stats(pods[2], 1)] }),
      activePods: () => [pods[2]],
      evict: async (e) => void evicted.push(e),
      reclaimImages: async () => {
        reclaims++;
        used = 50 * GiB;
        return 40 * GiB;
      },
    });
    await m.synchronize();
    expect(reclaims).toBe(1);
    expect(evicted).toEqual([]);
    expect(m.conditions().DiskPressure).toBe(true);
  });

  it('reports PIDPressure from pid.available and evicts the pod with the most processes (lowest priority first)', async () => {
    const { config } = decodeKubeletConfiguration(HEAD + 'evictionHard: {pid.available: 10%}\n');
    const evicted: Eviction[] = [];
    const withProcs = (p: Pod, n: number): PodStats => ({ ...stats(p, 1), process_stats: { process_count: n } });
    const [few, many] = [pods[1], pods[2]];
    const m = new EvictionManager({
      config,
      allocatable: {},
      summary: async () => ({ node: { nodeName: 'n', startTime: now, rlimit: { time: now, maxpid: 1000, curproc: 950 } }, pods: [withProcs(few, 10), withProcs(many, 900)] }),
      activePods: () => [few, many],
      evict: async (e) => void evicted.push(e),
    });
    await m.synchronize();
    expect(m.conditions()).toEqual({ MemoryPressure: false, DiskPressure: false, PIDPressure: true });
    expect(evicted.map((e) => e.pod.metadata.name)).toEqual([many.metadata.name]);
    expect(evicted[0].message).toBe('The node was low on resource: pids. Threshold quantity: 100, available: 50. ');
  });

  it('rejects a soft threshold without a grace period', () => {
    expect(() => decodeKubeletConfiguration(HEAD + 'evictionSoft: {pid.available: 10%}\n')).toThrow(/must have a grace period/);
  });
});

describe('the kubelet under pressure', () => {
  const running: TestKubelet[] = [];
  const dirs: string[] = [];
  const controllers: NodeLifecycleController[] = [];
  afterEach(async () => {
    for (const c of controllers.splice(0)) await c.stop();
    for (const k of running.splice(0)) await k.stop();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  it('evicts BestEffort, then Burstable, then Guaranteed under memory pressure; sets and clears MemoryPressure and its taint', async () => {
    // 1Gi node, pods using 850Mi: available 174Mi against a 900Mi threshold. Each eviction frees one pod's use.
    // The threshold is soft with a 2 s grace period, so the ranking sees all three pods: a hard one could fire
    // while the third pod is still starting (on a loaded machine), and rightly evict among the two running.
    const { config } = decodeKubeletConfiguration(HEAD + 'evictionSoft: {memory.available: 900Mi}\nevictionSoftGracePeriod: {memory.available: 2s}\nevictionPressureTransitionPeriod: 1s\n');
    const k = await startTestKubelet({ config, capacity: { memory: '1Gi' }, evictionMonitoringPeriodMs: 100 });
    running.push(k);
    const nlc = new NodeLifecycleController({ store: k.store, monitorPeriodMs: 100 });
    nlc.start();
    controllers.push(nlc);
    const order: string[] = [];
    const watch = setInterval(async () => {
      for (const name of ['g', 'b', 'e']) {
        try {
          const p = await k.store.get('Pod', 'default', name);
          if (p.status?.phase === 'Failed' && !order.includes(name)) order.push(name);
        } catch {
          // not created yet
        }
      }
    }, 20);
    try {
      // Created while the node has no pressure; usage starts when each pod runs.
      await k.store.create(guaranteed('g', 250));
      await k.store.create(burstable('b', 300));
      await k.store.create(besteffort('e', 300));
      const pressured = await until('MemoryPressure and its taint', async () => {
        const n = (await k.store.get('Node', '', 'node-a')) as Node;
        const c = n.status?.conditions?.find((x) => x.type === 'MemoryPressure');
        return c?.status === 'True' && n.spec?.taints?.some((t) => t.key === CONDITION_TAINTS.MemoryPressure && t.effect === 'NoSchedule') ? c : undefined;
      });
      expect(pressured.reason).toBe('KubeletHasInsufficientMemory');
      await until('all three evicted', () => order.length === 3, 15_000);
      expect(order).toEqual(['e', 'b', 'g']);
      const e = await k.store.get('Pod', 'default', 'e');
      expect(e.status?.reason).toBe('Evicted');
      expect(e.status?.message).toMatch(/^The node was low on resource: memory\. Threshold quantity: 900Mi, available: \d+(Mi|Ki)?\. Container app was using 300Mi, request is 0, has larger consumption of memory\. $/);
      expect(e.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).toMatchObject({ status: 'True', reason: 'TerminationByKubelet' });
      const b = await k.store.get('Pod', 'default', 'b');
      expect(b.status?.message).toContain('Container app was using 300Mi, request is 100Mi, has larger consumption of memory.');
      // Nothing left using memory: the condition and the taint clear after the transition period.
      await until(
        'MemoryPressure cleared and untainted',
        async () => {
          const n = (await k.store.get('Node', '', 'node-a')) as Node;
          return n.status?.conditions?.find((x) => x.type === 'MemoryPressure')?.status === 'False' && !n.spec?.taints?.some((t) => t.key === CONDITION_TAINTS.MemoryPressure);
        },
        10_000,
      );
    } finally {
      clearInterval(watch);
    }
  }, 30_000);

  it('evicts a pod whose emptyDir use goes over its ephemeral-storage limit', async () => {
    const { config } = decodeKubeletConfiguration(HEAD);
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-kubelet-root-'));
    dirs.push(root);
    const k = await startTestKubelet({ config, rootDir: root, evictionMonitoringPeriodMs: 100 });
    running.push(k);
    const pod = await k.store.create(
      testPod('writer', {
        volumes: [{ name: 'scratch', emptyDir: {} }],
        containers: [{ name: 'app', image: 'busybox', resources: { limits: { 'ephemeral-storage': '1Mi' } }, volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }],
      }),
    );
    await until('running', async () => (await k.store.get('Pod', 'default', 'writer')).status?.phase === 'Running');
    const dir = path.join(root, 'pods', pod.metadata.uid!, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    // Under the limit: nothing happens.
    fs.writeFileSync(path.join(dir, 'small'), Buffer.alloc(256 * 1024, 1));
    await new Promise((r) => setTimeout(r, 400));
    expect((await k.store.get('Pod', 'default', 'writer')).status?.phase).toBe('Running');
    fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(2 * MiB, 1));
    const evicted = await until('evicted', async () => {
      const p = await k.store.get('Pod', 'default', 'writer');
      return p.status?.phase === 'Failed' ? p : undefined;
    });
    expect(evicted.status?.reason).toBe('Evicted');
    expect(evicted.status?.message).toBe(MESSAGES.podEphemeralStorage('1Mi'));
    expect(evicted.status?.message).toBe('Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. ');
  });
});
