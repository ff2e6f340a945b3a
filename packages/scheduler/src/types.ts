// The API kinds the scheduler reads, taken from @kemu/core, plus the few kinds core does not model.
import type { KubeObject, LabelSelector, ObjectMeta } from '@kemu/core';

export type {
  Affinity,
  Binding,
  Condition,
  Container,
  CSINode,
  Event,
  KubeObject,
  LabelSelector,
  LabelSelectorRequirement,
  Node,
  NodeSelector,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  ObjectMeta,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  PodAffinityTerm,
  PreferredSchedulingTerm,
  PriorityClass,
  StorageClass,
  Taint,
  Toleration,
  TopologySpreadConstraint,
} from '@kemu/core';

/** policy/v1 PodDisruptionBudget: only the fields preemption reads. */
export interface PodDisruptionBudget extends KubeObject {
  kind: 'PodDisruptionBudget';
  metadata: ObjectMeta;
  spec: { selector?: LabelSelector; minAvailable?: number | string; maxUnavailable?: number | string };
  status?: {
    disruptionsAllowed?: number;
    /** Pods whose eviction the API server has processed but the controller not yet observed. */
    disruptedPods?: Record<string, string>;
    currentHealthy?: number;
    desiredHealthy?: number;
    expectedPods?: number;
  };
}

/** storage.k8s.io/v1 CSIStorageCapacity: capacity a CSI driver reports for a topology segment. */
export interface CSIStorageCapacity extends KubeObject {
  kind: 'CSIStorageCapacity';
  metadata: ObjectMeta;
  storageClassName: string;
  nodeTopology?: LabelSelector;
  capacity?: string;
  maximumVolumeSize?: string;
}
