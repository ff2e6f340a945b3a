// Schema of batch.v1: Job, CronJob. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.batch.v1',
  {
    Job: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'JobSpec'),
      status: f(3, 'JobStatus'),
    }),
    JobSpec: type('', {
      parallelism: f(1, 'int32', '', { pointer: true }),
      completions: f(2, 'int32', '', { pointer: true }),
      activeDeadlineSeconds: f(3, 'int64', '', { pointer: true }),
      podFailurePolicy: f(11, 'PodFailurePolicy'),
      successPolicy: f(16, 'SuccessPolicy'),
      backoffLimit: f(7, 'int32', '', { pointer: true }),
      backoffLimitPerIndex: f(12, 'int32', '', { pointer: true }),
      maxFailedIndexes: f(13, 'int32', '', { pointer: true }),
      selector: f(4, `${META}LabelSelector`),
      manualSelector: f(5, 'bool', '', { pointer: true }),
      template: f(6, `io.k8s.api.core.v1.PodTemplateSpec`, '', { required: true }),
      ttlSecondsAfterFinished: f(8, 'int32', '', { pointer: true }),
      completionMode: f(9, 'string'),
      suspend: f(10, 'bool', '', { pointer: true }),
      podReplacementPolicy: f(14, 'string'),
      managedBy: f(15, 'string'),
    }),
    PodFailurePolicy: type('', {
      rules: f(1, '[]PodFailurePolicyRule', '', { required: true }),
    }),
    PodFailurePolicyRule: type('', {
      action: f(1, 'string', '', { required: true }),
      onExitCodes: f(2, 'PodFailurePolicyOnExitCodesRequirement'),
      onPodConditions: f(3, '[]PodFailurePolicyOnPodConditionsPattern'),
    }),
    PodFailurePolicyOnExitCodesRequirement: type('', {
      containerName: f(1, 'string'),
      operator: f(2, 'string', '', { required: true }),
      values: f(3, '[]int32', '', { required: true }),
    }),
    PodFailurePolicyOnPodConditionsPattern: type('', {
      type: f(1, 'string', '', { required: true }),
      status: f(2, 'string', '', { required: true }),
    }),
    SuccessPolicy: type('', {
      rules: f(1, '[]SuccessPolicyRule', '', { required: true }),
    }),
    SuccessPolicyRule: type('', {
      succeededIndexes: f(1, 'string'),
      succeededCount: f(2, 'int32', '', { pointer: true }),
    }),
    JobStatus: type('', {
      conditions: f(1, '[]JobCondition', '', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'atomic' }),
      startTime: f(2, 'time'),
      completionTime: f(3, 'time'),
      active: f(4, 'int32'),
      succeeded: f(5, 'int32'),
      failed: f(6, 'int32'),
      terminating: f(11, 'int32', '', { pointer: true }),
      completedIndexes: f(7, 'string'),
      failedIndexes: f(10, 'string'),
      uncountedTerminatedPods: f(8, 'UncountedTerminatedPods'),
      ready: f(9, 'int32', '', { pointer: true }),
    }),
    JobCondition: type('', {
      type: f(1, 'string', '', { required: true }),
      status: f(2, 'string', '', { required: true }),
      lastProbeTime: f(3, 'time'),
      lastTransitionTime: f(4, 'time'),
      reason: f(5, 'string'),
      message: f(6, 'string'),
    }),
    UncountedTerminatedPods: type('', {
      succeeded: f(1, '[]string'),
      failed: f(2, '[]string'),
    }),
    CronJob: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'CronJobSpec'),
      status: f(3, 'CronJobStatus'),
    }),
    CronJobSpec: type('', {
      schedule: f(1, 'string', '', { required: true }),
      timeZone: f(8, 'string'),
      startingDeadlineSeconds: f(2, 'int64', '', { pointer: true }),
      concurrencyPolicy: f(3, 'string'),
      suspend: f(4, 'bool', '', { pointer: true }),
      jobTemplate: f(5, 'JobTemplateSpec', '', { required: true }),
      successfulJobsHistoryLimit: f(6, 'int32', '', { pointer: true }),
      failedJobsHistoryLimit: f(7, 'int32', '', { pointer: true }),
    }),
    JobTemplateSpec: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'JobSpec'),
    }),
    CronJobStatus: type('', {
      active: f(1, `[]io.k8s.api.core.v1.ObjectReference`, '', { listType: 'atomic' }),
      lastScheduleTime: f(4, 'time'),
      lastSuccessfulTime: f(5, 'time'),
    }),
  },
  [
    { kind: 'Job', apiVersion: 'batch/v1', type: 'Job' },
    { kind: 'CronJob', apiVersion: 'batch/v1', type: 'CronJob' },
  ],
);
