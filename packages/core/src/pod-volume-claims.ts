// Which PersistentVolumeClaim a pod volume uses: the named claim of a persistentVolumeClaim volume, or
// `<pod name>-<volume name>` for a generic ephemeral volume, a claim the ephemeral volume controller creates
// for the pod and that the pod owns (so it goes with the pod). One home for the scheduler, the kubelet and
// the controller.
import type { PersistentVolumeClaim, Pod, Volume } from './api-core.js';

/** The claim name of a generic ephemeral volume. */
export function ephemeralClaimName(pod: Pod, vol: Volume): string {
  return `${pod.metadata.name}-${vol.name}`;
}

/** The claim a volume uses, or undefined for volumes without one. */
export function podVolumeClaimName(pod: Pod, vol: Volume): string | undefined {
  if (vol.persistentVolumeClaim) return vol.persistentVolumeClaim.claimName;
  if (vol.ephemeral) return ephemeralClaimName(pod, vol);
  return undefined;
}

/** Whether `pvc` is the pod's own ephemeral claim (its controller owner is the pod). */
export function isPodOwnedClaim(pod: Pod, pvc: PersistentVolumeClaim): boolean {
  return (pvc.metadata.ownerReferences ?? []).some((r) => r.controller === true && r.kind === 'Pod' && r.uid === pod.metadata.uid);
}

/** The kubelet's and scheduler's error for an ephemeral claim that belongs to something else. */
export function notCreatedForPodMessage(pod: Pod, claimName: string): string {
  const ns = pod.metadata.namespace ?? 'default';
  return `PVC ${ns}/${claimName} was not created for pod ${ns}/${pod.metadata.name} (pod is not owner)`;
}
