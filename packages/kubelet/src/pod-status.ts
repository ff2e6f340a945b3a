// Pod status as the kubelet reports it: container statuses from the runtime, the phase by kubelet's
// getPhase rules, and the PodReadyToStartContainers / Initialized / ContainersReady / Ready conditions.
import type { Condition, Container, ContainerState, ContainerStatus, Pod, PodPhase, PodStatus } from '@kemu/core';
import { jsonEqual, podQOSClass, rfc3339 } from '@kemu/core';
import { cri } from '@kemu/proto';

export interface ObservedContainer {
  spec: Container;
  /** Latest runtime status, if a container was ever created for this spec. */
  current?: cri.ContainerStatus;
  /** The one before, for lastState. */
  previous?: cri.ContainerStatus;
  ready: boolean;
  started: boolean;
  /** Why it is waiting, when the kubelet is holding it back (CrashLoopBackOff, ErrImagePull, ...). */
  waiting?: { reason: string; message?: string };
}

const nsToRfc3339 = (ns: number | undefined) => (ns ? rfc3339(new Date(Math.floor(ns / 1e6))) : undefined);

function terminatedReason(s: cri.ContainerStatus): string {
  if (s.reason) return s.reason;
  return s.exitCode === 0 ? 'Completed' : 'Error';
}

function stateOf(s: cri.ContainerStatus | undefined, runtimeName: string): ContainerState | undefined {
  if (!s) return undefined;
  switch (s.state) {
    case cri.ContainerState.CONTAINER_RUNNING:
      return { running: { startedAt: nsToRfc3339(s.startedAt) } };
    case cri.ContainerState.CONTAINER_EXITED:
      return {
        terminated: {
          exitCode: s.exitCode ?? 0,
          reason: terminatedReason(s),
          ...(s.message ? { message: s.message } : {}),
          startedAt: nsToRfc3339(s.startedAt),
          finishedAt: nsToRfc3339(s.finishedAt),
          containerID: `${runtimeName}://${s.id}`,
        },
      };
    default:
      return undefined;
  }
}

export function containerStatus(o: ObservedContainer, runtimeName: string): ContainerStatus {
  const cur = o.current;
  let state = stateOf(cur, runtimeName);
  let lastState = stateOf(o.previous, runtimeName);
  if (o.waiting) {
    // Held back: the exited container becomes lastState and the container is waiting.
    if (cur?.state === cri.ContainerState.CONTAINER_EXITED) lastState = state;
    state = { waiting: { reason: o.waiting.reason, ...(o.waiting.message ? { message: o.waiting.message } : {}) } };
  }
  if (!state) state = { waiting: { reason: 'ContainerCreating' } };
  return {
    name: o.spec.name,
    state,
    lastState: lastState ?? {},
    ready: o.ready,
    restartCount: cur?.metadata?.attempt ?? 0,
    image: o.spec.image ?? '',
    imageID: cur?.imageRef ?? '',
    ...(cur ? { containerID: `${runtimeName}://${cur.id}` } : {}),
    started: o.started && cur?.state === cri.ContainerState.CONTAINER_RUNNING,
  };
}

/** kubelet's getPhase, over the already-built container statuses. */
export function podPhase(pod: Pod, init: ContainerStatus[], regular: ContainerStatus[]): PodPhase {
  const policy = pod.spec.restartPolicy ?? 'Always';
  const isSidecar = (name: string) => pod.spec.initContainers?.find((c) => c.name === name)?.restartPolicy === 'Always';
  let pendingInit = 0;
  let failedInit = 0;
  for (const s of init) {
    if (isSidecar(s.name)) {
      if (!s.state?.running && !s.started) pendingInit++;
      continue;
    }
    const t = s.state?.terminated;
    if (t && t.exitCode === 0) continue;
    if (t || s.lastState?.terminated) {
      const code = t?.exitCode ?? s.lastState?.terminated?.exitCode ?? 0;
      if (code !== 0) failedInit++;
    }
    pendingInit++;
  }
  if (failedInit > 0 && policy === 'Never') return 'Failed';
  if (pendingInit > 0) return 'Pending';

  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const s of regular) {
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    }
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

function condition(prev: Condition[] | undefined, type: string, ok: boolean, now: string, reason?: string, message?: string): Condition {
  const status = ok ? 'True' : 'False';
  const old = prev?.find((c) => c.type === type);
  return {
    type,
    status,
    lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now,
    ...(reason && !ok ? { reason } : {}),
    ...(message && !ok ? { message } : {}),
  };
}

export interface StatusInput {
  pod: Pod;
  nodeIP: string;
  podIPs: string[];
  sandboxReady: boolean;
  init: ObservedContainer[];
  regular: ObservedContainer[];
  /** Ephemeral (debug) containers: reported, never part of the phase or readiness. */
  ephemeral?: ObservedContainer[];
  runtimeName: string;
  now?: Date;
}

/** The conditions the kubelet owns; any other (PodScheduled, readiness gates, DisruptionTarget) is kept. */
const KUBELET_CONDITIONS = new Set(['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady']);

/** Why the readiness gates keep the pod unready (upstream's messages), or undefined when they are all True. */
function readinessGatesMessage(pod: Pod): string | undefined {
  const msgs: string[] = [];
  for (const g of pod.spec.readinessGates ?? []) {
    const c = pod.status?.conditions?.find((x) => x.type === g.conditionType);
    if (!c) msgs.push(`corresponding condition of pod readiness gate ${JSON.stringify(g.conditionType)} does not exist.`);
    else if (c.status !== 'True') msgs.push(`the status of pod readiness gate ${JSON.stringify(g.conditionType)} is not "True", but ${c.status}`);
  }
  return msgs.length ? msgs.join(', ') : undefined;
}

export function computePodStatus(i: StatusInput): PodStatus {
  const now = rfc3339(i.now);
  const prev = i.pod.status;
  const init = i.init.map((o) => containerStatus(o, i.runtimeName));
  const regular = i.regular.map((o) => containerStatus(o, i.runtimeName));
  const phase = podPhase(i.pod, init, regular);
  const initialized = init.every(
    (s) => s.state?.terminated?.exitCode === 0 || (i.pod.spec.initContainers?.find((c) => c.name === s.name)?.restartPolicy === 'Always' && s.started),
  );
  const notReady = regular.filter((s) => !s.ready).map((s) => s.name);
  const containersReady = notReady.length === 0 && phase !== 'Succeeded' && phase !== 'Failed';
  const notReadyMsg = `containers with unready status: [${notReady.join(' ')}]`;
  const pendingInit = init.filter((s) => s.state?.terminated?.exitCode !== 0).map((s) => s.name);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const gates = containersReady ? readinessGatesMessage(i.pod) : undefined;
  const conditions: Condition[] = [
    condition(prev?.conditions, 'PodReadyToStartContainers', i.sandboxReady && !terminal, now),
    condition(
      prev?.conditions,
      'Initialized',
      initialized,
      now,
      'ContainersNotInitialized',
      `containers with incomplete status: [${pendingInit.join(' ')}]`,
    ),
    gates
      ? condition(prev?.conditions, 'Ready', false, now, 'ReadinessGatesNotReady', gates)
      : condition(prev?.conditions, 'Ready', containersReady, now, terminal ? 'PodCompleted' : 'ContainersNotReady', terminal ? undefined : notReadyMsg),
    condition(
      prev?.conditions,
      'ContainersReady',
      containersReady,
      now,
      terminal ? 'PodCompleted' : 'ContainersNotReady',
      terminal ? undefined : notReadyMsg,
    ),
  ];
  for (const c of prev?.conditions ?? []) if (!KUBELET_CONDITIONS.has(c.type)) conditions.push(c);
  const status: PodStatus = {
    phase,
    conditions,
    hostIP: i.nodeIP,
    hostIPs: [{ ip: i.nodeIP }],
    ...(i.podIPs.length ? { podIP: i.podIPs[0], podIPs: i.podIPs.map((ip) => ({ ip })) } : {}),
    startTime: prev?.startTime ?? now,
    ...(init.length ? { initContainerStatuses: init } : {}),
    containerStatuses: regular,
    ...(i.ephemeral?.length ? { ephemeralContainerStatuses: i.ephemeral.map((o) => containerStatus(o, i.runtimeName)) } : {}),
    qosClass: podQOSClass(i.pod.spec),
  };
  if (prev?.nominatedNodeName) status.nominatedNodeName = prev.nominatedNodeName;
  return status;
}

/** Status equality as serialized (member order and undefined members do not count): decides whether a status write is needed. */
export function sameStatus(a: PodStatus | undefined, b: PodStatus): boolean {
  return jsonEqual(a ?? {}, b);
}
