import {
  MAX_NODE_SCORE,
  type CycleState,
  type FilterPlugin,
  type PluginFactory,
  type PreFilterPlugin,
  type PreScorePlugin,
  type ScorePlugin,
} from '../framework.js';
import type { NodeInfo } from '../node-info.js';
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

type Counts = Map<string, number>;

function inc(m: Counts, k: string, d: number): void {
  const v = (m.get(k) ?? 0) + d;
  if (v === 0) m.delete(k);
  else m.set(k, v);
}

class FilterState {
  constructor(
    /** topologyKey\0value → existing pods whose required anti-affinity matches the incoming pod. */
    public existingAnti: Counts,
    /** topologyKey\0value → existing pods matching all of the incoming pod's affinity terms. */
    public affinity: Counts,
    /** topologyKey\0value → existing pods matching one of the incoming pod's anti-affinity terms. */
    public anti: Counts,
  ) {}
  clone(): FilterState {
    return new FilterState(new Map(this.existingAnti), new Map(this.affinity), new Map(this.anti));
  }
}

type Plugin = PreFilterPlugin & FilterPlugin & PreScorePlugin & ScorePlugin;

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
  const account = (st: FilterState, pi: PodInfo, ep: PodInfo, node: NodeInfo, sign: number) => {
    const labels = node.labels;
    if (!labels) return;
    for (const t of ep.requiredAntiAffinity) {
      const v = labels[t.topologyKey];
      if (v !== undefined && matches(t, pi)) inc(st.existingAnti, `${t.topologyKey}\0${v}`, sign);
    }
    if (pi.requiredAffinity.length > 0 && matchesAll(pi.requiredAffinity, ep)) {
      for (const t of pi.requiredAffinity) {
        const v = labels[t.topologyKey];
        if (v !== undefined) inc(st.affinity, `${t.topologyKey}\0${v}`, sign);
      }
    }
    for (const t of pi.requiredAntiAffinity) {
      const v = labels[t.topologyKey];
      if (v !== undefined && matches(t, ep)) inc(st.anti, `${t.topologyKey}\0${v}`, sign);
    }
  };

  return {
    name: InterPodAffinity,
    preFilter(state, pi, nodes) {
      const withAnti = handle.snapshot.havePodsWithRequiredAntiAffinity();
      if (pi.requiredAffinity.length === 0 && pi.requiredAntiAffinity.length === 0 && withAnti.length === 0) {
        return Status.skip();
      }
      const st = new FilterState(new Map(), new Map(), new Map());
      for (const n of withAnti) {
        const labels = n.labels;
        if (!labels) continue;
        for (const ep of n.podsWithRequiredAntiAffinity) {
          for (const t of ep.requiredAntiAffinity) {
            const v = labels[t.topologyKey];
            if (v !== undefined && matches(t, pi)) inc(st.existingAnti, `${t.topologyKey}\0${v}`, 1);
          }
        }
      }
      if (pi.requiredAffinity.length > 0 || pi.requiredAntiAffinity.length > 0) {
        const aff = pi.requiredAffinity;
        const affEq = aff.length > 0 ? aff[0].matcher.firstEq : undefined;
        for (const n of nodes) {
          const labels = n.labels;
          if (!labels || n.pods.length === 0) continue;
          if (aff.length > 0) {
            for (const ep of n.candidatePods(affEq)) {
              if (!matchesAll(aff, ep)) continue;
              for (const t of aff) {
                const v = labels[t.topologyKey];
                if (v !== undefined) inc(st.affinity, `${t.topologyKey}\0${v}`, 1);
              }
            }
          }
          for (const t of pi.requiredAntiAffinity) {
            const v = labels[t.topologyKey];
            if (v === undefined) continue;
            for (const ep of n.candidatePods(t.matcher.firstEq)) {
              if (matches(t, ep)) inc(st.anti, `${t.topologyKey}\0${v}`, 1);
            }
          }
        }
      }
      state.write(FILTER_KEY, st);
      return null;
    },
    addPod(state, pi, added, node) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (st) account(st, pi, added, node, 1);
    },
    removePod(state, pi, removed, node) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (st) account(st, pi, removed, node, -1);
    },
    filter(state, pi, node) {
      const st = state.read<FilterState>(FILTER_KEY);
      if (!st) return null;
      const labels = node.labels ?? {};
      if (pi.requiredAffinity.length > 0) {
        let exist = true;
        for (const t of pi.requiredAffinity) {
          const v = labels[t.topologyKey];
          if (v === undefined) return Status.unresolvable(ERR_AFFINITY);
          if ((st.affinity.get(`${t.topologyKey}\0${v}`) ?? 0) <= 0) exist = false;
        }
        // The first pod of a group with affinity to itself may go anywhere.
        if (!exist && !(st.affinity.size === 0 && matchesAll(pi.requiredAffinity, pi))) {
          return Status.unresolvable(ERR_AFFINITY);
        }
      }
      if (st.anti.size > 0) {
        for (const t of pi.requiredAntiAffinity) {
          const v = labels[t.topologyKey];
          if (v !== undefined && (st.anti.get(`${t.topologyKey}\0${v}`) ?? 0) > 0)
            return Status.unschedulable(ERR_ANTI_AFFINITY);
        }
      }
      if (st.existingAnti.size > 0) {
        for (const k in labels) {
          if ((st.existingAnti.get(`${k}\0${labels[k]}`) ?? 0) > 0)
            return Status.unschedulable(ERR_EXISTING_ANTI_AFFINITY);
        }
      }
      return null;
    },
    preScore(state, pi, nodes) {
      const hasPreferred = pi.preferredAffinity.length > 0 || pi.preferredAntiAffinity.length > 0;
      const withAffinity = handle.snapshot.havePodsWithAffinity();
      if (!hasPreferred && withAffinity.length === 0) return Status.skip();
      const scores = new Map<string, Map<string, number>>();
      const add = (tk: string, node: NodeInfo, w: number) => {
        const v = node.labels?.[tk];
        if (v === undefined || w === 0) return;
        let m = scores.get(tk);
        if (!m) {
          m = new Map();
          scores.set(tk, m);
        }
        m.set(v, (m.get(v) ?? 0) + w);
      };
      const scan = hasPreferred ? handle.snapshot.list() : withAffinity;
      for (const n of scan) {
        const pods = hasPreferred ? n.pods : n.podsWithAffinity;
        for (const ep of pods) {
          for (const t of pi.preferredAffinity) if (matches(t, ep)) add(t.topologyKey, n, t.weight);
          for (const t of pi.preferredAntiAffinity) if (matches(t, ep)) add(t.topologyKey, n, -t.weight);
          if (hardWeight > 0)
            for (const t of ep.requiredAffinity) if (matches(t, pi)) add(t.topologyKey, n, hardWeight);
          if (!ignoreExistingPreferred) {
            for (const t of ep.preferredAffinity) if (matches(t, pi)) add(t.topologyKey, n, t.weight);
            for (const t of ep.preferredAntiAffinity) if (matches(t, pi)) add(t.topologyKey, n, -t.weight);
          }
        }
      }
      state.write(SCORE_KEY, scores);
      void nodes;
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
