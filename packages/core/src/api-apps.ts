// apps/v1 kinds: Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision, and the core/v1
// ReplicationController and PodTemplate that share their pod-template shape.
import type { PersistentVolumeClaim, PodSpec } from './api-core.js';
import type { Condition, KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';

export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec: PodSpec;
}

/** An integer or a percentage string (`25%`), as `maxSurge`/`maxUnavailable` take. */
export type IntOrString = number | string;

export interface DeploymentStrategy {
  type?: 'RollingUpdate' | 'Recreate';
  rollingUpdate?: { maxUnavailable?: IntOrString; maxSurge?: IntOrString };
}

export interface DeploymentSpec {
  replicas?: number;
  selector: LabelSelector;
  template: PodTemplateSpec;
  strategy?: DeploymentStrategy;
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
  paused?: boolean;
  progressDeadlineSeconds?: number;
}

export interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  unavailableReplicas?: number;
  terminatingReplicas?: number;
  conditions?: Condition[];
  collisionCount?: number;
}

export interface Deployment extends KubeObject {
  apiVersion: 'apps/v1';
  kind: 'Deployment';
  metadata: ObjectMeta;
  spec: DeploymentSpec;
  status?: DeploymentStatus;
}

export interface ReplicaSetSpec {
  replicas?: number;
  minReadySeconds?: number;
  selector: LabelSelector;
  template?: PodTemplateSpec;
}

export interface ReplicaSetStatus {
  replicas: number;
  fullyLabeledReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  terminatingReplicas?: number;
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface ReplicaSet extends KubeObject {
  apiVersion: 'apps/v1';
  kind: 'ReplicaSet';
  metadata: ObjectMeta;
  spec: ReplicaSetSpec;
  status?: ReplicaSetStatus;
}

export interface ReplicationController extends KubeObject {
  apiVersion: 'v1';
  kind: 'ReplicationController';
  metadata: ObjectMeta;
  spec: { replicas?: number; minReadySeconds?: number; selector?: Record<string, string>; template?: PodTemplateSpec };
  status?: ReplicaSetStatus;
}

export interface PodTemplate extends KubeObject {
  apiVersion: 'v1';
  kind: 'PodTemplate';
  metadata: ObjectMeta;
  template?: PodTemplateSpec;
}

export interface StatefulSetSpec {
  replicas?: number;
  selector: LabelSelector;
  template: PodTemplateSpec;
  volumeClaimTemplates?: PersistentVolumeClaim[];
  serviceName?: string;
  podManagementPolicy?: 'OrderedReady' | 'Parallel';
  updateStrategy?: { type?: 'RollingUpdate' | 'OnDelete'; rollingUpdate?: { partition?: number; maxUnavailable?: IntOrString } };
  revisionHistoryLimit?: number;
  minReadySeconds?: number;
  persistentVolumeClaimRetentionPolicy?: { whenDeleted?: 'Retain' | 'Delete'; whenScaled?: 'Retain' | 'Delete' };
  ordinals?: { start?: number };
}

export interface StatefulSetStatus {
  observedGeneration?: number;
  replicas: number;
  readyReplicas?: number;
  currentReplicas?: number;
  updatedReplicas?: number;
  availableReplicas?: number;
  currentRevision?: string;
  updateRevision?: string;
  collisionCount?: number;
  conditions?: Condition[];
}

export interface StatefulSet extends KubeObject {
  apiVersion: 'apps/v1';
  kind: 'StatefulSet';
  metadata: ObjectMeta;
  spec: StatefulSetSpec;
  status?: StatefulSetStatus;
}

export interface DaemonSetSpec {
  selector: LabelSelector;
  template: PodTemplateSpec;
  updateStrategy?: { type?: 'RollingUpdate' | 'OnDelete'; rollingUpdate?: { maxUnavailable?: IntOrString; maxSurge?: IntOrString } };
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
}

export interface DaemonSetStatus {
  currentNumberScheduled: number;
  numberMisscheduled: number;
  desiredNumberScheduled: number;
  numberReady: number;
  observedGeneration?: number;
  updatedNumberScheduled?: number;
  numberAvailable?: number;
  numberUnavailable?: number;
  collisionCount?: number;
  conditions?: Condition[];
}

export interface DaemonSet extends KubeObject {
  apiVersion: 'apps/v1';
  kind: 'DaemonSet';
  metadata: ObjectMeta;
  spec: DaemonSetSpec;
  status?: DaemonSetStatus;
}

export interface ControllerRevision extends KubeObject {
  apiVersion: 'apps/v1';
  kind: 'ControllerRevision';
  metadata: ObjectMeta;
  data?: unknown;
  revision: number;
}
