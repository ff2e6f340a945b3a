// Pod facts the workload controllers share (upstream's podutil and controller_utils): readiness,
// availability, activeness, and pods made from a template with a controller reference.
import type { KubeObject, OwnerReference, Pod, PodTemplateSpec } from '@kemu/core';
import { deepCopy } from '@kemu/core';

export function podReadyCondition(pod: Pod) {
  return pod.status?.conditions?.find((c) => c.type === 'Ready');
}

export function isPodReady(pod: Pod): boolean {
  return podReadyCondition(pod)?.status === 'True';
}

/** Ready for at least minReadySeconds at `now`. */
export function isPodAvailable(pod: Pod, minReadySeconds: number, now: Date): boolean {
  const c = podReadyCondition(pod);
  if (c?.status !== 'True') return false;
  if (!minReadySeconds) return true;
  const since = c.lastTransitionTime ? Date.parse(c.lastTransitionTime) : 0;
  return since + minReadySeconds * 1000 <= now.getTime();
}

export function isPodTerminal(pod: Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}

/** Not finished and not being deleted (upstream IsPodActive). */
export function isPodActive(pod: Pod): boolean {
  return !isPodTerminal(pod) && !pod.metadata.deletionTimestamp;
}

export function controllerRef(owner: KubeObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  return obj.metadata.ownerReferences?.some((r) => r.controller && r.uid === owner.metadata.uid) ?? false;
}

export function controllerUid(obj: KubeObject): string | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller)?.uid;
}

/** A pod from a template, owned by `owner` (upstream GetPodFromTemplate). */
export function podFromTemplate(template: PodTemplateSpec, owner: KubeObject, generateName: string): Pod {
  const t = deepCopy(template);
  const labels = { ...(t.metadata?.labels ?? {}) };
  const annotations = { ...(t.metadata?.annotations ?? {}) };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName,
      namespace: owner.metadata.namespace,
      labels,
      ...(Object.keys(annotations).length ? { annotations } : {}),
      ...(t.metadata?.finalizers?.length ? { finalizers: t.metadata.finalizers } : {}),
      ownerReferences: [controllerRef(owner)],
    },
    spec: t.spec,
  } as Pod;
}

/** Upstream's name prefix for generated pods: the owner name and a dash, shortened to leave room. */
export function podNamePrefix(ownerName: string): string {
  const max = 63 - 5;
  const prefix = `${ownerName}-`;
  return prefix.length > max ? prefix.slice(0, max) : prefix;
}
