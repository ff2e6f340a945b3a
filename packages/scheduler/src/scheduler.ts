// The scheduler: one scheduling cycle at a time (filter, score, select, assume, reserve, permit), each
// followed by a binding cycle that runs concurrently with the next scheduling cycles.
import { DEFAULT_SLICE_MS, type Store, TimeSlice } from '@kemu/core';
import { SchedulerCache } from './cache.js';
import { ensureSchedulingKinds } from './kinds.js';
import { connectStore, StoreClient } from './client-store.js';
import { ClusterState } from './cluster-state.js';
import { numFeasibleNodesToFind, parseConfig, type SchedulerConfig } from './config.js';
import {
  type ClusterEvent,
  CycleState,
  Framework,
  type PluginFactory,
  type QueuedPodInfo,
  type SchedulerClient,
  type ScoreBreakdown,
  WaitingPod,
} from './framework.js';
import type { NodeInfo } from './node-info.js';
import type { PodInfo } from './pod-info.js';
import { NodeStatusMap, tallyStatuses } from './node-statuses.js';
import { nodesAvailableMessage } from './plugins/default-preemption.js';
import { DEFAULT_MULTI_POINT, inTreeRegistry } from './plugins/index.js';
import { SchedulingQueue } from './queue.js';
import { globalRegistry } from './registry.js';
import { Code, type MaybeStatus, Status } from './status.js';
import type { KubeObject, Node, Pod } from './types.js';

export const NO_NODES_AVAILABLE = 'no nodes available to schedule pods';
/** Annotation that turns on the debug record (every node's filter result and scores) for one pod. */
export const EXPLAIN_ANNOTATION = 'scheduler.kemu.dev/explain';
/** A backlog, for the scheduling loop's time slice: more pods than this in activeQ. */
const BACKLOG_PODS = 100;
/** The loop's slice while there is a backlog (ms before it lets the event loop turn). */
const BACKLOG_SLICE_MS = 50;

export interface FilterRecord {
  plugin: string;
  code: string;
  reasons: string[];
}

/** What happened to one pod in one scheduling attempt. */
export interface ScheduleResult {
  pod: string;
  node: string | null;
  /** Scheduled, Unschedulable (with or without a nomination), SchedulerError, or SchedulingGated. */
  reason: 'Scheduled' | 'Unschedulable' | 'SchedulerError' | 'SchedulingGated';
  message: string;
  nominatedNodeName?: string;
  /** Pods deleted by preemption for this pod (`namespace/name`). */
  preempted?: string[];
  evaluatedNodes: number;
  feasibleNodes: number;
  /** Per-node weighted plugin scores (debug/explain mode). */
  scores?: ScoreBreakdown[];
  /** Per-node filter rejections (debug/explain mode). */
  filters?: Record<string, FilterRecord>;
  /** Plugins that rejected the pod; used to decide which cluster events retry it. */
  unschedulablePlugins?: string[];
}

export interface SchedulerOptions {
  /** A parsed configuration, a YAML string, or a plain object; defaults to the v1 defaults. */
  config?: SchedulerConfig | string | Record<string, unknown>;
  /** A @kemu/core store: the scheduler lists/watches it and binds through it. */
  store?: Store;
  /** Where side effects go; defaults to a client over `store`. */
  client?: SchedulerClient;
  /** Out-of-tree plugins, in addition to those registered with registerPlugin(). */
  plugins?: Record<string, PluginFactory>;
  /** Record per-plugin filter results and scores for every pod. */
  explain?: boolean | ((pod: Pod) => boolean);
  now?: () => number;
  /** Tie-breaking and preemption sampling; inject a seeded one for reproducible runs. */
  random?: () => number;
}

function isConfig(c: unknown): c is SchedulerConfig {
  return (
    typeof c === 'object' &&
    c !== null &&
    Array.isArray((c as SchedulerConfig).profiles) &&
    'podMaxBackoffSeconds' in c &&
    typeof (c as SchedulerConfig).profiles[0]?.plugins === 'object'
  );
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
const conditionStatuses = (n: Node) =>
  Object.fromEntries((n.status?.conditions ?? []).map((c) => [c.type, c.status]));

/**
 * Whether an update touched what scheduling reads, as kube-scheduler decides before retrying pods:
 * spec.unschedulable, allocatable, labels, taints, condition statuses (not their timestamps), annotations.
 */
export function nodeSchedulingPropertiesChanged(old: Node, cur: Node): boolean {
  return (
    (old.spec?.unschedulable ?? false) !== (cur.spec?.unschedulable ?? false) ||
    !same(old.status?.allocatable, cur.status?.allocatable) ||
    !same(old.metadata.labels, cur.metadata.labels) ||
    !same(old.spec?.taints, cur.spec?.taints) ||
    !same(conditionStatuses(old), conditionStatuses(cur)) ||
    !same(old.metadata.annotations, cur.metadata.annotations)
  );
}

export class Scheduler {
  readonly config: SchedulerConfig;
  readonly cache = new SchedulerCache();
  readonly cluster = new ClusterState();
  readonly queue: SchedulingQueue;
  readonly profiles = new Map<string, Framework>();
  readonly client: SchedulerClient;
  readonly store?: Store;
  private informers: { stop(): Promise<void> } | null = null;
  readonly waitingPods = new Map<string, WaitingPod>();
  explain: boolean | ((pod: Pod) => boolean);
  /** Explained results by pod key (most recent attempt; the oldest are dropped beyond 1,000). */
  readonly explanations = new Map<string, ScheduleResult>();
  private nextStartNodeIndex = 0;
  private readonly now: () => number;
  private readonly random: () => number;
  private bindings = new Set<Promise<void>>();
  private running = false;
  private loop: Promise<void> | null = null;
  /** Pending pods whose spec could not be read, with the reason (cleared when fixed or deleted). */
  readonly invalidPods = new Map<string, string>();
  /** Last PodScheduled condition written per pod, to avoid rewriting identical status. */
  private lastCondition = new Map<string, string>();

  constructor(opts: SchedulerOptions) {
    this.config = isConfig(opts.config)
      ? opts.config
      : parseConfig(opts.config as string | Record<string, unknown> | undefined);
    if (!opts.client && !opts.store) throw new Error('Scheduler needs a store or a client');
    ensureSchedulingKinds();
    this.store = opts.store;
    this.client = opts.client ?? new StoreClient(opts.store!);
    this.explain = opts.explain ?? false;
    this.now = opts.now ?? Date.now;
    this.random = opts.random ?? Math.random;
    const registry = inTreeRegistry();
    for (const [n, f] of globalRegistry) registry.set(n, f);
    for (const [n, f] of Object.entries(opts.plugins ?? {})) registry.set(n, f);
    const queueRef: { q?: SchedulingQueue } = {};
    const nominator = {
      nominatedPodsForNode: (n: string) => queueRef.q?.nominatedPodsForNode(n) ?? [],
      hasNominatedPods: () => queueRef.q?.hasNominatedPods() ?? false,
      addNominatedPod: (pi: PodInfo, n: string) => queueRef.q?.addNominatedPod(pi, n),
      deleteNominatedPod: (pi: PodInfo) => queueRef.q?.deleteNominatedPod(pi),
    };
    this.config.profiles.forEach((p, i) => {
      const fw = new Framework(
        p,
        i,
        registry,
        {
          snapshot: this.cache,
          cache: this.cache,
          cluster: this.cluster,
          client: this.client,
          nominator,
          waitingPods: this.waitingPods,
          now: this.now,
          random: this.random,
        },
        DEFAULT_MULTI_POINT,
      );
      this.profiles.set(p.schedulerName, fw);
    });
    const first = this.profiles.values().next().value as Framework;
    this.queue = new SchedulingQueue({
      less: (a, b) => first.queueSortPlugin.less(a, b),
      preEnqueue: (pod, pi) => this.preEnqueue(pod, pi),
      interested: (plugins, ev) => this.interested(plugins, ev),
      initialBackoffMs: this.config.podInitialBackoffSeconds * 1000,
      maxBackoffMs: this.config.podMaxBackoffSeconds * 1000,
      maxInUnschedulableMs: this.config.podMaxInUnschedulablePodsDurationSeconds * 1000,
      now: this.now,
      onNominatedChange: (node, pods) => this.cache.setNominatedPods(node, pods),
    });
    queueRef.q = this.queue;
    // Bind the nominator straight to the queue: the filter hot path calls it for every node.
    nominator.nominatedPodsForNode = this.queue.nominatedPodsForNode.bind(this.queue);
    nominator.hasNominatedPods = this.queue.hasNominatedPods.bind(this.queue);
  }

  /** True when this scheduler has a profile for the pod's schedulerName. */
  responsibleFor(pod: Pod): boolean {
    return this.profiles.has(pod.spec.schedulerName || 'default-scheduler');
  }

  private frameworkFor(pod: Pod): Framework | undefined {
    return this.profiles.get(pod.spec.schedulerName || 'default-scheduler');
  }

  /** Fill spec.priority from the PriorityClass (what priority admission does before a pod is stored). */
  private admitPriority(pod: Pod): Pod {
    if (pod.spec.priority !== undefined) return pod;
    const name = pod.spec.priorityClassName;
    let pc = name ? this.cluster.priorityClasses.get(name) : undefined;
    if (!name) for (const c of this.cluster.priorityClasses.values()) if (c.globalDefault) pc = c;
    if (!pc) return pod;
    return {
      ...pod,
      spec: {
        ...pod.spec,
        priority: pc.value,
        preemptionPolicy: pod.spec.preemptionPolicy ?? pc.preemptionPolicy,
      },
    };
  }

  /** A pod naming a missing PriorityClass waits; then the profile's PreEnqueue plugins run. */
  private preEnqueue(pod: Pod, pi: PodInfo): MaybeStatus {
    if (pod.spec.priority === undefined && pod.spec.priorityClassName) {
      const pc = this.cluster.priorityClasses.get(pod.spec.priorityClassName);
      if (!pc) {
        return Status.unresolvable(
          `no PriorityClass with name ${pod.spec.priorityClassName} was found`,
        ).withPlugin('PriorityClass');
      }
      pi.priority = pc.value;
      pi.pod = {
        ...pod,
        spec: {
          ...pod.spec,
          priority: pc.value,
          preemptionPolicy: pod.spec.preemptionPolicy ?? pc.preemptionPolicy,
        },
      };
    }
    const fw = this.frameworkFor(pod);
    return fw ? fw.runPreEnqueue(pod, pi) : null;
  }

  private interested(plugins: Set<string>, ev: ClusterEvent): boolean {
    for (const fw of this.profiles.values()) {
      for (const p of plugins) {
        if (p === 'PriorityClass' && ev.resource === 'PriorityClass') return true;
        for (const e of fw.eventsOf(p)) {
          if (
            (e.resource === '*' || e.resource === ev.resource) &&
            (e.action === '*' || e.action === ev.action)
          )
            return true;
        }
      }
    }
    return false;
  }

  // ---- cluster events (from informers, or called directly) ----

  onNodeAdd(node: Node): void {
    this.cache.addNode(node);
    this.queue.moveAllToActiveOrBackoffQueue({ resource: 'Node', action: 'Add' });
  }

  onNodeUpdate(node: Node): void {
    const old = this.cache.get(node.metadata.name ?? '')?.node;
    this.cache.updateNode(node);
    // Status heartbeats change nothing a plugin looks at: retrying pods on each would only burn cycles.
    if (!old || nodeSchedulingPropertiesChanged(old, node)) {
      this.queue.moveAllToActiveOrBackoffQueue({ resource: 'Node', action: 'Update' });
    }
  }

  onNodeDelete(node: Node | string): void {
    this.cache.removeNode(typeof node === 'string' ? node : (node.metadata.name ?? ''));
  }

  /** A pod added or changed: bound pods go to the cache, pending ones of ours to the queue. */
  onPodUpsert(input: Pod): void {
    const pod = this.admitPriority(input);
    if (pod.spec.nodeName) {
      const key = `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;
      const wasKnown = this.cache.nodeOf(key) !== undefined;
      this.queue.delete(pod);
      if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') {
        this.onPodDelete(pod);
        return;
      }
      try {
        this.cache.addPod(pod);
      } catch (err) {
        this.invalidPods.set(key, `invalid pod spec: ${err instanceof Error ? err.message : String(err)}`);
        return;
      }
      if (!wasKnown) this.queue.moveAllToActiveOrBackoffQueue({ resource: 'Pod', action: 'Add' });
      return;
    }
    if (!this.responsibleFor(pod) || pod.metadata.deletionTimestamp) return;
    const key = `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;
    if (this.cache.isAssumed(key)) return;
    try {
      this.queue.add(pod);
    } catch (err) {
      // A spec the scheduler cannot read (e.g. a malformed quantity): say so on the pod, keep going.
      const message = `invalid pod spec: ${err instanceof Error ? err.message : String(err)}`;
      this.invalidPods.set(key, message);
      this.client.event(pod, 'Warning', 'FailedScheduling', message);
      void this.writeCondition(pod, 'SchedulerError', message).catch(() => {});
      return;
    }
    this.invalidPods.delete(key);
    const gated = this.queue.gatedMessage(pod);
    if (gated) {
      const reason = gated.plugin === 'SchedulingGates' ? 'SchedulingGated' : 'Unschedulable';
      const message =
        gated.plugin === 'SchedulingGates'
          ? 'Scheduling is blocked due to non-empty scheduling gates'
          : gated.message;
      void this.writeCondition(pod, reason, message).catch(() => {});
    }
  }

  onPodDelete(pod: Pod): void {
    if (
      pod.spec.nodeName ||
      this.cache.nodeOf(`${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`)
    ) {
      this.cache.removePod(pod);
      this.queue.moveAllToActiveOrBackoffQueue({ resource: 'Pod', action: 'Delete' });
    }
    this.queue.delete(pod);
    this.invalidPods.delete(`${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`);
    this.lastCondition.delete(`${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`);
  }

  /** Any other kind (storage, PriorityClass, PDB, Namespace). */
  onObject(obj: KubeObject, action: 'Add' | 'Update' | 'Delete'): void {
    if (!this.cluster.apply(obj, action === 'Delete')) return;
    if (obj.kind === 'PriorityClass') this.queue.retryGated();
    this.queue.moveAllToActiveOrBackoffQueue({ resource: obj.kind as ClusterEvent['resource'], action });
  }

  // ---- the scheduling cycle ----

  /** Pop the next pod and run one scheduling cycle; resolves to null when the queue is closed. */
  async scheduleOne(): Promise<ScheduleResult | null> {
    const qpi = await this.queue.pop();
    if (!qpi) return null;
    return this.runCycle(qpi);
  }

  /** Schedule whatever is in the active queue right now, binding synchronously (simulation, tests). */
  async drain(): Promise<ScheduleResult[]> {
    const out: ScheduleResult[] = [];
    for (;;) {
      const qpi = this.queue.tryPop();
      if (!qpi) break;
      out.push(await this.runCycle(qpi, true));
    }
    return out;
  }

  async runCycle(qpi: QueuedPodInfo, awaitBinding = false): Promise<ScheduleResult> {
    try {
      return await this.runCycleUnguarded(qpi, awaitBinding);
    } catch (err) {
      // A bug must cost one attempt of one pod, not the scheduling loop.
      const result: ScheduleResult = {
        pod: qpi.pi.key,
        node: null,
        reason: 'SchedulerError',
        message: '',
        evaluatedNodes: 0,
        feasibleNodes: 0,
      };
      this.cache.forgetPod(qpi.pi.key);
      const fw = this.frameworkFor(qpi.pi.pod)!;
      return this.handleFailure(fw, new CycleState(), qpi, this.queue.schedulingCycle, {
        result,
        status: Status.error(err),
      });
    }
  }

  private async runCycleUnguarded(qpi: QueuedPodInfo, awaitBinding: boolean): Promise<ScheduleResult> {
    const pi = qpi.pi;
    const pod = pi.pod;
    const fw = this.frameworkFor(pod)!;
    const cycle = this.queue.schedulingCycle;
    const state = new CycleState();
    const r = this.schedulePod(fw, state, pi);
    if (r.status) return this.handleFailure(fw, state, qpi, cycle, r);
    const node = r.node!;
    try {
      this.cache.assumePod(pi, node);
    } catch (err) {
      return this.handleFailure(fw, state, qpi, cycle, { result: r.result, status: Status.error(err) });
    }
    // Assumed on the node now: counting it again as nominated there would reserve its room twice.
    this.queue.deleteNominatedPod(pi);
    let s = fw.runReserve(state, pi, node);
    if (!s) s = fw.runPermit(state, pi, node);
    if (s && s.code !== Code.Wait) {
      fw.runUnreserve(state, pi, node);
      this.cache.forgetPod(pi.key);
      this.queue.moveAllToActiveOrBackoffQueue({ resource: 'Pod', action: 'Delete' });
      return this.handleFailure(fw, state, qpi, cycle, { result: r.result, status: s });
    }
    const binding = this.bindingCycle(fw, state, qpi, node, r);
    this.bindings.add(binding);
    void binding.finally(() => this.bindings.delete(binding));
    if (awaitBinding) return binding.then(() => r.result);
    return r.result;
  }

  private async bindingCycle(
    fw: Framework,
    state: CycleState,
    qpi: QueuedPodInfo,
    node: string,
    r: { result: ScheduleResult },
  ): Promise<void> {
    const pi = qpi.pi;
    let s = await fw.waitOnPermit(pi);
    if (!s) s = await fw.runPreBind(state, pi, node);
    if (!s) s = await fw.runBind(state, pi, node);
    if (s) {
      fw.runUnreserve(state, pi, node);
      this.cache.forgetPod(pi.key);
      this.queue.moveAllToActiveOrBackoffQueue({ resource: 'Pod', action: 'Delete' });
      const failed = await this.handleFailure(fw, state, qpi, this.queue.schedulingCycle, {
        result: r.result,
        status: s,
      });
      Object.assign(r.result, failed);
      return;
    }
    this.queue.done(pi.key);
    this.queue.deleteNominatedPod(pi);
    this.lastCondition.delete(pi.key);
    this.client.event(pi.pod, 'Normal', 'Scheduled', `Successfully assigned ${pi.key} to ${node}`);
    fw.runPostBind(state, pi, node);
  }

  /** Debug mode for one pod: the explain option, or the pod's `scheduler.kemu.dev/explain: "true"` annotation. */
  shouldExplain(pod: Pod): boolean {
    if (pod.metadata.annotations?.[EXPLAIN_ANNOTATION] === 'true') return true;
    return typeof this.explain === 'function' ? this.explain(pod) : this.explain;
  }

  private recordExplanation(result: ScheduleResult): void {
    this.explanations.delete(result.pod);
    this.explanations.set(result.pod, result);
    if (this.explanations.size > 1000) this.explanations.delete(this.explanations.keys().next().value as string);
  }

  /** Filter and score; returns the chosen node, or a status explaining the failure. */
  schedulePod(
    fw: Framework,
    state: CycleState,
    pi: PodInfo,
  ): {
    node: string | null;
    status: Status | null;
    statuses: Map<string, Status>;
    preFilterMsg?: string;
    result: ScheduleResult;
  } {
    const explain = this.shouldExplain(pi.pod);
    const all = this.cache.list();
    const statuses = new NodeStatusMap(all, this.cache.positions());
    const result: ScheduleResult = {
      pod: pi.key,
      node: null,
      reason: 'Scheduled',
      message: '',
      evaluatedNodes: 0,
      feasibleNodes: 0,
    };
    // Nodes a PreFilter left out are recorded only when the attempt fails or is explained: a DaemonSet
    // pod names one node of thousands, and a pod that is placed needs no status for the rest.
    let leftOut: ReadonlySet<string> | null = null;
    const recordLeftOut = () => {
      if (!leftOut) return;
      const keep = leftOut;
      leftOut = null;
      const excluded = Status.unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]");
      for (let i = 0; i < all.length; i++) if (!keep.has(all[i].name)) statuses.setAt(i, excluded);
    };
    const fail = (status: Status, preFilterMsg?: string) => {
      recordLeftOut();
      return { node: null, status, statuses, preFilterMsg, result };
    };
    if (all.length === 0) return fail(Status.unschedulable(NO_NODES_AVAILABLE));
    const pf = fw.runPreFilter(state, pi, all);
    if (pf) {
      if (pf.code === Code.Error) return fail(pf);
      for (let i = 0; i < all.length; i++) statuses.setAt(i, pf);
      return fail(pf, pf.message);
    }
    let nodes = all;
    if (state.nodeNames) {
      // The named nodes, in the snapshot's order, found by name rather than by a pass over every node.
      const positions = this.cache.positions();
      const at: number[] = [];
      for (const name of state.nodeNames) {
        const i = positions.get(name);
        if (i !== undefined) at.push(i);
      }
      nodes = at.sort((a, b) => a - b).map((i) => all[i]);
      leftOut = state.nodeNames;
    }
    let feasible: NodeInfo[] = [];
    const nominated = pi.pod.status?.nominatedNodeName;
    if (nominated) {
      const ni = this.cache.get(nominated);
      if (
        ni &&
        (!state.nodeNames || state.nodeNames.has(nominated)) &&
        fw.runFilterWithNominatedPods(state, pi, ni) === null
      ) {
        feasible = [ni];
        result.evaluatedNodes = 1;
      }
    }
    if (feasible.length === 0 && nodes.length > 0) {
      const pct = fw.profile.percentageOfNodesToScore ?? this.config.percentageOfNodesToScore;
      const want = explain ? nodes.length : numFeasibleNodesToFind(nodes.length, pct);
      const len = nodes.length;
      const start = this.nextStartNodeIndex % len;
      let processed = 0;
      const dense = nodes === all;
      for (let i = 0; i < len && feasible.length < want; i++) {
        const at = (start + i) % len;
        const n = nodes[at];
        processed++;
        const s = fw.runFilterWithNominatedPods(state, pi, n);
        if (s === null) feasible.push(n);
        else if (s.code === Code.Error) return fail(s);
        else if (dense) statuses.setAt(at, s);
        else statuses.set(n.name, s);
      }
      this.nextStartNodeIndex = (start + processed) % len;
      result.evaluatedNodes = processed;
    }
    if (explain) {
      recordLeftOut();
      this.recordExplanation(result);
      result.filters = {};
      for (const [n, s] of statuses)
        result.filters[n] = { plugin: s.plugin, code: Code[s.code], reasons: s.reasons };
    }
    if (feasible.length === 0) return fail(Status.unschedulable());
    result.feasibleNodes = feasible.length;
    let chosen = feasible[0];
    if (feasible.length > 1 || explain) {
      const ps = fw.runPreScore(state, pi, feasible);
      if (ps) return fail(ps.code === Code.Error ? ps : Status.error(ps.message, ps.plugin));
      const sc = fw.runScore(state, pi, feasible, explain);
      if (sc instanceof Status) return fail(sc);
      if (sc.breakdown) result.scores = sc.breakdown.sort((a, b) => b.total - a.total);
      // Highest total wins; ties are broken uniformly at random (reservoir sampling).
      let best = -1;
      let ties = 0;
      for (let i = 0; i < feasible.length; i++) {
        const t = sc.totals[i];
        if (t > best) {
          best = t;
          chosen = feasible[i];
          ties = 1;
        } else if (t === best) {
          ties++;
          if (this.random() * ties < 1) chosen = feasible[i];
        }
      }
    }
    result.node = chosen.name;
    return { node: chosen.name, status: null, statuses, result };
  }

  private async handleFailure(
    fw: Framework,
    state: CycleState,
    qpi: QueuedPodInfo,
    cycle: number,
    r: {
      status: Status | null;
      statuses?: Map<string, Status>;
      preFilterMsg?: string;
      result: ScheduleResult;
    },
  ): Promise<ScheduleResult> {
    const pi = qpi.pi;
    const status = r.status!;
    const result = r.result;
    const statuses = r.statuses ?? new Map<string, Status>();
    result.node = null;
    if (status.code === Code.Error) {
      result.reason = 'SchedulerError';
      result.message =
        status.plugin && !status.message.includes(`"${status.plugin}"`)
          ? `${status.plugin}: ${status.message}`
          : status.message;
      this.queue.requeueBackoff(qpi);
      this.client.event(pi.pod, 'Warning', 'FailedScheduling', result.message);
      await this.writeCondition(pi.pod, 'SchedulerError', result.message).catch(() => {});
      return result;
    }
    const numAll = this.cache.numNodes();
    let message: string;
    if (status.reasons[0] === NO_NODES_AVAILABLE) message = NO_NODES_AVAILABLE;
    else if (r.preFilterMsg !== undefined) message = `0/${numAll} nodes are available: ${r.preFilterMsg}.`;
    else if (statuses.size > 0) message = nodesAvailableMessage(numAll, statuses);
    else message = status.message; // Reserve/Permit/Bind rejections carry their own text
    const plugins = new Set<string>();
    for (const s of tallyStatuses(statuses).keys()) if (s.plugin) plugins.add(s.plugin);
    if (status.plugin) plugins.add(status.plugin);
    // PostFilter (preemption) only when filters ran and rejected every node.
    if (statuses.size > 0 && fw.postFilterPlugins.length > 0 && status.reasons[0] !== NO_NODES_AVAILABLE) {
      const pf = await fw.runPostFilter(state, pi, statuses);
      if (pf.status && pf.status.code === Code.Error) {
        result.reason = 'SchedulerError';
        result.message = pf.status.message;
        this.queue.requeueBackoff(qpi);
        this.client.event(pi.pod, 'Warning', 'FailedScheduling', result.message);
        await this.writeCondition(pi.pod, 'SchedulerError', result.message).catch(() => {});
        return result;
      }
      // Same separator as the reference (` %v.`), which doubles the final period of the preemption text.
      if (pf.status?.message) message += ` ${pf.status.message}.`;
      if (pf.nominatedNodeName) {
        result.nominatedNodeName = pf.nominatedNodeName;
        result.preempted = (pf.victims ?? []).map(
          (v) => `${v.metadata.namespace ?? 'default'}/${v.metadata.name}`,
        );
        this.queue.addNominatedPod(pi, pf.nominatedNodeName);
        pi.pod = { ...pi.pod, status: { ...(pi.pod.status ?? {}), nominatedNodeName: pf.nominatedNodeName } };
      }
    }
    result.reason = 'Unschedulable';
    result.message = message;
    result.unschedulablePlugins = [...plugins];
    qpi.unschedulablePlugins = plugins;
    this.queue.requeueUnschedulable(qpi, cycle);
    this.client.event(pi.pod, 'Warning', 'FailedScheduling', message);
    await this.writeCondition(pi.pod, 'Unschedulable', message, result.nominatedNodeName).catch(() => {});
    return result;
  }

  private async writeCondition(pod: Pod, reason: string, message: string, nominated?: string): Promise<void> {
    const key = `${pod.metadata.namespace ?? 'default'}/${pod.metadata.name}`;
    const sig = `${reason}\0${message}\0${nominated ?? ''}`;
    if (this.lastCondition.get(key) === sig) return;
    this.lastCondition.set(key, sig);
    await this.client.updatePodStatus(pod, { status: 'False', reason, message }, nominated);
  }

  /** Wait for every in-flight binding cycle. */
  async flushBindings(): Promise<void> {
    while (this.bindings.size > 0) await Promise.allSettled([...this.bindings]);
  }

  /**
   * Run the scheduling loop until stop(). With a store, first lists and watches it (resolves once the
   * initial state is loaded); without one, feed cluster events through the on*() methods.
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    if (this.store) this.informers = await connectStore(this.store, this);
    this.queue.run();
    this.loop = (async () => {
      const slice = new TimeSlice();
      while (this.running) {
        const r = await this.scheduleOne();
        if (r === null) break;
        // A cycle that failed or only started its binding settles on promises alone, so the next pod
        // would follow without the event loop ever turning: with a backlog, timers and I/O of whatever
        // shares this process (kubelets renewing leases, the runtime) would wait for the whole queue.
        // Every pod waiting in activeQ waits on this loop alone, and its startup with it: with a backlog the
        // loop keeps the event loop longer, so a burst (a DaemonSet's pod per node, a big Deployment) is
        // placed at several times the rate a fair share would allow.
        await slice.maybeYield(this.queue.activeUpperBound > BACKLOG_PODS ? BACKLOG_SLICE_MS : DEFAULT_SLICE_MS);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.informers?.stop();
    this.informers = null;
    this.queue.close();
    await this.loop;
    for (const wp of this.waitingPods.values()) wp.reject('', 'scheduler stopped');
    await this.flushBindings();
  }
}

export { WaitingPod };
