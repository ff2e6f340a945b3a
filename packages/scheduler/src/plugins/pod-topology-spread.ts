import {
  MAX_NODE_SCORE,
  type FilterPlugin,
  type PluginFactory,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
} from '../framework.js';
import { type LabelMatcher, labelSelectorMatcher } from '../labels.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { Status } from '../status.js';
import type { LabelSelector, Pod, TopologySpreadConstraint } from '../types.js';
import { podMatchesNodeSelectorAndAffinity } from './node-affinity.js';
import { PodTopologySpread } from './names.js';
import { NO_SCHEDULE_ONLY, untoleratedTaint } from './taint-toleration.js';

export const ERR_SPREAD = "node(s) didn't match pod topology spread constraints";
export const ERR_SPREAD_MISSING_LABEL =
  "node(s) didn't match pod topology spread constraints (missing required label)";
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

export interface PodTopologySpreadArgs {
  defaultConstraints?: Omit<TopologySpreadConstraint, 'labelSelector'>[];
  defaultingType?: 'System' | 'List';
}

export const SYSTEM_DEFAULT_CONSTRAINTS: Omit<TopologySpreadConstraint, 'labelSelector'>[] = [
  { topologyKey: HOSTNAME_LABEL, whenUnsatisfiable: 'ScheduleAnyway', maxSkew: 3 },
  { topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', maxSkew: 5 },
];

interface Constraint {
  maxSkew: number;
  topologyKey: string;
  minDomains: number;
  matcher: LabelMatcher;
  /** The selector's matchLabels as `k=v`, for reading matching pods through the cache's label index. */
  eqPairs: string[];
  honorAffinity: boolean;
  honorTaints: boolean;
}

function compile(c: TopologySpreadConstraint, pod: Pod): Constraint {
  let sel: LabelSelector | undefined = c.labelSelector;
  const labels = pod.metadata.labels ?? {};
  const keys = (c.matchLabelKeys ?? []).filter((k) => labels[k] !== undefined);
  if (sel && keys.length > 0) {
    sel = {
      matchLabels: sel.matchLabels,
      matchExpressions: [
        ...(sel.matchExpressions ?? []),
        ...keys.map((k) => ({ key: k, operator: 'In' as const, values: [labels[k]] })),
      ],
    };
  }
  return {
    maxSkew: c.maxSkew,
    topologyKey: c.topologyKey,
    minDomains: c.minDomains ?? 1,
    matcher: labelSelectorMatcher(sel),
    eqPairs: Object.entries(sel?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`),
    honorAffinity: (c.nodeAffinityPolicy ?? 'Honor') === 'Honor',
    honorTaints: (c.nodeTaintsPolicy ?? 'Ignore') === 'Honor',
  };
}

function countMatching(n: NodeInfo, c: Constraint, ns: string): number {
  let cnt = 0;
  for (const p of n.candidatePods(c.matcher.firstEq)) {
    if (p.namespace === ns && !p.pod.metadata.deletionTimestamp && c.matcher(p.labels)) cnt++;
  }
  return cnt;
}

function nodeIncluded(c: Constraint, pi: PodInfo, n: NodeInfo): boolean {
  if (c.honorAffinity && !podMatchesNodeSelectorAndAffinity(pi, n)) return false;
  if (c.honorTaints && untoleratedTaint(n.node.spec?.taints, pi.pod.spec.tolerations, NO_SCHEDULE_ONLY))
    return false;
  return true;
}

function hasAllKeys(n: NodeInfo, cs: Constraint[]): boolean {
  const l = n.labels;
  if (!l) return cs.length === 0;
  for (const c of cs) if (l[c.topologyKey] === undefined) return false;
  return true;
}

class FilterState {
  /** Per constraint, the global minimum (null: recompute after a dry-run change). */
  mins: (number | null)[];
  constructor(
    public constraints: Constraint[],
    /** per constraint: domain value → matching pods */
    public counts: Map<string, number>[],
    public selfMatch: number[],
  ) {
    this.mins = constraints.map(() => null);
  }
  clone(): FilterState {
    return new FilterState(
      this.constraints,
      this.counts.map((m) => new Map(m)),
      this.selfMatch,
    );
  }
  min(i: number): number {
    let m = this.mins[i];
    if (m !== null) return m;
    m = Number.POSITIVE_INFINITY;
    for (const x of this.counts[i].values()) if (x < m) m = x;
    if (this.counts[i].size < this.constraints[i].minDomains || m === Number.POSITIVE_INFINITY) m = 0;
    this.mins[i] = m;
    return m;
  }
}

type Plugin = PreFilterPlugin & FilterPlugin & PreScorePlugin & ScorePlugin;

const FILTER_KEY = `${PodTopologySpread}/filter`;
const SCORE_KEY = `${PodTopologySpread}/score`;

interface ScoreState {
  constraints: Constraint[];
  weights: number[];
  counts: Map<string, number>[];
  /** Hostname constraints counted ahead through the label index: node name → matching pods (else per node). */
  hostCounts: (Map<string, number> | undefined)[];
  ignored: boolean[];
  idx: number;
}

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_SPREAD_MISSING_LABEL =
  Status.unresolvable(ERR_SPREAD_MISSING_LABEL).withPlugin(PodTopologySpread);
const REJECT_SPREAD = Status.unschedulable(ERR_SPREAD).withPlugin(PodTopologySpread);

export const newPodTopologySpread: PluginFactory = (
  args: PodTopologySpreadArgs | undefined,
  handle,
): Plugin => {
  const defaults =
    (args?.defaultingType ?? 'System') === 'System'
      ? SYSTEM_DEFAULT_CONSTRAINTS
      : (args?.defaultConstraints ?? []);

  /** Pod's own constraints of one kind, or the defaults applied to pods owned by a workload controller. */
  const constraintsOf = (pi: PodInfo, when: 'DoNotSchedule' | 'ScheduleAnyway'): Constraint[] => {
    const own = pi.pod.spec.topologySpreadConstraints ?? [];
    if (own.length > 0) return own.filter((c) => c.whenUnsatisfiable === when).map((c) => compile(c, pi.pod));
    const owner = pi.pod.metadata.ownerReferences?.find((r) => r.controller);
    if (!owner || !['ReplicaSet', 'StatefulSet', 'ReplicationController'].includes(owner.kind)) return [];
    const labels = pi.pod.metadata.labels;
    if (!labels || Object.keys(labels).length === 0) return [];
    const sel = { matchLabels: labels };
    return defaults
      .filter((c) => c.whenUnsatisfiable === when)
      .map((c) => compile({ ...c, labelSelector: sel }, pi.pod));
  };

  /**
   * Matching pods of `ns` per node name, read from the index of the selector's rarest label pair; undefined
   * when that would look at more pods than the scored nodes hold (then each node counts its own).
   */
  const hostnameCounts = (c: Constraint, ns: string, budget: number): Map<string, number> | undefined => {
    let best: Iterable<PodInfo> | undefined;
    let bestSize = Number.POSITIVE_INFINITY;
    for (const pair of c.eqPairs) {
      const pods = handle.snapshot.podsWithLabel(pair);
      const size = pods instanceof Set ? pods.size : Array.isArray(pods) ? pods.length : Number.POSITIVE_INFINITY;
      if (size < bestSize) {
        best = pods;
        bestSize = size;
      }
    }
    if (!best || bestSize > budget) return undefined;
    const out = new Map<string, number>();
    for (const p of best) {
      if (p.namespace !== ns || p.pod.metadata.deletionTimestamp || !p.node || !c.matcher(p.labels)) continue;
      const name = p.node.node.metadata.name!;
      out.set(name, (out.get(name) ?? 0) + 1);
    }
    return out;
  };

  const account = (st: FilterState, pi: PodInfo, p: PodInfo, n: NodeInfo, sign: number) => {
    if (p.namespace !== pi.namespace) return;
    st.constraints.forEach((c, i) => {
      const v = n.labels?.[c.topologyKey];
      if (v === undefined || !st.counts[i].has(v) || !c.matcher(p.labels)) return;
      st.counts[i].set(v, (st.counts[i].get(v) ?? 0) + sign);
      st.mins[i] = null;
    });
  };

  return {
    name: PodTopologySpread,
    preFilter(state, pi, nodes) {
      const cs = constraintsOf(pi, 'DoNotSchedule');
      if (cs.length === 0) return Status.skip();
      let counts: Map<string, number>[];
      const spec = pi.pod.spec;
      const affinityMatters =
        cs.some((c) => c.honorAffinity) &&
        (spec.nodeSelector || spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution);
      if (!affinityMatters && !cs.some((c) => c.honorTaints)) {
        // Every node with all topology keys is a domain member: start from the cached domain list and
        // count matching pods through the cluster-wide label index instead of visiting every node.
        const keys = cs.map((c) => c.topologyKey);
        counts = handle.snapshot.topologyDomains(keys).map((m) => new Map([...m.keys()].map((k) => [k, 0])));
        for (let i = 0; i < cs.length; i++) {
          const c = cs[i];
          if (cs.length === 1 && c.matcher.singleEq) {
            // The cache keeps per-value counts for one-equality selectors live.
            for (const [v, n] of handle.snapshot.eqTopologyCounts(
              pi.namespace,
              c.matcher.firstEq!,
              c.topologyKey,
            )) {
              if (counts[i].has(v)) counts[i].set(v, n);
            }
            continue;
          }
          for (const p of handle.snapshot.podsWithLabel(c.matcher.firstEq)) {
            if (p.namespace !== pi.namespace || p.pod.metadata.deletionTimestamp || !c.matcher(p.labels))
              continue;
            const n = p.node;
            if (!n || !hasAllKeys(n, cs)) continue;
            const v = n.labels![c.topologyKey];
            counts[i].set(v, (counts[i].get(v) ?? 0) + 1);
          }
        }
      } else {
        counts = cs.map(() => new Map<string, number>());
        for (const n of nodes) {
          if (!hasAllKeys(n, cs)) continue;
          const l = n.labels!;
          for (let i = 0; i < cs.length; i++) {
            const c = cs[i];
            if (!nodeIncluded(c, pi, n)) continue;
            const v = l[c.topologyKey];
            counts[i].set(v, (counts[i].get(v) ?? 0) + countMatching(n, c, pi.namespace));
          }
        }
      }
      state.write(
        FILTER_KEY,
        new FilterState(
          cs,
          counts,
          cs.map((c) => (c.matcher(pi.labels) ? 1 : 0)),
        ),
      );
      return null;
    },
    addPod(state, pi, added, n) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (st) account(st, pi, added, n, 1);
    },
    removePod(state, pi, removed, n) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (st) account(st, pi, removed, n, -1);
    },
    filter(state, _pi, n) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (!st) return null;
      const l = n.labels ?? {};
      for (let i = 0; i < st.constraints.length; i++) {
        const c = st.constraints[i];
        const v = l[c.topologyKey];
        if (v === undefined) return REJECT_SPREAD_MISSING_LABEL;
        const skew = (st.counts[i].get(v) ?? 0) + st.selfMatch[i] - st.min(i);
        if (skew > c.maxSkew) return REJECT_SPREAD;
      }
      return null;
    },
    preScore(state, pi, nodes) {
      const cs = constraintsOf(pi, 'ScheduleAnyway');
      if (cs.length === 0) return Status.skip();
      // The pod's own constraints need every topology key on a node; system defaults score whatever
      // keys a node has (clusters without zones still spread by hostname).
      const requireAll = (pi.pod.spec.topologySpreadConstraints ?? []).length > 0;
      const counts = cs.map(() => new Map<string, number>());
      const ignored = nodes.map((n) => requireAll && !hasAllKeys(n, cs));
      const sizes = cs.map(() => 0);
      for (let j = 0; j < nodes.length; j++) {
        if (ignored[j]) continue;
        const l = nodes[j].labels ?? {};
        for (let i = 0; i < cs.length; i++) {
          const v = l[cs[i].topologyKey];
          if (v === undefined) continue;
          if (cs[i].topologyKey === HOSTNAME_LABEL) sizes[i]++;
          else if (!counts[i].has(v)) {
            counts[i].set(v, 0);
            sizes[i]++;
          }
        }
      }
      if (cs.some((c) => c.topologyKey !== HOSTNAME_LABEL && counts[cs.indexOf(c)].size > 0)) {
        for (const n of handle.snapshot.list()) {
          const l = n.labels;
          if (!l || n.pods.length === 0 || (requireAll && !hasAllKeys(n, cs))) continue;
          for (let i = 0; i < cs.length; i++) {
            const c = cs[i];
            const v = l[c.topologyKey];
            if (
              c.topologyKey === HOSTNAME_LABEL ||
              v === undefined ||
              !counts[i].has(v) ||
              !nodeIncluded(c, pi, n)
            )
              continue;
            counts[i].set(v, counts[i].get(v)! + countMatching(n, c, pi.namespace));
          }
        }
      }
      // Hostname constraints: count the matching pods once through the cluster-wide label index, reading the
      // selector's rarest pair, instead of each scored node's pods (with the defaults every pod of a
      // workload carries the common labels of its whole load, so the first pair often matched them all).
      let podsOnScored = 0;
      for (const n of nodes) podsOnScored += n.pods.length;
      const hostCounts = cs.map((c) => (c.topologyKey === HOSTNAME_LABEL ? hostnameCounts(c, pi.namespace, podsOnScored) : undefined));
      const st: ScoreState = {
        constraints: cs,
        weights: sizes.map((s) => Math.log(s + 2)),
        counts,
        hostCounts,
        ignored,
        idx: 0,
      };
      state.write(SCORE_KEY, st);
      return null;
    },
    score(state, pi, n) {
      const st = state.read<ScoreState>(SCORE_KEY)!;
      const j = st.idx++;
      if (st.ignored[j]) return 0;
      let score = 0;
      for (let i = 0; i < st.constraints.length; i++) {
        const c = st.constraints[i];
        const v = n.labels?.[c.topologyKey];
        if (v === undefined) continue;
        const host = st.hostCounts[i];
        const cnt =
          c.topologyKey !== HOSTNAME_LABEL
            ? (st.counts[i].get(v) ?? 0)
            : host
              ? (host.get(n.node.metadata.name!) ?? 0)
              : countMatching(n, c, pi.namespace);
        score += cnt * st.weights[i] + (c.maxSkew - 1);
      }
      return Math.round(score);
    },
    normalizeScore(state, _pi, scores) {
      const st = state.read<ScoreState>(SCORE_KEY);
      if (!st) return;
      st.idx = 0;
      let min = Number.POSITIVE_INFINITY;
      let max = 0;
      for (let j = 0; j < scores.length; j++) {
        if (st.ignored[j]) continue;
        if (scores[j] < min) min = scores[j];
        if (scores[j] > max) max = scores[j];
      }
      for (let j = 0; j < scores.length; j++) {
        if (st.ignored[j]) scores[j] = 0;
        else if (max === 0) scores[j] = MAX_NODE_SCORE;
        else scores[j] = Math.trunc((MAX_NODE_SCORE * (max + min - scores[j])) / max);
      }
    },
    eventsToRegister: () => [
      { resource: 'Pod', action: '*' },
      { resource: 'Node', action: '*' },
    ],
  };
};
