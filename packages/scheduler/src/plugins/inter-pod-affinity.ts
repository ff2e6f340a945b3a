import {
  MAX_NODE_SCORE,
  type CycleState,
  type FilterPlugin,
  type PluginFactory,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
} from '../framework.js';
import { type AffinityTerm, type PodInfo, termMatches } from '../pod-info.js';
import { Status } from '../status.js';
import { InterPodAffinity } from './names.js';

export const ERR_AFFINITY = "node(s) didn't match pod affinity rules";
export const ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules";
export const ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules";

export interface InterPodAffinityArgs {
  hardPodAffinityWeight?: number;
  ignorePreferredTermsOfExistingPods?: boolean;
}

const FILTER_KEY = `${InterPodAffinity}/filter`;
const SCORE_KEY = `${InterPodAffinity}/score`;

/** topologyKey → topology value → number of pods. */
type Counts = Map<string, Map<string, number>>;

/** Inner maps this plugin created (others may be live cache maps and are copied before a write). */
const owned = new WeakSet<Map<string, number>>();

function inc(m: Counts, tk: string, v: string, d: number): void {
  let inner = m.get(tk);
  if (!inner || !owned.has(inner)) {
    inner = new Map(inner ?? []);
    owned.add(inner);
    m.set(tk, inner);
  }
  const n = (inner.get(v) ?? 0) + d;
  if (n === 0) inner.delete(v);
  else inner.set(v, n);
  if (inner.size === 0) m.delete(tk);
}

function get(m: Counts, tk: string, v: string): number {
  return m.get(tk)?.get(v) ?? 0;
}

function copy(m: Counts): Counts {
  return new Map(
    [...m].map(([k, v]) => {
      const c = new Map(v);
      owned.add(c);
      return [k, c];
    }),
  );
}

class FilterState {
  constructor(
    /** Existing pods whose required anti-affinity matches the incoming pod. */
    public existingAnti: Counts,
    /** Existing pods matching all of the incoming pod's affinity terms. */
    public affinity: Counts,
    /** Existing pods matching one of the incoming pod's anti-affinity terms. */
    public anti: Counts,
  ) {}
  clone(): FilterState {
    return new FilterState(copy(this.existingAnti), copy(this.affinity), copy(this.anti));
  }
}

type Plugin = PreFilterPlugin & FilterPlugin & PreScorePlugin & ScorePlugin;

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_AFFINITY = Status.unresolvable(ERR_AFFINITY).withPlugin(InterPodAffinity);
const REJECT_ANTI_AFFINITY = Status.unschedulable(ERR_ANTI_AFFINITY).withPlugin(InterPodAffinity);
const REJECT_EXISTING_ANTI_AFFINITY =
  Status.unschedulable(ERR_EXISTING_ANTI_AFFINITY).withPlugin(InterPodAffinity);

export const newInterPodAffinity: PluginFactory = (
  args: InterPodAffinityArgs | undefined,
  handle,
): Plugin => {
  const hardWeight = args?.hardPodAffinityWeight ?? 1;
  const ignoreExistingPreferred = args?.ignorePreferredTermsOfExistingPods ?? false;
  const nsLabels = handle.cluster.nsLabels;
  const matches = (t: AffinityTerm, p: PodInfo) => termMatches(t, p.namespace, p.labels, nsLabels);
  const matchesAll = (terms: AffinityTerm[], p: PodInfo) => terms.every((t) => matches(t, p));

  /** Update counts for one existing pod on a node (sign +1 add, -1 remove). */
  const account = (
    st: FilterState,
    pi: PodInfo,
    ep: PodInfo,
    labels: Record<string, string> | undefined,
    sign: number,
  ) => {
    if (!labels) return;
    for (const t of ep.requiredAntiAffinity) {
      const v = labels[t.topologyKey];
      if (v !== undefined && matches(t, pi)) inc(st.existingAnti, t.topologyKey, v, sign);
    }
    if (pi.requiredAffinity.length > 0 && matchesAll(pi.requiredAffinity, ep)) {
      for (const t of pi.requiredAffinity) {
        const v = labels[t.topologyKey];
        if (v !== undefined) inc(st.affinity, t.topologyKey, v, sign);
      }
    }
    for (const t of pi.requiredAntiAffinity) {
      const v = labels[t.topologyKey];
      if (v !== undefined && matches(t, ep)) inc(st.anti, t.topologyKey, v, sign);
    }
  };
  const snapshot = handle.snapshot;
  const labelsOf = (ep: PodInfo) => ep.node?.labels;

  return {
    name: InterPodAffinity,
    preFilter(state, pi) {
      const withAnti = snapshot.podsWithRequiredAntiAffinity();
      if (pi.requiredAffinity.length === 0 && pi.requiredAntiAffinity.length === 0 && withAnti.size === 0) {
        return Status.skip();
      }
      const st = new FilterState(new Map(), new Map(), new Map());
      // Identical terms of many existing pods are grouped in the cache with live counts.
      for (const g of snapshot.antiAffinityGroups()) {
        if (g.counts.size === 0 || !matches(g.term, pi)) continue;
        const tk = g.term.topologyKey;
        const cur = st.existingAnti.get(tk);
        if (!cur) st.existingAnti.set(tk, g.counts);
        else {
          const merged = new Map(cur);
          for (const [v, n] of g.counts) merged.set(v, (merged.get(v) ?? 0) + n);
          st.existingAnti.set(tk, merged);
        }
      }
      const aff = pi.requiredAffinity;
      if (aff.length > 0) {
        for (const ep of snapshot.podsWithLabel(aff[0].matcher.firstEq)) {
          if (!matchesAll(aff, ep)) continue;
          const labels = labelsOf(ep);
          if (!labels) continue;
          for (const t of aff) {
            const v = labels[t.topologyKey];
            if (v !== undefined) inc(st.affinity, t.topologyKey, v, 1);
          }
        }
      }
      for (const t of pi.requiredAntiAffinity) {
        if (t.matcher.singleEq && !t.nsSelector && t.namespaces.size === 1) {
          // One label equality in one namespace: the cache keeps these counts live.
          const counts = snapshot.eqTopologyCounts([...t.namespaces][0], t.matcher.firstEq!, t.topologyKey);
          if (counts.size === 0) continue;
          const cur = st.anti.get(t.topologyKey);
          if (!cur) st.anti.set(t.topologyKey, counts);
          else {
            const merged = new Map(cur);
            for (const [v, n] of counts) merged.set(v, (merged.get(v) ?? 0) + n);
            st.anti.set(t.topologyKey, merged);
          }
          continue;
        }
        for (const ep of snapshot.podsWithLabel(t.matcher.firstEq)) {
          if (!matches(t, ep)) continue;
          const v = labelsOf(ep)?.[t.topologyKey];
          if (v !== undefined) inc(st.anti, t.topologyKey, v, 1);
        }
      }
      state.write(FILTER_KEY, st);
      return null;
    },
    addPod(state, pi, added, node) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (st) account(st, pi, added, node.labels, 1);
    },
    removePod(state, pi, removed, node) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (st) account(st, pi, removed, node.labels, -1);
    },
    filter(state, pi, node) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (!st) return null;
      const labels = node.labels ?? {};
      if (pi.requiredAffinity.length > 0) {
        let exist = true;
        for (const t of pi.requiredAffinity) {
          const v = labels[t.topologyKey];
          if (v === undefined) return REJECT_AFFINITY;
          if (get(st.affinity, t.topologyKey, v) <= 0) exist = false;
        }
        // The first pod of a group with affinity to itself may go anywhere.
        if (!exist && !(st.affinity.size === 0 && matchesAll(pi.requiredAffinity, pi))) {
          return REJECT_AFFINITY;
        }
      }
      if (st.anti.size > 0) {
        for (const t of pi.requiredAntiAffinity) {
          const v = labels[t.topologyKey];
          if (v !== undefined && get(st.anti, t.topologyKey, v) > 0) return REJECT_ANTI_AFFINITY;
        }
      }
      if (st.existingAnti.size > 0) {
        for (const [tk, m] of st.existingAnti) {
          const v = labels[tk];
          if (v !== undefined && (m.get(v) ?? 0) > 0) return REJECT_EXISTING_ANTI_AFFINITY;
        }
      }
      return null;
    },
    preScore(state, pi) {
      const hasPreferred = pi.preferredAffinity.length > 0 || pi.preferredAntiAffinity.length > 0;
      const withAffinity = snapshot.podsWithAffinity();
      if (!hasPreferred && withAffinity.size === 0) return Status.skip();
      const scores = new Map<string, Map<string, number>>();
      const add = (tk: string, labels: Record<string, string>, w: number) => {
        const v = labels[tk];
        if (v === undefined || w === 0) return;
        inc(scores, tk, v, w);
      };
      for (const ep of hasPreferred ? snapshot.podsWithLabel(undefined) : withAffinity) {
        const labels = labelsOf(ep);
        if (!labels) continue;
        for (const t of pi.preferredAffinity) if (matches(t, ep)) add(t.topologyKey, labels, t.weight);
        for (const t of pi.preferredAntiAffinity) if (matches(t, ep)) add(t.topologyKey, labels, -t.weight);
        if (hardWeight > 0)
          for (const t of ep.requiredAffinity) if (matches(t, pi)) add(t.topologyKey, labels, hardWeight);
        if (!ignoreExistingPreferred) {
          for (const t of ep.preferredAffinity) if (matches(t, pi)) add(t.topologyKey, labels, t.weight);
          for (const t of ep.preferredAntiAffinity) if (matches(t, pi)) add(t.topologyKey, labels, -t.weight);
        }
      }
      state.write(SCORE_KEY, scores);
      return null;
    },
    score(state, _pi, node) {
      const scores = state.read<Map<string, Map<string, number>>>(SCORE_KEY);
      if (!scores || scores.size === 0) return 0;
      let s = 0;
      const labels = node.labels;
      if (!labels) return 0;
      for (const [tk, m] of scores) {
        const v = labels[tk];
        if (v !== undefined) s += m.get(v) ?? 0;
      }
      return s;
    },
    normalizeScore(state: CycleState, _pi, scores) {
      const m = state.read<Map<string, Map<string, number>>>(SCORE_KEY);
      if (!m || m.size === 0) return;
      let min = Number.POSITIVE_INFINITY;
      let max = Number.NEGATIVE_INFINITY;
      for (const s of scores) {
        if (s < min) min = s;
        if (s > max) max = s;
      }
      const diff = max - min;
      for (let i = 0; i < scores.length; i++)
        scores[i] = diff > 0 ? Math.trunc(MAX_NODE_SCORE * ((scores[i] - min) / diff)) : 0;
    },
    eventsToRegister: () => [
      { resource: 'Pod', action: '*' },
      { resource: 'Node', action: '*' },
    ],
  };
};
