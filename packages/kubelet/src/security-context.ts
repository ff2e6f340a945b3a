// The security context a container runs with, as the kubelet's DetermineEffectiveSecurityContext makes it:
// the container's own settings win, the pod's fill in what the container leaves unset, and the pod's fsGroup
// and supplementalGroups become the process's supplemental groups (fsGroup first).
import type { Container, Pod, SecurityContext } from '@kemu/core';

/** The pod-level fields this file reads from `spec.securityContext` (kept untyped in core). */
interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  fsGroup?: number;
  supplementalGroups?: number[];
}

export interface EffectiveSecurityContext extends SecurityContext {
  supplementalGroups: number[];
}

export function determineEffectiveSecurityContext(pod: Pod, container: Container): EffectiveSecurityContext {
  const podSc = (pod.spec.securityContext ?? {}) as PodSecurityContext;
  const sc = container.securityContext ?? {};
  const supplementalGroups = [...(podSc.fsGroup !== undefined ? [podSc.fsGroup] : []), ...(podSc.supplementalGroups ?? [])];
  return {
    ...sc,
    runAsUser: sc.runAsUser ?? podSc.runAsUser,
    runAsGroup: sc.runAsGroup ?? podSc.runAsGroup,
    supplementalGroups,
  };
}
