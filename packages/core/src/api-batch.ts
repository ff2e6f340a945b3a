// batch/v1 kinds: Job and CronJob.
import type { PodTemplateSpec } from './api-apps.js';
import type { ObjectReference } from './api-core.js';
import type { Condition, KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';

export interface PodFailurePolicyRule {
  action: 'FailJob' | 'FailIndex' | 'Ignore' | 'Count';
  onExitCodes?: { containerName?: string; operator: 'In' | 'NotIn'; values: number[] };
  onPodConditions?: { type: string; status?: 'True' | 'False' | 'Unknown' }[];
}

export interface JobSpec {
  parallelism?: number;
  completions?: number;
  activeDeadlineSeconds?: number;
  podFailurePolicy?: { rules: PodFailurePolicyRule[] };
  successPolicy?: { rules: { succeededIndexes?: string; succeededCount?: number }[] };
  backoffLimit?: number;
  backoffLimitPerIndex?: number;
  maxFailedIndexes?: number;
  selector?: LabelSelector;
  manualSelector?: boolean;
  template: PodTemplateSpec;
  ttlSecondsAfterFinished?: number;
  completionMode?: 'NonIndexed' | 'Indexed';
  suspend?: boolean;
  podReplacementPolicy?: 'TerminatingOrFailed' | 'Failed';
  managedBy?: string;
}

export interface JobStatus {
  conditions?: Condition[];
  startTime?: string;
  completionTime?: string;
  active?: number;
  succeeded?: number;
  failed?: number;
  terminating?: number;
  completedIndexes?: string;
  failedIndexes?: string;
  uncountedTerminatedPods?: { succeeded?: string[]; failed?: string[] };
  ready?: number;
}

export interface Job extends KubeObject {
  apiVersion: 'batch/v1';
  kind: 'Job';
  metadata: ObjectMeta;
  spec: JobSpec;
  status?: JobStatus;
}

export interface CronJobSpec {
  schedule: string;
  timeZone?: string;
  startingDeadlineSeconds?: number;
  concurrencyPolicy?: 'Allow' | 'Forbid' | 'Replace';
  suspend?: boolean;
  jobTemplate: { metadata?: ObjectMeta; spec: JobSpec };
  successfulJobsHistoryLimit?: number;
  failedJobsHistoryLimit?: number;
}

export interface CronJob extends KubeObject {
  apiVersion: 'batch/v1';
  kind: 'CronJob';
  metadata: ObjectMeta;
  spec: CronJobSpec;
  status?: { active?: ObjectReference[]; lastScheduleTime?: string; lastSuccessfulTime?: string };
}
