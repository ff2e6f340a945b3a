// What-if scheduling: load a cluster from objects, schedule new pods in order, report each placement
// (node or null, the reason in the scheduler's wording, optional per-plugin detail, preemptions).
import { MemoryClient, type RecordedEvent } from './client-memory.js';
import type { SchedulerConfig } from './config.js';
import type { PluginFactory, ScoreBreakdown } from './framework.js';
import { type FilterRecord, type ScheduleResult, Scheduler } from './scheduler.js';
import type { KubeObject, Node, Pod } from './types.js';

export interface SimulateOptions {
  config?: SchedulerConfig | string | Record<string, unknown>;
  /** Include per-plugin scores and filter results for every node. */
  explain?: boolean;
  /** Seed for tie-breaking and preemption sampling (same seed, same placements). */
  seed?: number;
  plugins?: Record<string, PluginFactory>;
}

export interface Placement {
  pod: string;
  node: string | null;
  reason: ScheduleResult['reason'] | 'Preempted';
  /** Set when a later pod of the same run evicted this one. */
  preemptedBy?: string;
  message: string;
  nominatedNodeName?: string;
  /** Pods this pod's preemption deleted. */
  preempted?: string[];
  attempts: number;
  scores?: ScoreBreakdown[];
  filters?: Record<string, FilterRecord>;
}

/** The cluster or pod manifests cannot be simulated (names the object and the problem). */
export class SimulationInputError extends Error {
  override name = 'SimulationInputError';
}

export interface SimulationResult {
  placements: Placement[];
  events: RecordedEvent[];
}

/** mulberry32: small, fast, good enough for tie-breaking. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function keyOf(pod: Pod): string {
  return `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;
}

export async function simulate(
  cluster: KubeObject[],
  pods: Pod[],
  opts: SimulateOptions = {},
): Promise<SimulationResult> {
  let clock = Date.parse('2026-01-01T00:00:00Z');
  const client = new MemoryClient();
  const sched = new Scheduler({
    config: opts.config,
    client,
    explain: opts.explain,
    plugins: opts.plugins,
    now: () => clock,
    random: seededRandom(opts.seed ?? 1),
  });
  client.onPodChange = (p) => sched.onPodUpsert(p);
  client.onPodDeleted = (p) => sched.onPodDelete(p);
  client.onObjectChange = (o) => sched.onObject(o, 'Update');

  let seq = 0;
  const normalise = (p: Pod): Pod => {
    seq++;
    const meta = { ...p.metadata, namespace: p.metadata.namespace ?? 'default' };
    meta.uid ??= `sim-${seq}`;
    meta.creationTimestamp ??= new Date(clock + seq).toISOString();
    return { ...p, metadata: meta, spec: { ...p.spec, containers: p.spec?.containers ?? [] } };
  };
  const pending: Pod[] = [];
  for (const o of cluster) if (o.kind !== 'Node' && o.kind !== 'Pod') sched.onObject(o, 'Add');
  for (const o of cluster) {
    if (o.kind !== 'Node') continue;
    try {
      sched.onNodeAdd(o as Node);
    } catch (err) {
      throw new SimulationInputError(`Node "${o.metadata?.name}": ${(err as Error).message}`);
    }
  }
  for (const o of cluster) {
    if (o.kind !== 'Pod') continue;
    const p = normalise(o as Pod);
    client.pods.set(keyOf(p), p);
    if (p.spec.nodeName) {
      sched.onPodUpsert(p);
      const bad = sched.invalidPods.get(keyOf(p));
      if (bad) throw new SimulationInputError(`Pod "${keyOf(p)}": ${bad}`);
    } else pending.push(p);
  }

  const placements = new Map<string, Placement>();
  const record = (r: ScheduleResult) => {
    const prev = placements.get(r.pod);
    const preempted = [...(prev?.preempted ?? []), ...(r.preempted ?? [])];
    const pl: Placement = {
      pod: r.pod,
      node: r.node,
      reason: r.reason,
      message: r.reason === 'Scheduled' ? `Successfully assigned ${r.pod} to ${r.node}` : r.message,
      attempts: (prev?.attempts ?? 0) + 1,
    };
    const nominated = r.nominatedNodeName ?? prev?.nominatedNodeName;
    if (nominated) pl.nominatedNodeName = nominated;
    if (preempted.length > 0) pl.preempted = preempted;
    if (r.scores) pl.scores = r.scores;
    if (r.filters) pl.filters = r.filters;
    placements.set(r.pod, pl);
    // Pods placed earlier in this run and then evicted say so.
    for (const v of r.preempted ?? []) {
      const vp = placements.get(v);
      if (!vp) continue;
      vp.preemptedBy = r.pod;
      vp.message = `Preempted by pod ${r.pod} on node ${vp.node}`;
      vp.node = null;
      vp.reason = 'Preempted';
    }
  };

  const maxBackoff = sched.config.podMaxBackoffSeconds * 1000;
  for (const input of [...pending, ...pods.map(normalise)]) {
    const pod = input;
    client.pods.set(keyOf(pod), pod);
    sched.onPodUpsert(pod);
    if (!sched.responsibleFor(pod)) {
      placements.set(keyOf(pod), {
        pod: keyOf(pod),
        node: null,
        reason: 'SchedulerError',
        message: `no profile for schedulerName "${pod.spec.schedulerName}" in the configuration`,
        attempts: 0,
      });
      continue;
    }
    const invalid = sched.invalidPods.get(keyOf(pod));
    if (invalid) {
      placements.set(keyOf(pod), {
        pod: keyOf(pod),
        node: null,
        reason: 'SchedulerError',
        message: invalid,
        attempts: 0,
      });
      continue;
    }
    const gated = sched.queue.gatedMessage(pod);
    if (gated) {
      placements.set(keyOf(pod), {
        pod: keyOf(pod),
        node: null,
        reason: gated.plugin === 'SchedulingGates' ? 'SchedulingGated' : 'Unschedulable',
        message: gated.message,
        attempts: 0,
      });
    }
    // Retry while something moved (preemption frees room, then the preemptor's next attempt lands).
    for (let round = 0; round < 20; round++) {
      for (const r of await sched.drain()) record(r);
      const st = sched.queue.stats();
      if (st.backoff === 0) break;
      clock += maxBackoff + 1000;
      sched.queue.flushBackoffCompleted();
    }
  }
  await sched.flushBindings();
  return { placements: [...placements.values()], events: client.events };
}
