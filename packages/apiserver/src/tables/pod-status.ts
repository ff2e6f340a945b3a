// The pod columns kubectl shows that are derived rather than read: READY (sidecars counted), STATUS
// (Init:0/1, CrashLoopBackOff, Completed, Terminating, ...) and RESTARTS with the time of the last one.
import type { ContainerStatus, Pod } from '@kemu/core';
import { age } from './human-duration.js';

const isSidecar = (pod: Pod, name: string) => pod.spec?.initContainers?.find((c) => c.name === name)?.restartPolicy === 'Always';

/** `ready/total`, counting sidecar init containers as the printers upstream do. */
export function podReady(pod: Pod): string {
  const statuses = pod.status?.containerStatuses ?? [];
  let total = pod.spec?.containers?.length ?? 0;
  let ready = statuses.filter((c) => c.ready).length;
  for (const c of pod.spec?.initContainers ?? []) if (c.restartPolicy === 'Always') total++;
  for (const c of pod.status?.initContainerStatuses ?? []) if (isSidecar(pod, c.name) && c.started && c.ready) ready++;
  return `${ready}/${total}`;
}

/** Restart count, with `(5m ago)` when a container has finished before. */
export function podRestarts(pod: Pod, now: number): string {
  let restarts = 0;
  let last = 0;
  const count = (c: ContainerStatus) => {
    restarts += c.restartCount ?? 0;
    const fin = c.lastState?.terminated?.finishedAt;
    if (fin) last = Math.max(last, Date.parse(fin));
  };
  for (const c of pod.status?.initContainerStatuses ?? []) if (isSidecar(pod, c.name)) count(c);
  for (const c of pod.status?.containerStatuses ?? []) count(c);
  return last && restarts ? `${restarts} (${age(new Date(last).toISOString(), now)} ago)` : String(restarts);
}

/** The STATUS column. */
export function podStatusReason(pod: Pod): string {
  const s = pod.status ?? {};
  let reason: string = s.reason || s.phase || 'Pending';
  const scheduled = s.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'SchedulingGated') reason = 'SchedulingGated';
  const inits = pod.spec?.initContainers ?? [];
  let initializing = false;
  (s.initContainerStatuses ?? []).forEach((c, i) => {
    if (initializing) return;
    const t = c.state?.terminated;
    if (t && t.exitCode === 0) return;
    if (isSidecar(pod, c.name) && c.started) return;
    if (t) reason = t.reason ? `Init:${t.reason}` : t.signal ? `Init:Signal:${t.signal}` : `Init:ExitCode:${t.exitCode}`;
    else if (c.state?.waiting?.reason && c.state.waiting.reason !== 'PodInitializing') reason = `Init:${c.state.waiting.reason}`;
    else reason = `Init:${i}/${inits.length}`;
    initializing = true;
  });
  if (!initializing) {
    let hasRunning = false;
    for (const c of [...(s.containerStatuses ?? [])].reverse()) {
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state?.terminated?.reason) reason = c.state.terminated.reason;
      else if (c.state?.terminated) reason = c.state.terminated.signal ? `Signal:${c.state.terminated.signal}` : `ExitCode:${c.state.terminated.exitCode}`;
      else if (c.ready && c.state?.running) hasRunning = true;
    }
    if (reason === 'Completed' && hasRunning) {
      const ready = s.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      reason = ready ? 'Running' : 'NotReady';
    }
  }
  if (pod.metadata.deletionTimestamp) reason = s.reason === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}
