// Which pods a ReplicaSet deletes first when it scales down (upstream ActivePodsWithRanks / getPodsToDelete):
// unassigned before assigned; Pending before Unknown before Running; not ready before ready; pods on nodes
// crowded with their siblings first; ready for less time first; more restarts first; newer first.
import type { Pod } from '@kemu/core';
import { isPodReady, podReadyCondition } from './pod-util.js';

const PHASE_RANK: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

function restarts(p: Pod): number {
  return (p.status?.containerStatuses ?? []).reduce((n, c) => Math.max(n, c.restartCount ?? 0), 0);
}

function time(s: string | undefined): number {
  return s ? Date.parse(s) : 0;
}

/**
 * Negative when `a` should be deleted before `b`. `rank` counts a pod's siblings on its node (more first).
 */
export function compareForDeletion(a: Pod, b: Pod, rank: Map<Pod, number>): number {
  const an = a.spec.nodeName ? 1 : 0;
  const bn = b.spec.nodeName ? 1 : 0;
  if (an !== bn) return an - bn;
  const ap = PHASE_RANK[a.status?.phase ?? 'Pending'] ?? 0;
  const bp = PHASE_RANK[b.status?.phase ?? 'Pending'] ?? 0;
  if (ap !== bp) return ap - bp;
  const ar = isPodReady(a) ? 1 : 0;
  const br = isPodReady(b) ? 1 : 0;
  if (ar !== br) return ar - br;
  const ak = rank.get(a) ?? 0;
  const bk = rank.get(b) ?? 0;
  if (ak !== bk) return bk - ak;
  if (ar && br) {
    // Ready for less time first: the later transition goes first.
    const at = time(podReadyCondition(a)?.lastTransitionTime);
    const bt = time(podReadyCondition(b)?.lastTransitionTime);
    if (at !== bt) return bt - at;
  }
  const rs = restarts(b) - restarts(a);
  if (rs !== 0) return rs;
  const ac = time(a.metadata.creationTimestamp);
  const bc = time(b.metadata.creationTimestamp);
  if (ac !== bc) return bc - ac;
  return 0;
}

/** The `n` pods to delete from `filtered`, ranked against `related` (all active pods of the owner's siblings). */
export function podsToDelete(filtered: Pod[], related: Pod[], n: number): Pod[] {
  if (n >= filtered.length) return [...filtered];
  const perNode = new Map<string, number>();
  for (const p of related) if (p.spec.nodeName) perNode.set(p.spec.nodeName, (perNode.get(p.spec.nodeName) ?? 0) + 1);
  const rank = new Map<Pod, number>();
  for (const p of filtered) rank.set(p, p.spec.nodeName ? (perNode.get(p.spec.nodeName) ?? 0) : 0);
  return [...filtered].sort((a, b) => compareForDeletion(a, b, rank)).slice(0, n);
}
