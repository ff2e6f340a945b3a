// The kubelet's eviction manager (upstream pkg/kubelet/eviction): observes memory.available, nodefs and
// imagefs bytes and inodes, and pid.available from the Summary; decides which hard and soft thresholds
// are met (soft ones after their grace period, every one until its minimum reclaim is back); reports
// MemoryPressure/DiskPressure/PIDPressure for the pressure transition period; evicts pods over their
// ephemeral-storage limits first; reclaims node-level resources (unused images) under disk pressure; and
// otherwise evicts one pod per pass, ranked as upstream ranks them, with upstream's messages.
import { type Pod, parseQuantity, Quantity } from '@kemu/core';
import {
  type EvictionSignal,
  type EvictionThreshold,
  evictionThresholds,
  type KubeletConfiguration,
  parseGoDuration,
  thresholdAmount,
} from './kubelet-config.js';
import type { PodStats, Summary } from './stats-summary.js';

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The node condition each signal drives (upstream signalToNodeCondition). */
export const SIGNAL_TO_CONDITION: Record<EvictionSignal, PressureCondition> = {
  'memory.available': 'MemoryPressure',
  'allocatableMemory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'containerfs.available': 'DiskPressure',
  'containerfs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** The resource each signal reclaims (upstream signalToResource). */
export const SIGNAL_TO_RESOURCE: Record<EvictionSignal, string> = {
  'memory.available': 'memory',
  'allocatableMemory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'containerfs.available': 'ephemeral-storage',
  'containerfs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

export const EVICTION_REASON = 'Evicted';
/** Upstream's message fragments (pkg/kubelet/eviction/helpers.go). */
export const MESSAGES = {
  nodeLow: (resource: string) => `The node was low on resource: ${resource}. `,
  thresholdMet: (quantity: string, available: string) => `Threshold quantity: ${quantity}, available: ${available}. `,
  container: (name: string, usage: string, request: string, resource: string) =>
    `Container ${name} was using ${usage}, request is ${request}, has larger consumption of ${resource}. `,
  podEphemeralStorage: (limit: string) => `Pod ephemeral local storage usage exceeds the total limit of containers ${limit}. `,
  containerEphemeralStorage: (name: string, limit: string) => `Container ${name} exceeded its local ephemeral storage limit "${limit}". `,
  emptyDir: (volume: string, limit: string) => `Usage of EmptyDir volume "${volume}" exceeds the limit "${limit}". `,
};

export interface Observation {
  available: number;
  capacity: number;
}

/** The status an eviction gives a pod, applied by the kubelet's pod worker before it kills the pod. */
export interface Eviction {
  pod: Pod;
  message: string;
  /** Grace period for killing the containers. */
  gracePeriodSeconds: number;
  /** The DisruptionTarget condition (absent for local-storage evictions, as upstream). */
  condition?: { type: 'DisruptionTarget'; status: 'True'; reason: 'TerminationByKubelet'; message: string };
}

export interface EvictionDeps {
  config: KubeletConfiguration;
  /** Node allocatable (allocatableMemory.available). */
  allocatable: Record<string, string>;
  summary: () => Promise<Summary>;
  /** Pods the kubelet is running (not terminal, not being deleted). */
  activePods: () => Pod[];
  evict: (e: Eviction) => Promise<void>;
  /** Node-level event (EvictionThresholdMet). */
  nodeEvent?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** Frees node-level disk (unused images); resolves to bytes freed. */
  reclaimImages?: () => Promise<number>;
  now?: () => number;
}

const MEMORY_SIGNALS: EvictionSignal[] = ['memory.available', 'allocatableMemory.available'];

function bin(n: number): string {
  return Quantity.fromValue(Math.round(n), 'BinarySI').toString();
}

function q(resource: string, n: number): string {
  return resource === 'memory' || resource === 'ephemeral-storage' ? bin(n) : Quantity.fromValue(Math.round(n)).toString();
}

function isCritical(pod: Pod): boolean {
  // Static and mirror pods and system-critical priorities are never evicted (upstream IsCriticalPod).
  const ann = pod.metadata.annotations ?? {};
  return ann['kubernetes.io/config.mirror'] !== undefined || (ann['kubernetes.io/config.source'] ?? 'api') !== 'api' || (pod.spec.priority ?? 0) >= 2_000_000_000;
}

function request(pod: Pod, resource: string): number {
  let total = 0;
  for (const c of pod.spec.containers) {
    const r = c.resources?.requests?.[resource];
    if (r !== undefined) total += parseQuantity(r).value();
  }
  return total;
}

export class EvictionManager {
  private readonly thresholds: EvictionThreshold[];
  private readonly transitionMs: number;
  private readonly now: () => number;
  private met: EvictionThreshold[] = [];
  private firstObserved = new Map<EvictionThreshold, number>();
  private conditionLastObserved = new Map<PressureCondition, number>();
  private lastObservations = new Map<EvictionSignal, Observation>();

  constructor(private readonly d: EvictionDeps) {
    this.thresholds = evictionThresholds(d.config);
    this.transitionMs = parseGoDuration(d.config.evictionPressureTransitionPeriod, 'evictionPressureTransitionPeriod');
    this.now = d.now ?? Date.now;
  }

  /** The conditions reported now (each held for the pressure transition period after it was last seen). */
  conditions(): Record<PressureCondition, boolean> {
    const now = this.now();
    const held = (c: PressureCondition) => {
      const at = this.conditionLastObserved.get(c);
      return at !== undefined && now - at < this.transitionMs;
    };
    return { MemoryPressure: held('MemoryPressure'), DiskPressure: held('DiskPressure'), PIDPressure: held('PIDPressure') };
  }

  /** The signals as last observed, for tooling and tests. */
  observations(): Map<EvictionSignal, Observation> {
    return this.lastObservations;
  }

  /** Observations of every signal from a Summary (upstream makeSignalObservations). */
  observe(s: Summary): Map<EvictionSignal, Observation> {
    const o = new Map<EvictionSignal, Observation>();
    const mem = s.node.memory;
    if (mem?.availableBytes !== undefined && mem.workingSetBytes !== undefined) {
      o.set('memory.available', { available: mem.availableBytes, capacity: mem.availableBytes + mem.workingSetBytes });
    }
    const alloc = this.d.allocatable.memory ? parseQuantity(this.d.allocatable.memory).value() : undefined;
    if (alloc !== undefined) {
      const used = s.pods.reduce((a, p) => a + (p.memory?.workingSetBytes ?? 0), 0);
      o.set('allocatableMemory.available', { available: Math.max(0, alloc - used), capacity: alloc });
    }
    const fsObs = (fs: Summary['node']['fs'], bytes: EvictionSignal, inodes: EvictionSignal) => {
      if (fs?.availableBytes !== undefined && fs.capacityBytes !== undefined) o.set(bytes, { available: fs.availableBytes, capacity: fs.capacityBytes });
      if (fs?.inodesFree !== undefined && fs.inodes !== undefined) o.set(inodes, { available: fs.inodesFree, capacity: fs.inodes });
    };
    fsObs(s.node.fs, 'nodefs.available', 'nodefs.inodesFree');
    fsObs(s.node.runtime?.imageFs, 'imagefs.available', 'imagefs.inodesFree');
    fsObs(s.node.runtime?.containerFs ?? s.node.fs, 'containerfs.available', 'containerfs.inodesFree');
    const rl = s.node.rlimit;
    if (rl?.maxpid !== undefined && rl.curproc !== undefined) o.set('pid.available', { available: rl.maxpid - rl.curproc, capacity: rl.maxpid });
    return o;
  }

  private isMet(t: EvictionThreshold, o: Map<EvictionSignal, Observation>, withMinReclaim: boolean): boolean {
    const obs = o.get(t.signal);
    if (!obs) return false;
    let amount = thresholdAmount(t, obs.capacity);
    if (withMinReclaim && t.minReclaim) amount += thresholdAmount(t.minReclaim, obs.capacity);
    return obs.available < amount;
  }

  /** One pass (upstream synchronize): returns the evictions made. */
  async synchronize(): Promise<Eviction[]> {
    const summary = await this.d.summary();
    const obs = this.observe(summary);
    this.lastObservations = obs;
    const now = this.now();
    // Met now, plus those met before that have not yet recovered past their minimum reclaim.
    let met = this.thresholds.filter((t) => this.isMet(t, obs, false));
    for (const t of this.met) if (!met.includes(t) && this.isMet(t, obs, true)) met.push(t);
    const first = new Map<EvictionThreshold, number>();
    for (const t of met) first.set(t, this.firstObserved.get(t) ?? now);
    this.firstObserved = first;
    for (const t of met) this.conditionLastObserved.set(SIGNAL_TO_CONDITION[t.signal], now);
    met = met.filter((t) => now - (first.get(t) ?? now) >= t.gracePeriodMs);
    this.met = met;

    const pods = this.d.activePods().filter((p) => !isCritical(p));
    const statsOf = new Map<string, PodStats>();
    for (const p of summary.pods) statsOf.set(p.podRef.uid, p);

    const local = this.localStorageEviction(pods, statsOf);
    if (local.length) {
      for (const e of local) await this.d.evict(e);
      return local;
    }
    if (!met.length) return [];
    // Memory first, then the rest in configuration order (upstream byEvictionPriority).
    met.sort((a, b) => Number(MEMORY_SIGNALS.includes(b.signal)) - Number(MEMORY_SIGNALS.includes(a.signal)));
    const t = met[0];
    const resource = SIGNAL_TO_RESOURCE[t.signal];
    this.d.nodeEvent?.('Warning', 'EvictionThresholdMet', `Attempting to reclaim ${resource}`);
    if (SIGNAL_TO_CONDITION[t.signal] === 'DiskPressure' && this.d.reclaimImages) {
      await this.d.reclaimImages();
      const after = this.observe(await this.d.summary());
      if (!this.isMet(t, after, true)) return [];
    }
    const ranked = this.rank(t.signal, pods, statsOf);
    for (const pod of ranked) {
      const grace = t.hard ? 0 : Math.min(this.d.config.evictionMaxPodGracePeriod, pod.spec.terminationGracePeriodSeconds ?? 30);
      const message = this.message(resource, t, obs, pod, statsOf.get(pod.metadata.uid ?? ''));
      const e: Eviction = {
        pod,
        message,
        gracePeriodSeconds: grace,
        condition: { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message },
      };
      await this.d.evict(e);
      return [e];
    }
    return [];
  }

  /** Usage of a pod for a resource: memory working set, ephemeral storage, or processes. */
  private usage(resource: string, s: PodStats | undefined): number {
    if (!s) return 0;
    if (resource === 'memory') return s.memory?.workingSetBytes ?? 0;
    if (resource === 'ephemeral-storage') return s['ephemeral-storage']?.usedBytes ?? 0;
    if (resource === 'inodes') return s['ephemeral-storage']?.inodesUsed ?? 0;
    return s.process_stats?.process_count ?? 0;
  }

  /** Upstream rankMemoryPressure / rankDiskPressureFunc / rankPIDPressure. */
  rank(signal: EvictionSignal, pods: Pod[], stats: Map<string, PodStats>): Pod[] {
    const resource = SIGNAL_TO_RESOURCE[signal];
    const use = (p: Pod) => this.usage(resource, stats.get(p.metadata.uid ?? ''));
    const req = (p: Pod) => (resource === 'memory' || resource === 'ephemeral-storage' ? request(p, resource) : 0);
    const prio = (p: Pod) => p.spec.priority ?? 0;
    return [...pods].sort((a, b) => {
      if (resource !== 'pids') {
        // Pods using more than they requested go first.
        const ea = Number(use(a) > req(a));
        const eb = Number(use(b) > req(b));
        if (ea !== eb) return eb - ea;
      }
      if (prio(a) !== prio(b)) return prio(a) - prio(b);
      if (resource === 'pids') return use(b) - use(a);
      return use(b) - req(b) - (use(a) - req(a));
    });
  }

  private message(resource: string, t: EvictionThreshold, obs: Map<EvictionSignal, Observation>, pod: Pod, s: PodStats | undefined): string {
    let m = MESSAGES.nodeLow(resource);
    const o = obs.get(t.signal);
    if (o) m += MESSAGES.thresholdMet(t.quantity ? t.quantity.toString() : q(resource, thresholdAmount(t, o.capacity)), q(resource, o.available));
    for (const c of pod.spec.containers) {
      const cs = s?.containers.find((x) => x.name === c.name);
      if (!cs) continue;
      let usage: number | undefined;
      if (resource === 'memory') usage = cs.memory?.workingSetBytes;
      else if (resource === 'ephemeral-storage') usage = (cs.rootfs?.usedBytes ?? 0) + (cs.logs?.usedBytes ?? 0);
      if (usage === undefined) continue;
      const r = c.resources?.requests?.[resource];
      const reqBytes = r === undefined ? 0 : parseQuantity(r).value();
      if (usage > reqBytes) m += MESSAGES.container(c.name, q(resource, usage), r === undefined ? '0' : parseQuantity(r).toString(), resource);
    }
    return m;
  }

  /** Pods over an emptyDir sizeLimit, their pod-level or a container's ephemeral-storage limit (upstream localStorageEviction). */
  private localStorageEviction(pods: Pod[], stats: Map<string, PodStats>): Eviction[] {
    const out: Eviction[] = [];
    for (const pod of pods) {
      const s = stats.get(pod.metadata.uid ?? '');
      if (!s) continue;
      const evict = (message: string) => out.push({ pod, message, gracePeriodSeconds: 0 });
      const overVolume = (pod.spec.volumes ?? []).find((v) => {
        const limit = v.emptyDir?.sizeLimit;
        const used = s.volume?.find((x) => x.name === v.name)?.usedBytes;
        return limit !== undefined && used !== undefined && used > parseQuantity(limit).value();
      });
      if (overVolume) {
        evict(MESSAGES.emptyDir(overVolume.name, parseQuantity(overVolume.emptyDir!.sizeLimit!).toString()));
        continue;
      }
      // The pod's limit is the sum of its containers' limits (upstream PodLimits).
      let total = Quantity.fromValue(0, 'BinarySI');
      for (const c of pod.spec.containers) {
        const l = c.resources?.limits?.['ephemeral-storage'];
        if (l !== undefined) total = total.add(l);
      }
      if (!total.isZero() && (s['ephemeral-storage']?.usedBytes ?? 0) > total.value()) {
        evict(MESSAGES.podEphemeralStorage(total.toString()));
        continue;
      }
      for (const c of pod.spec.containers) {
        const limit = c.resources?.limits?.['ephemeral-storage'];
        const cs = s.containers.find((x) => x.name === c.name);
        if (limit === undefined || !cs) continue;
        if ((cs.rootfs?.usedBytes ?? 0) + (cs.logs?.usedBytes ?? 0) > parseQuantity(limit).value()) {
          evict(MESSAGES.containerEphemeralStorage(c.name, parseQuantity(limit).toString()));
          break;
        }
      }
    }
    return out;
  }
}
