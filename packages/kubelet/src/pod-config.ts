// Which pod updates from the API server the kubelet acts on (upstream's pod config merge): a change to what
// the pod asks for (spec, labels, annotations, deletion) is an update its worker syncs; a change to status
// alone only refreshes the kubelet's copy, since the kubelet is the source of truth of the status it writes
// (and hears back every write it makes). The exception is readiness gates: their conditions are set by
// others and decide the Ready condition the kubelet computes.
import { isDeepStrictEqual } from 'node:util';
import type { Pod } from '@kemu/core';

/** upstream podsDifferSemantically: the parts of a pod whose change the pod's worker must act on. */
export function podsDifferSemantically(a: Pod, b: Pod): boolean {
  const ma = a.metadata;
  const mb = b.metadata;
  return (
    ma.deletionTimestamp !== mb.deletionTimestamp ||
    ma.deletionGracePeriodSeconds !== mb.deletionGracePeriodSeconds ||
    !isDeepStrictEqual(ma.labels ?? {}, mb.labels ?? {}) ||
    !isDeepStrictEqual(ma.annotations ?? {}, mb.annotations ?? {}) ||
    !isDeepStrictEqual(a.spec, b.spec)
  );
}

/** Whether an update of `old` to `pod` needs a sync: a semantic change, or readiness gate conditions that moved. */
export function needsSync(old: Pod, pod: Pod): boolean {
  if (podsDifferSemantically(old, pod)) return true;
  return !!pod.spec?.readinessGates?.length && !isDeepStrictEqual(old.status?.conditions, pod.status?.conditions);
}
