import type {
  CycleState,
  FilterPlugin,
  PluginFactory,
  PreFilterPlugin,
  PreScorePlugin,
  ScorePlugin,
} from '../framework.js';
import { mapMatches, nodeSelectorMatches, nodeSelectorTermMatches } from '../labels.js';
import type { NodeInfo } from '../node-info.js';
import type { PodInfo } from '../pod-info.js';
import { Status } from '../status.js';
import type { NodeSelector, PreferredSchedulingTerm } from '../types.js';
import { NodeAffinity } from './names.js';
import { defaultNormalizeScore } from './normalize.js';

export const ERR_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector";

export interface NodeAffinityArgs {
  addedAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector;
    preferredDuringSchedulingIgnoredDuringExecution?: PreferredSchedulingTerm[];
  };
}

/** Required part of a pod's node placement: nodeSelector and required node affinity. */
export function podMatchesNodeSelectorAndAffinity(pi: PodInfo, node: NodeInfo): boolean {
  const spec = pi.pod.spec;
  if (spec.nodeSelector && !mapMatches(spec.nodeSelector, node.labels)) return false;
  const req = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (req && !nodeSelectorMatches(req, node.labels, node.name)) return false;
  return true;
}

type Plugin = PreFilterPlugin & FilterPlugin & PreScorePlugin & ScorePlugin;

// Filter results are shared, immutable values: rejecting thousands of nodes allocates nothing.
const REJECT_NODE_AFFINITY = Status.unresolvable(ERR_NODE_AFFINITY).withPlugin(NodeAffinity);

export const newNodeAffinity: PluginFactory = (args: NodeAffinityArgs | undefined): Plugin => {
  const added = args?.addedAffinity;
  const preferred = (state: CycleState) =>
    state.read<PreferredSchedulingTerm[]>(`${NodeAffinity}/pref`) ?? [];
  return {
    name: NodeAffinity,
    preFilter(state, pi) {
      const spec = pi.pod.spec;
      const req = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
      if (!spec.nodeSelector && !req && !added?.requiredDuringSchedulingIgnoredDuringExecution)
        return Status.skip();
      // Terms that only pin metadata.name let the framework look at just those nodes.
      const terms = req?.nodeSelectorTerms ?? [];
      if (terms.length > 0) {
        const names = new Set<string>();
        for (const t of terms) {
          const f = t.matchFields?.find((r) => r.key === 'metadata.name' && r.operator === 'In');
          if (!f || (t.matchExpressions?.length ?? 0) > 0 || (t.matchFields?.length ?? 0) > 1) return null;
          for (const v of f.values ?? []) names.add(v);
        }
        state.nodeNames = state.nodeNames ? new Set([...state.nodeNames].filter((n) => names.has(n))) : names;
        if (state.nodeNames.size === 0) return REJECT_NODE_AFFINITY;
      }
      return null;
    },
    filter(_s, pi, node) {
      const a = added?.requiredDuringSchedulingIgnoredDuringExecution;
      if (a && !nodeSelectorMatches(a, node.labels, node.name)) return REJECT_NODE_AFFINITY;
      return podMatchesNodeSelectorAndAffinity(pi, node) ? null : REJECT_NODE_AFFINITY;
    },
    preScore(state, pi) {
      const terms = [
        ...(pi.pod.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []),
        ...(added?.preferredDuringSchedulingIgnoredDuringExecution ?? []),
      ];
      if (terms.length === 0) return Status.skip();
      state.write(`${NodeAffinity}/pref`, terms);
      return null;
    },
    score(state, _pi, node) {
      let sum = 0;
      for (const t of preferred(state)) {
        if (t.weight !== 0 && nodeSelectorTermMatches(t.preference, node.labels, node.name)) sum += t.weight;
      }
      return sum;
    },
    normalizeScore(_s, _pi, scores) {
      defaultNormalizeScore(scores, false);
    },
    eventsToRegister: () => [{ resource: 'Node', action: '*' }],
  };
};
