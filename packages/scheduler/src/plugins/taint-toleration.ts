import type { FilterPlugin, PluginFactory, PreScorePlugin, ScorePlugin } from '../framework.js';
import { Status } from '../status.js';
import type { Taint, Toleration } from '../types.js';
import { TaintToleration } from './names.js';
import { defaultNormalizeScore } from './normalize.js';

export function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  if (!t.key && t.operator !== 'Exists') return false;
  if (t.operator === 'Exists') return true;
  return (t.value ?? '') === (taint.value ?? '');
}

const HARD_EFFECTS = ['NoSchedule', 'NoExecute'];
export const NO_SCHEDULE_ONLY = ['NoSchedule'];

export function untoleratedTaint(
  taints: Taint[] | undefined,
  tolerations: Toleration[] | undefined,
  effects: string[],
): Taint | undefined {
  if (taints === undefined || taints.length === 0) return undefined;
  for (const taint of taints) {
    if (!effects.includes(taint.effect)) continue;
    if (!(tolerations ?? []).some((t) => tolerates(t, taint))) return taint;
  }
  return undefined;
}

type Plugin = FilterPlugin & PreScorePlugin & ScorePlugin;

/** Filter: NoSchedule/NoExecute taints must be tolerated. Score: fewer intolerable PreferNoSchedule is better. */
export const newTaintToleration: PluginFactory = (): Plugin => ({
  name: TaintToleration,
  filter(_s, pi, node) {
    const taint = untoleratedTaint(node.taints, pi.pod.spec.tolerations, HARD_EFFECTS);
    if (!taint) return null;
    return Status.unresolvable(`node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`);
  },
  preScore(state, pi) {
    const tols = (pi.pod.spec.tolerations ?? []).filter((t) => !t.effect || t.effect === 'PreferNoSchedule');
    state.write(TaintToleration, tols);
    return null;
  },
  score(state, _pi, node) {
    const tols = state.read<Toleration[]>(TaintToleration) ?? [];
    let n = 0;
    for (const taint of node.node.spec?.taints ?? []) {
      if (taint.effect === 'PreferNoSchedule' && !tols.some((t) => tolerates(t, taint))) n++;
    }
    return n;
  },
  normalizeScore(_s, _pi, scores) {
    defaultNormalizeScore(scores, true);
  },
  eventsToRegister: () => [{ resource: 'Node', action: '*' }],
});
