// @kemu/controllers public surface.
export { type Clock, realClock, ScaledClock } from './clock.js';
export { ensureRevision, REVISION_LABEL, revisionTemplate, truncateHistory } from './controller-history.js';
export { ControllerContext, type ControllerContextOptions } from './controller-context.js';
export { CONTROLLER_NAMES, CONTROLLER_SERVICE_ACCOUNTS, ControllerManager, type ControllerManagerOptions, enabledControllers } from './controller-manager.js';
export { CronJobController, mostRecentScheduleTime, SCHEDULED_TIMESTAMP_ANNOTATION } from './cronjob-controller.js';
export { DAEMON_TOLERATIONS, DaemonSetController, shouldRunOn, targetNode } from './daemonset-controller.js';
export { DeploymentController } from './deployment-controller.js';
export { DisruptionController } from './disruption-controller.js';
export {
  computeHash,
  newRSNewReplicas,
  POD_TEMPLATE_HASH,
  Reasons as DeploymentReasons,
  resolveFenceposts,
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
  revisionOf,
  CHANGE_CAUSE_ANNOTATION,
} from './deployment-util.js';
export { ENDPOINTSLICE_CONTROLLER, EndpointSliceController, MAX_ENDPOINTS_PER_SLICE } from './endpointslice-controller.js';
export { HPAController, type HPAControllerOptions, type MetricsSource, type PodUsage } from './hpa-controller.js';
export { COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER, JobController, type JobControllerOptions } from './job-controller.js';
export { formatIndexes, parseIndexes } from './job-indexes.js';
export { compareForDeletion, podsToDelete } from './pod-ranking.js';
export { isPodAvailable, isPodReady } from './pod-util.js';
export { ReplicaSetController, type ReplicatedKind } from './replica-set-controller.js';
export { ResourceQuotaController } from './resource-quota-controller.js';
export { ServiceAccountController } from './service-account-controller.js';
export { claimName, ordinalOf, POD_INDEX_LABEL, POD_NAME_LABEL, StatefulSetController } from './statefulset-controller.js';
export { TTLAfterFinishedController } from './ttl-after-finished-controller.js';
