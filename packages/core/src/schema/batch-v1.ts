// Schema of batch.v1: Job, CronJob. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.batch.v1',
  {
    Job: type('Runs pods until a number of them complete successfully.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'JobSpec'),
      status: f(3, 'JobStatus'),
    }),
    JobSpec: type('What a job runs and when it is done.', {
      parallelism: f(1, 'int32', 'Most pods running at once.', { pointer: true }),
      completions: f(2, 'int32', 'Successful pods needed (default 1; unset: any one success).', { pointer: true }),
      activeDeadlineSeconds: f(3, 'int64', 'Seconds the job may run before it is failed.', { pointer: true }),
      podFailurePolicy: f(11, 'PodFailurePolicy'),
      successPolicy: f(16, 'SuccessPolicy'),
      backoffLimit: f(7, 'int32', 'Retries before the job fails (default 6).', { pointer: true }),
      backoffLimitPerIndex: f(12, 'int32', '', { pointer: true }),
      maxFailedIndexes: f(13, 'int32', '', { pointer: true }),
      selector: f(4, `${META}LabelSelector`),
      manualSelector: f(5, 'bool', '', { pointer: true }),
      template: f(6, `io.k8s.api.core.v1.PodTemplateSpec`, 'The pods to run; restartPolicy must be Never or OnFailure.', { required: true }),
      ttlSecondsAfterFinished: f(8, 'int32', 'Seconds after finishing before the job is deleted.', { pointer: true }),
      completionMode: f(9, 'string', 'NonIndexed (default) or Indexed.'),
      suspend: f(10, 'bool', 'Hold the job: no pods are created and running ones are stopped.', { pointer: true }),
      podReplacementPolicy: f(14, 'string'),
      managedBy: f(15, 'string'),
    }),
    PodFailurePolicy: type('How pod failures count against the job.', {
      rules: f(1, '[]PodFailurePolicyRule', 'Rules checked in order.', { required: true }),
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
    JobStatus: type('Observed state of a job.', {
      conditions: f(1, '[]JobCondition', 'Complete, Failed, Suspended, ...', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'atomic' }),
      startTime: f(2, 'time', 'When the job started.'),
      completionTime: f(3, 'time', 'When the job completed.'),
      active: f(4, 'int32', 'Pods running.'),
      succeeded: f(5, 'int32', 'Pods that succeeded.'),
      failed: f(6, 'int32', 'Pods that failed.'),
      terminating: f(11, 'int32', '', { pointer: true }),
      completedIndexes: f(7, 'string'),
      failedIndexes: f(10, 'string'),
      uncountedTerminatedPods: f(8, 'UncountedTerminatedPods'),
      ready: f(9, 'int32', '', { pointer: true }),
    }),
    JobCondition: type('One condition of a job.', {
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
    CronJob: type('Creates jobs on a cron schedule.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'CronJobSpec'),
      status: f(3, 'CronJobStatus'),
    }),
    CronJobSpec: type('The schedule and the job to create.', {
      schedule: f(1, 'string', 'Cron schedule, e.g. */5 * * * *.', { required: true }),
      timeZone: f(8, 'string', 'Time zone of the schedule (default: the controller\'s).'),
      startingDeadlineSeconds: f(2, 'int64', '', { pointer: true }),
      concurrencyPolicy: f(3, 'string', 'Allow (default), Forbid or Replace concurrent jobs.'),
      suspend: f(4, 'bool', 'Create no new jobs.', { pointer: true }),
      jobTemplate: f(5, 'JobTemplateSpec', 'The job to create.', { required: true }),
      successfulJobsHistoryLimit: f(6, 'int32', 'Finished successful jobs kept (default 3).', { pointer: true }),
      failedJobsHistoryLimit: f(7, 'int32', 'Failed jobs kept (default 1).', { pointer: true }),
    }),
    JobTemplateSpec: type('The job a cron job creates.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'JobSpec'),
    }),
    CronJobStatus: type('Observed state of a cron job.', {
      active: f(1, `[]io.k8s.api.core.v1.ObjectReference`, 'Jobs running.', { listType: 'atomic' }),
      lastScheduleTime: f(4, 'time', 'When a job was last scheduled.'),
      lastSuccessfulTime: f(5, 'time'),
    }),
  },
  [
    { kind: 'Job', apiVersion: 'batch/v1', type: 'Job' },
    { kind: 'CronJob', apiVersion: 'batch/v1', type: 'CronJob' },
  ],
);
