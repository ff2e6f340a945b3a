// Defaulting of the workload kinds (apps/v1, batch/v1, ReplicationController, PodTemplate) and the
// namespace policy kinds, as the API server applies it.
import type { PodSpec } from './api-core.js';
import type { DaemonSet, Deployment, PodTemplateSpec, ReplicaSet, ReplicationController, StatefulSet } from './api-apps.js';
import type { CronJob, Job, JobSpec } from './api-batch.js';
import type { KubeObject } from './api-meta.js';
import type { HorizontalPodAutoscaler } from './api-policy.js';
import type { LimitRange } from './api-quota.js';
import { defaultPodSpec } from './defaults.js';

/** Label the API server puts on a Job's pods (and selector) naming the Job's uid. */
export const JOB_CONTROLLER_UID_LABEL = 'batch.kubernetes.io/controller-uid';
export const JOB_NAME_LABEL = 'batch.kubernetes.io/job-name';
const MAX_INT32 = 2147483647;

export function defaultTemplate(t: PodTemplateSpec | undefined): void {
  if (!t || typeof t !== 'object') return;
  t.spec ??= { containers: [] } as unknown as PodSpec;
  if (typeof t.spec === 'object') defaultPodSpec(t.spec);
}

export function defaultDeployment(d: Deployment): void {
  d.spec ??= {} as Deployment['spec'];
  const s = d.spec;
  s.replicas ??= 1;
  s.strategy ??= {};
  s.strategy.type ??= 'RollingUpdate';
  if (s.strategy.type === 'RollingUpdate') {
    s.strategy.rollingUpdate ??= {};
    s.strategy.rollingUpdate.maxUnavailable ??= '25%';
    s.strategy.rollingUpdate.maxSurge ??= '25%';
  }
  s.revisionHistoryLimit ??= 10;
  s.progressDeadlineSeconds ??= 600;
  defaultTemplate(s.template);
}

export function defaultReplicaSet(rs: ReplicaSet): void {
  rs.spec ??= {} as ReplicaSet['spec'];
  rs.spec.replicas ??= 1;
  defaultTemplate(rs.spec.template);
}

export function defaultReplicationController(rc: ReplicationController): void {
  rc.spec ??= {};
  const s = rc.spec;
  // An empty selector means the template's labels; empty object labels mean the template's labels too.
  const labels = s.template?.metadata?.labels;
  if (labels && (!s.selector || Object.keys(s.selector).length === 0)) s.selector = { ...labels };
  if (labels && (!rc.metadata.labels || Object.keys(rc.metadata.labels).length === 0)) rc.metadata.labels = { ...labels };
  s.replicas ??= 1;
  defaultTemplate(s.template);
}

export function defaultStatefulSet(ss: StatefulSet): void {
  ss.spec ??= {} as StatefulSet['spec'];
  const s = ss.spec;
  s.podManagementPolicy ??= 'OrderedReady';
  s.updateStrategy ??= {};
  s.updateStrategy.type ??= 'RollingUpdate';
  if (s.updateStrategy.type === 'RollingUpdate') {
    s.updateStrategy.rollingUpdate ??= {};
    s.updateStrategy.rollingUpdate.partition ??= 0;
  }
  s.replicas ??= 1;
  s.revisionHistoryLimit ??= 10;
  s.persistentVolumeClaimRetentionPolicy ??= {};
  s.persistentVolumeClaimRetentionPolicy.whenDeleted ??= 'Retain';
  s.persistentVolumeClaimRetentionPolicy.whenScaled ??= 'Retain';
  for (const t of s.volumeClaimTemplates ?? []) {
    if (!t || typeof t !== 'object') continue;
    t.apiVersion ??= 'v1';
    t.kind ??= 'PersistentVolumeClaim';
    t.spec ??= {} as typeof t.spec;
    t.spec.volumeMode ??= 'Filesystem';
    t.status ??= { phase: 'Pending' };
  }
  defaultTemplate(s.template);
}

export function defaultDaemonSet(ds: DaemonSet): void {
  ds.spec ??= {} as DaemonSet['spec'];
  const s = ds.spec;
  s.updateStrategy ??= {};
  s.updateStrategy.type ??= 'RollingUpdate';
  if (s.updateStrategy.type === 'RollingUpdate') {
    s.updateStrategy.rollingUpdate ??= {};
    s.updateStrategy.rollingUpdate.maxUnavailable ??= 1;
    s.updateStrategy.rollingUpdate.maxSurge ??= 0;
  }
  s.revisionHistoryLimit ??= 10;
  defaultTemplate(s.template);
}

export function defaultJobSpec(s: JobSpec): void {
  if (s.completions === undefined && s.parallelism === undefined) {
    s.completions = 1;
    s.parallelism = 1;
  }
  s.parallelism ??= 1;
  s.backoffLimit ??= s.backoffLimitPerIndex !== undefined ? MAX_INT32 : 6;
  s.completionMode ??= 'NonIndexed';
  s.suspend ??= false;
  s.podReplacementPolicy ??= s.podFailurePolicy ? 'Failed' : 'TerminatingOrFailed';
  s.manualSelector ??= undefined;
  if (s.manualSelector === undefined) delete s.manualSelector;
  defaultTemplate(s.template);
}

export function defaultJob(job: Job): void {
  job.spec ??= {} as Job['spec'];
  defaultJobSpec(job.spec);
  const uid = job.metadata?.uid;
  // Without a manual selector the API server selects the Job's pods by its uid.
  if (uid && job.spec.manualSelector !== true && !job.spec.selector && job.spec.template && typeof job.spec.template === 'object') {
    const t = job.spec.template;
    t.metadata ??= {};
    t.metadata.labels = {
      ...t.metadata.labels,
      [JOB_CONTROLLER_UID_LABEL]: uid,
      [JOB_NAME_LABEL]: job.metadata.name ?? '',
      'controller-uid': uid,
      'job-name': job.metadata.name ?? '',
    };
    job.spec.selector = { matchLabels: { [JOB_CONTROLLER_UID_LABEL]: uid } };
  }
}

export function defaultCronJob(cj: CronJob): void {
  cj.spec ??= {} as CronJob['spec'];
  const s = cj.spec;
  s.concurrencyPolicy ??= 'Allow';
  s.suspend ??= false;
  s.successfulJobsHistoryLimit ??= 3;
  s.failedJobsHistoryLimit ??= 1;
  if (s.jobTemplate && typeof s.jobTemplate === 'object') {
    s.jobTemplate.spec ??= {} as JobSpec;
    defaultJobSpec(s.jobTemplate.spec);
  }
}

export function defaultHPA(hpa: HorizontalPodAutoscaler): void {
  hpa.spec ??= {} as HorizontalPodAutoscaler['spec'];
  hpa.spec.minReplicas ??= 1;
  if (!hpa.spec.metrics?.length) {
    hpa.spec.metrics = [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }];
  }
}

export function defaultLimitRange(lr: LimitRange): void {
  for (const item of lr.spec?.limits ?? []) {
    if (item?.type !== 'Container') continue;
    // A container's default limit is the max; its default request the default limit, else the min.
    item.default ??= item.max ? { ...item.max } : undefined;
    if (item.default === undefined) delete item.default;
    const req: Record<string, string> = { ...(item.min ?? {}), ...(item.default ?? {}), ...(item.defaultRequest ?? {}) };
    if (Object.keys(req).length) item.defaultRequest = req;
  }
}

/** Pod template of a workload object, wherever its kind keeps it. */
export function podTemplateOf(obj: KubeObject): PodTemplateSpec | undefined {
  if (obj.kind === 'PodTemplate') return obj.template;
  if (obj.kind === 'CronJob') return obj.spec?.jobTemplate?.spec?.template;
  return obj.spec?.template;
}
