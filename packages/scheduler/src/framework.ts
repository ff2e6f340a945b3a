// The scheduling framework: plugin interfaces for every extension point, the per-cycle state, and a
// Framework (one per profile) that runs the enabled plugins in configured order.
import type { SchedulerCache, Snapshot } from './cache.js';
import type { ClusterState } from './cluster-state.js';
import { ConfigError, type PluginRef, type PluginSet, type Profile } from './config.js';
import type { NodeCheckpoint, NodeInfo } from './node-info.js';
import type { PodInfo } from './pod-info.js';
import { EXTENSION_POINTS, type ExtensionPoint, POINT_METHOD } from './extension-points.js';
import { Code, type MaybeStatus, Status } from './status.js';
import type { Pod } from './types.js';

export const MAX_NODE_SCORE = 100;
export { EXTENSION_POINTS, type ExtensionPoint, POINT_METHOD };

/** A cluster change a plugin cares about: used to move unschedulable pods back to the active queue. */
export interface ClusterEvent {
  resource:
    | 'Pod'
    | 'UnscheduledPod'
    | 'Node'
    | 'PersistentVolume'
    | 'PersistentVolumeClaim'
    | 'StorageClass'
    | 'CSINode'
    | 'CSIStorageCapacity'
    | 'PriorityClass'
    | 'PodDisruptionBudget'
    | 'Namespace'
    | '*';
  action: 'Add' | 'Update' | 'Delete' | '*';
}

/** Data plugins share within one scheduling cycle, keyed by plugin-chosen strings. */
export class CycleState {
  private data = new Map<string, unknown>();
  /** Filter plugins whose PreFilter returned Skip. */
  skipFilter = new Set<string>();
  /** Score plugins whose PreScore returned Skip. */
  skipScore = new Set<string>();
  /** Node names a PreFilter narrowed the search to (null: all nodes). */
  nodeNames: Set<string> | null = null;
  /** Filter plugins not skipped by PreFilter (computed on first use). */
  activeFilters: FilterPlugin[] | null = null;
  /** Active PreFilter plugins that track added/removed pods (computed on first use). */
  trackers: PreFilterPlugin[] | null = null;

  read<T>(key: string): T | undefined {
    return this.data.get(key) as T | undefined;
  }

  write(key: string, value: unknown): void {
    this.data.set(key, value);
  }

  /** Deep enough for dry runs: values with a clone() method are cloned. */
  clone(): CycleState {
    const c = new CycleState();
    for (const [k, v] of this.data) {
      c.data.set(
        k,
        v && typeof (v as { clone?: unknown }).clone === 'function' ? (v as { clone(): unknown }).clone() : v,
      );
    }
    c.skipFilter = new Set(this.skipFilter);
    c.activeFilters = this.activeFilters;
    c.skipScore = new Set(this.skipScore);
    c.nodeNames = this.nodeNames;
    c.trackers = this.trackers;
    return c;
  }
}

export interface QueuedPodInfo {
  pi: PodInfo;
  /** When the pod was last added to a queue (ms). */
  timestamp: number;
  initialAttemptTimestamp: number;
  attempts: number;
  unschedulablePlugins: Set<string>;
  /** Rejected by PreEnqueue: waits in the unschedulable map until an update lets it through. */
  gated: boolean;
  gatedMessage?: string;
}

export interface Plugin {
  readonly name: string;
  /** Events that may make a pod this plugin rejected schedulable. Default: every event. */
  eventsToRegister?(): ClusterEvent[];
}

export interface PreEnqueuePlugin extends Plugin {
  preEnqueue(pod: Pod, pi: PodInfo): MaybeStatus;
}
export interface QueueSortPlugin extends Plugin {
  less(a: QueuedPodInfo, b: QueuedPodInfo): boolean;
}
export interface PreFilterPlugin extends Plugin {
  /** May narrow the node set through `state.nodeNames`, or return Skip to skip its Filter. */
  preFilter(state: CycleState, pi: PodInfo, nodes: NodeInfo[]): MaybeStatus;
  /** Keep PreFilter state right when a dry run adds or removes a pod (preemption, nominated pods). */
  addPod?(state: CycleState, pi: PodInfo, added: PodInfo, node: NodeInfo): void;
  removePod?(state: CycleState, pi: PodInfo, removed: PodInfo, node: NodeInfo): void;
}
export interface FilterPlugin extends Plugin {
  filter(state: CycleState, pi: PodInfo, node: NodeInfo): MaybeStatus;
}
export interface PostFilterResult {
  nominatedNodeName?: string;
  status: MaybeStatus;
  /** Pods evicted to make room (for reporting). */
  victims?: Pod[];
}
export interface PostFilterPlugin extends Plugin {
  postFilter(
    state: CycleState,
    pi: PodInfo,
    statuses: Map<string, Status>,
  ): Promise<PostFilterResult> | PostFilterResult;
}
export interface PreScorePlugin extends Plugin {
  preScore(state: CycleState, pi: PodInfo, nodes: NodeInfo[]): MaybeStatus;
}
export interface ScorePlugin extends Plugin {
  score(state: CycleState, pi: PodInfo, node: NodeInfo): number;
  /** Rescale raw scores in place to [0, 100]. */
  normalizeScore?(state: CycleState, pi: PodInfo, scores: number[]): void;
}
export interface ReservePlugin extends Plugin {
  reserve(state: CycleState, pi: PodInfo, nodeName: string): MaybeStatus;
  unreserve(state: CycleState, pi: PodInfo, nodeName: string): void;
}
export interface PermitPlugin extends Plugin {
  /** Wait status plus timeoutMs parks the pod until allowed, rejected or timed out. */
  permit(state: CycleState, pi: PodInfo, nodeName: string): { status: MaybeStatus; timeoutMs?: number };
}
export interface PreBindPlugin extends Plugin {
  preBind(state: CycleState, pi: PodInfo, nodeName: string): Promise<MaybeStatus> | MaybeStatus;
}
export interface BindPlugin extends Plugin {
  /** Return Skip to let the next bind plugin handle the pod. */
  bind(state: CycleState, pi: PodInfo, nodeName: string): Promise<MaybeStatus> | MaybeStatus;
}
export interface PostBindPlugin extends Plugin {
  postBind(state: CycleState, pi: PodInfo, nodeName: string): void;
}

/** Side effects the scheduler has on the cluster; implemented over a store or in memory. */
export interface SchedulerClient {
  /** Binding semantics: set spec.nodeName, failing if the pod is gone or already bound elsewhere. */
  bind(pod: Pod, nodeName: string): Promise<void>;
  deletePod(pod: Pod, reason: string): Promise<void>;
  /** Set the PodScheduled condition and, when given, status.nominatedNodeName ('' clears it). */
  updatePodStatus(
    pod: Pod,
    cond: { status: 'True' | 'False'; reason?: string; message?: string },
    nominatedNodeName?: string,
  ): Promise<void>;
  event(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** Persist a PVC or PV change made by volume binding. */
  updateObject(obj: import('./types.js').KubeObject): Promise<void>;
}

export interface Nominator {
  nominatedPodsForNode(nodeName: string): PodInfo[];
  /** Cheap check so the filter hot path skips nominated-pod handling when there are none. */
  hasNominatedPods(): boolean;
  addNominatedPod(pi: PodInfo, nodeName: string): void;
  deleteNominatedPod(pi: PodInfo): void;
}

export class WaitingPod {
  readonly pi: PodInfo;
  private pending: Map<string, ReturnType<typeof setTimeout>>;
  private settle!: (s: MaybeStatus) => void;
  readonly done: Promise<MaybeStatus>;

  constructor(pi: PodInfo, waits: Map<string, number>) {
    this.pi = pi;
    this.done = new Promise((r) => {
      this.settle = r;
    });
    this.pending = new Map();
    for (const [name, ms] of waits) {
      this.pending.set(
        name,
        setTimeout(
          () => this.reject(name, `rejected due to timeout after waiting ${ms / 1000}s at plugin ${name}`),
          ms,
        ),
      );
    }
  }

  pendingPlugins(): string[] {
    return [...this.pending.keys()];
  }

  allow(plugin: string): void {
    const t = this.pending.get(plugin);
    if (t === undefined) return;
    clearTimeout(t);
    this.pending.delete(plugin);
    if (this.pending.size === 0) this.settle(null);
  }

  reject(plugin: string, msg: string): void {
    for (const t of this.pending.values()) clearTimeout(t);
    this.pending.clear();
    this.settle(Status.unschedulable(msg).withPlugin(plugin));
  }
}

export interface Handle {
  snapshot: Snapshot;
  cache: SchedulerCache;
  cluster: ClusterState;
  client: SchedulerClient;
  nominator: Nominator;
  waitingPods: Map<string, WaitingPod>;
  /** The profile's framework (preemption runs its filters during dry runs). */
  framework: () => Framework;
  now: () => number;
  random: () => number;
}

/** `(args, handle) => plugin`; out-of-tree plugins register one of these under a name. */
export type PluginFactory = (args: any, handle: Handle) => Plugin;

export interface ScoreBreakdown {
  node: string;
  total: number;
  plugins: Record<string, number>;
}

function callGuard<T>(plugin: string, point: string, fn: () => T): T | Status {
  try {
    return fn();
  } catch (err) {
    return Status.error(
      `running ${point} plugin "${plugin}": ${err instanceof Error ? err.message : String(err)}`,
      plugin,
    );
  }
}

export class Framework {
  readonly profile: Profile;
  readonly weights = new Map<string, number>();
  readonly handle: Handle;
  readonly plugins = new Map<string, Plugin>();
  preEnqueuePlugins: PreEnqueuePlugin[] = [];
  queueSortPlugin: QueueSortPlugin;
  private queueSortPluginList: QueueSortPlugin[] = [];
  preFilterPlugins: PreFilterPlugin[] = [];
  filterPlugins: FilterPlugin[] = [];
  postFilterPlugins: PostFilterPlugin[] = [];
  preScorePlugins: PreScorePlugin[] = [];
  scorePlugins: ScorePlugin[] = [];
  scoreWeights: number[] = [];
  reservePlugins: ReservePlugin[] = [];
  permitPlugins: PermitPlugin[] = [];
  preBindPlugins: PreBindPlugin[] = [];
  bindPlugins: BindPlugin[] = [];
  postBindPlugins: PostBindPlugin[] = [];

  constructor(
    profile: Profile,
    index: number,
    registry: Map<string, PluginFactory>,
    handle: Omit<Handle, 'framework'>,
    defaults: PluginRef[],
  ) {
    this.profile = profile;
    this.handle = { ...handle, framework: () => this };
    const f = `profiles[${index}]`;
    const args = new Map(profile.pluginConfig.map((c) => [c.name, c.args]));
    const get = (name: string, field: string): Plugin => {
      let pl = this.plugins.get(name);
      if (pl) return pl;
      const factory = registry.get(name);
      if (!factory) throw new ConfigError(field, `Invalid value: "${name}": plugin is not registered`);
      try {
        pl = factory(args.get(name), this.handle);
      } catch (err) {
        throw new ConfigError(
          `${f}.pluginConfig`,
          `initializing plugin "${name}": ${err instanceof Error ? err.message : String(err)}`,
        );
      }
      this.plugins.set(name, pl);
      return pl;
    };
    const implementsPoint = (pl: Plugin, point: ExtensionPoint) =>
      typeof (pl as unknown as Record<string, unknown>)[POINT_METHOD[point]] === 'function';
    // multiPoint: the defaults, minus disabled ones ('*' drops all), with user entries replacing or appended.
    const mpUser = profile.plugins.multiPoint ?? {};
    const mp = mergeSet(defaults, mpUser);
    mp.forEach((r) => {
      const j = (mpUser.enabled ?? []).findIndex((e) => e.name === r.name);
      get(r.name, `${f}.plugins.multiPoint.enabled[${j}].name`);
    });
    for (const point of EXTENSION_POINTS) {
      const spec = profile.plugins[point] ?? {};
      const disabled = new Set((spec.disabled ?? []).map((d) => d.name));
      const explicit = spec.enabled ?? [];
      const chosen: PluginRef[] = [];
      if (!disabled.has('*')) {
        for (const r of mp) {
          if (disabled.has(r.name) || explicit.some((e) => e.name === r.name)) continue;
          if (implementsPoint(get(r.name, ''), point)) chosen.push(r);
        }
      }
      explicit.forEach((r, j) => {
        const pl = get(r.name, `${f}.plugins.${point}.enabled[${j}].name`);
        if (!implementsPoint(pl, point)) {
          throw new ConfigError(
            `${f}.plugins.${point}.enabled[${j}].name`,
            `Invalid value: "${r.name}": plugin does not extend ${point} plugin`,
          );
        }
        chosen.push(r);
      });
      for (const r of chosen) {
        const pl = this.plugins.get(r.name)!;
        (this as unknown as Record<string, Plugin[]>)[
          point === 'queueSort' ? 'queueSortPluginList' : `${point}Plugins`
        ]?.push(pl);
        if (point === 'score') {
          const w =
            r.weight ??
            mp.find((m) => m.name === r.name)?.weight ??
            defaults.find((d) => d.name === r.name)?.weight ??
            1;
          this.scoreWeights.push(w === 0 ? 1 : w);
          this.weights.set(r.name, w === 0 ? 1 : w);
        }
      }
    }
    if (this.queueSortPluginList.length !== 1) {
      throw new ConfigError(
        `${f}.plugins.queueSort`,
        `Invalid value: exactly one queue sort plugin must be enabled, got ${this.queueSortPluginList.length}`,
      );
    }
    this.queueSortPlugin = this.queueSortPluginList[0];
    if (this.bindPlugins.length === 0)
      throw new ConfigError(`${f}.plugins.bind`, 'Required value: at least one bind plugin must be enabled');
  }

  get schedulerName(): string {
    return this.profile.schedulerName;
  }

  /** Every plugin's registered events (a plugin without eventsToRegister cares about everything). */
  eventsOf(plugin: string): ClusterEvent[] {
    const pl = this.plugins.get(plugin);
    return pl?.eventsToRegister ? pl.eventsToRegister() : [{ resource: '*', action: '*' }];
  }

  runPreEnqueue(pod: Pod, pi: PodInfo): MaybeStatus {
    for (const pl of this.preEnqueuePlugins) {
      const s = callGuard(pl.name, 'PreEnqueue', () => pl.preEnqueue(pod, pi));
      if (s && s.code !== Code.Success) return s.withPlugin(s.plugin || pl.name);
    }
    return null;
  }

  runPreFilter(state: CycleState, pi: PodInfo, nodes: NodeInfo[]): MaybeStatus {
    for (const pl of this.preFilterPlugins) {
      const s = callGuard(pl.name, 'PreFilter', () => pl.preFilter(state, pi, nodes));
      if (!s || s.code === Code.Success) continue;
      if (s.code === Code.Skip) {
        state.skipFilter.add(pl.name);
        state.activeFilters = null;
        state.trackers = null;
        continue;
      }
      s.plugin ||= pl.name;
      return s;
    }
    return null;
  }

  runFilter(state: CycleState, pi: PodInfo, node: NodeInfo): MaybeStatus {
    // The filters left after PreFilter skips, resolved once per cycle.
    let fps = state.activeFilters;
    if (fps === null) {
      const skip = state.skipFilter;
      fps = skip.size === 0 ? this.filterPlugins : this.filterPlugins.filter((p) => !skip.has(p.name));
      state.activeFilters = fps;
    }
    for (let i = 0; i < fps.length; i++) {
      const pl = fps[i];
      let s: MaybeStatus;
      try {
        s = pl.filter(state, pi, node);
      } catch (err) {
        return Status.error(
          `running "${pl.name}" filter plugin: ${err instanceof Error ? err.message : String(err)}`,
          pl.name,
        );
      }
      if (s !== null && s.code !== Code.Success) {
        s.plugin ||= pl.name;
        return s;
      }
    }
    return null;
  }

  /**
   * Whether a PreFilter plugin that tracks added/removed pods is active this cycle; without one, dry
   * runs can share the cycle state instead of copying it.
   */
  hasPreFilterState(state: CycleState): boolean {
    return this.preFilterTrackers(state).length > 0;
  }

  /** The PreFilter plugins not skipped this cycle that follow pods added or removed in dry runs. */
  preFilterTrackers(state: CycleState): PreFilterPlugin[] {
    if (state.trackers === null) {
      state.trackers = this.preFilterPlugins.filter(
        (pl) => (pl.addPod || pl.removePod) && !state.skipFilter.has(pl.name),
      );
    }
    return state.trackers;
  }

  /**
   * Filters, also counting pods nominated to the node with priority ≥ the pod's (they will land there):
   * first with them added, then, if that passes and any were added, without them.
   */
  runFilterWithNominatedPods(state: CycleState, pi: PodInfo, node: NodeInfo): MaybeStatus {
    const nominated = node.nominated;
    if (nominated.length > 0) {
      const s = this.filterWithNominated(state, pi, node, nominated);
      if (s !== null) return s;
    }
    return this.runFilter(state, pi, node);
  }

  /**
   * The pass with the nominated pods that outrank `pi` added. They are added to the node itself and
   * rolled back afterwards, because copying the node for every filter call costs more than the filter;
   * the cycle state is copied only when a PreFilter plugin tracks pods.
   */
  private filterWithNominated(
    state: CycleState,
    pi: PodInfo,
    node: NodeInfo,
    nominated: readonly PodInfo[],
  ): MaybeStatus {
    let cp: NodeCheckpoint | null = null;
    let st: CycleState = state;
    const trackers = this.preFilterTrackers(state);
    try {
      for (let i = 0; i < nominated.length; i++) {
        const np = nominated[i];
        if (np.priority < pi.priority || np.uid === pi.uid) continue;
        if (cp === null) {
          cp = node.checkpoint();
          if (trackers.length > 0) st = state.clone();
        }
        node.addPod(np);
        for (let j = 0; j < trackers.length; j++) trackers[j].addPod?.(st, pi, np, node);
      }
      return cp === null ? null : this.runFilter(st, pi, node);
    } finally {
      if (cp !== null) node.rollback(cp);
    }
  }

  async runPostFilter(
    state: CycleState,
    pi: PodInfo,
    statuses: Map<string, Status>,
  ): Promise<PostFilterResult> {
    let last: PostFilterResult = { status: Status.unschedulable() };
    const msgs: string[] = [];
    for (const pl of this.postFilterPlugins) {
      let r: PostFilterResult;
      try {
        r = await pl.postFilter(state, pi, statuses);
      } catch (err) {
        return {
          status: Status.error(
            `running PostFilter plugin "${pl.name}": ${err instanceof Error ? err.message : String(err)}`,
            pl.name,
          ),
        };
      }
      if (!r.status || r.status.code === Code.Success) return r;
      r.status.plugin ||= pl.name;
      if (r.status.code === Code.Error) return r;
      if (r.status.message) msgs.push(r.status.message);
      last = r;
    }
    if (msgs.length > 1) last.status = new Status(last.status?.code ?? Code.Unschedulable, msgs.join(' '));
    return last;
  }

  runPreScore(state: CycleState, pi: PodInfo, nodes: NodeInfo[]): MaybeStatus {
    for (const pl of this.preScorePlugins) {
      const s = callGuard(pl.name, 'PreScore', () => pl.preScore(state, pi, nodes));
      if (!s || s.code === Code.Success) continue;
      if (s.code === Code.Skip) {
        state.skipScore.add(pl.name);
        continue;
      }
      s.plugin ||= pl.name;
      return s;
    }
    return null;
  }

  /**
   * Score, normalise and weight; returns totals per node (same order as `nodes`) and, when `explain`,
   * each plugin's weighted contribution.
   */
  runScore(
    state: CycleState,
    pi: PodInfo,
    nodes: NodeInfo[],
    explain: boolean,
  ): { totals: number[]; breakdown?: ScoreBreakdown[] } | Status {
    const totals = new Array<number>(nodes.length).fill(0);
    const breakdown: ScoreBreakdown[] | undefined = explain
      ? nodes.map((n) => ({ node: n.name, total: 0, plugins: {} }))
      : undefined;
    const scores = new Array<number>(nodes.length);
    for (let p = 0; p < this.scorePlugins.length; p++) {
      const pl = this.scorePlugins[p];
      if (state.skipScore.size > 0 && state.skipScore.has(pl.name)) continue;
      const w = this.scoreWeights[p];
      try {
        for (let i = 0; i < nodes.length; i++) scores[i] = pl.score(state, pi, nodes[i]);
        pl.normalizeScore?.(state, pi, scores);
      } catch (err) {
        return Status.error(
          `running Score plugin "${pl.name}": ${err instanceof Error ? err.message : String(err)}`,
          pl.name,
        );
      }
      for (let i = 0; i < nodes.length; i++) {
        const s = scores[i];
        if (!(s >= 0 && s <= MAX_NODE_SCORE)) {
          return Status.error(
            `plugin "${pl.name}" returns an invalid score ${s}, it should in the range of [0, ${MAX_NODE_SCORE}] after normalizing`,
            pl.name,
          );
        }
        totals[i] += s * w;
        if (breakdown) breakdown[i].plugins[pl.name] = s * w;
      }
    }
    if (breakdown) for (let i = 0; i < nodes.length; i++) breakdown[i].total = totals[i];
    return { totals, breakdown };
  }

  runReserve(state: CycleState, pi: PodInfo, nodeName: string): MaybeStatus {
    for (const pl of this.reservePlugins) {
      const s = callGuard(pl.name, 'Reserve', () => pl.reserve(state, pi, nodeName));
      if (s && s.code !== Code.Success) {
        s.plugin ||= pl.name;
        return s;
      }
    }
    return null;
  }

  runUnreserve(state: CycleState, pi: PodInfo, nodeName: string): void {
    for (let i = this.reservePlugins.length - 1; i >= 0; i--) {
      try {
        this.reservePlugins[i].unreserve(state, pi, nodeName);
      } catch {
        // Unreserve must not fail the cleanup of the remaining plugins.
      }
    }
  }

  /** Runs Permit; a Wait registers a WaitingPod that the binding cycle awaits. */
  runPermit(state: CycleState, pi: PodInfo, nodeName: string): MaybeStatus {
    const waits = new Map<string, number>();
    for (const pl of this.permitPlugins) {
      const r = callGuard(pl.name, 'Permit', () => pl.permit(state, pi, nodeName));
      if (r instanceof Status) return r;
      const s = r.status;
      if (!s || s.code === Code.Success) continue;
      if (s.code === Code.Wait) {
        waits.set(pl.name, Math.min(r.timeoutMs ?? 15 * 60_000, 15 * 60_000));
        continue;
      }
      s.plugin ||= pl.name;
      return s;
    }
    if (waits.size > 0) {
      this.handle.waitingPods.set(pi.uid, new WaitingPod(pi, waits));
      return new Status(Code.Wait);
    }
    return null;
  }

  async waitOnPermit(pi: PodInfo): Promise<MaybeStatus> {
    const wp = this.handle.waitingPods.get(pi.uid);
    if (!wp) return null;
    const s = await wp.done;
    this.handle.waitingPods.delete(pi.uid);
    return s;
  }

  async runPreBind(state: CycleState, pi: PodInfo, nodeName: string): Promise<MaybeStatus> {
    for (const pl of this.preBindPlugins) {
      let s: MaybeStatus;
      try {
        s = await pl.preBind(state, pi, nodeName);
      } catch (err) {
        return Status.error(
          `running PreBind plugin "${pl.name}": ${err instanceof Error ? err.message : String(err)}`,
          pl.name,
        );
      }
      if (s && s.code !== Code.Success) {
        s.plugin ||= pl.name;
        return s;
      }
    }
    return null;
  }

  async runBind(state: CycleState, pi: PodInfo, nodeName: string): Promise<MaybeStatus> {
    for (const pl of this.bindPlugins) {
      let s: MaybeStatus;
      try {
        s = await pl.bind(state, pi, nodeName);
      } catch (err) {
        return Status.error(
          `running Bind plugin "${pl.name}": ${err instanceof Error ? err.message : String(err)}`,
          pl.name,
        );
      }
      if (s && s.code === Code.Skip) continue;
      if (s && s.code !== Code.Success) s.plugin ||= pl.name;
      return s;
    }
    return Status.error('no bind plugin bound the pod');
  }

  runPostBind(state: CycleState, pi: PodInfo, nodeName: string): void {
    for (const pl of this.postBindPlugins) {
      try {
        pl.postBind(state, pi, nodeName);
      } catch {
        // PostBind is informational.
      }
    }
  }
}

/** Defaults minus disabled entries ('*' drops all), then enabled entries replace in place or append. */
export function mergeSet(defaults: PluginRef[], set: PluginSet): PluginRef[] {
  const disabled = new Set((set.disabled ?? []).map((d) => d.name));
  const out = disabled.has('*') ? [] : defaults.filter((d) => !disabled.has(d.name));
  for (const e of set.enabled ?? []) {
    const i = out.findIndex((d) => d.name === e.name);
    if (i >= 0) out[i] = { name: e.name, weight: e.weight ?? out[i].weight };
    else out.push(e);
  }
  return out;
}
