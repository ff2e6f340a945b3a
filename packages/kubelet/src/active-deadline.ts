// spec.activeDeadlineSeconds, as the kubelet's active deadline handler applies it: counted from the pod's
// status.startTime; once past, the pod is killed and fails with reason DeadlineExceeded.
import type { Pod } from '@kemu/core';

export const DEADLINE_EXCEEDED = {
  reason: 'DeadlineExceeded',
  message: 'Pod was active on the node longer than the specified deadline',
} as const;

/** Milliseconds left before the pod's active deadline (negative once past), or undefined without one. */
export function activeDeadlineRemainingMs(pod: Pod, now = Date.now()): number | undefined {
  const secs = pod.spec.activeDeadlineSeconds;
  const start = pod.status?.startTime;
  if (secs === undefined || secs === null || !start) return undefined;
  return Date.parse(start) + secs * 1000 - now;
}
