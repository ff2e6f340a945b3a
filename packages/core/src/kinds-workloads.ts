// Registration of the workload and policy kinds: apps/v1, batch/v1, ReplicationController, PodTemplate,
// ServiceAccount, ResourceQuota, LimitRange, policy/v1 PodDisruptionBudget, autoscaling/v2 HPA and
// networking.k8s.io Ingress/IngressClass: kind registry entries, their TypeScript types in KindMap,
// defaulting and validation hooks.
import type { ControllerRevision, DaemonSet, Deployment, PodTemplate, ReplicaSet, ReplicationController, StatefulSet } from './api-apps.js';
import type { CronJob, Job } from './api-batch.js';
import type { Ingress, IngressClass } from './api-networking.js';
import type { HorizontalPodAutoscaler, PodDisruptionBudget } from './api-policy.js';
import type { LimitRange, ResourceQuota, ServiceAccount } from './api-quota.js';
import {
  defaultCronJob,
  defaultDaemonSet,
  defaultDeployment,
  defaultHPA,
  defaultJob,
  defaultLimitRange,
  defaultReplicaSet,
  defaultReplicationController,
  defaultStatefulSet,
  defaultTemplate,
} from './defaults-apps.js';
import type { KubeObject } from './api-meta.js';
import { registerKindHooks } from './kind-hooks.js';
import { registerKind } from './kinds.js';
import {
  validateControllerRevision,
  validateControllerRevisionUpdate,
  validateDaemonSet,
  validateDeployment,
  validatePodTemplate,
  validateReplicaSet,
  validateReplicationController,
  validateSelectorUpdate,
  validateStatefulSet,
  validateStatefulSetUpdate,
} from './validation-apps.js';
import { validateCronJob, validateJob, validateJobUpdate } from './validation-batch.js';
import {
  validateHPA,
  validateIngress,
  validateIngressClass,
  validateLimitRange,
  validatePDB,
  validateResourceQuota,
  validateServiceAccount,
} from './validation-policy.js';

declare module './kinds.js' {
  interface KindMap {
    Deployment: Deployment;
    ReplicaSet: ReplicaSet;
    StatefulSet: StatefulSet;
    DaemonSet: DaemonSet;
    ControllerRevision: ControllerRevision;
    ReplicationController: ReplicationController;
    PodTemplate: PodTemplate;
    Job: Job;
    CronJob: CronJob;
    ServiceAccount: ServiceAccount;
    ResourceQuota: ResourceQuota;
    LimitRange: LimitRange;
    PodDisruptionBudget: PodDisruptionBudget;
    HorizontalPodAutoscaler: HorizontalPodAutoscaler;
    Ingress: Ingress;
    IngressClass: IngressClass;
  }
}

const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** The kinds this module registers (importing it registers them). */
export const WORKLOAD_KINDS = [
  'Deployment',
  'ReplicaSet',
  'StatefulSet',
  'DaemonSet',
  'ControllerRevision',
  'ReplicationController',
  'PodTemplate',
  'Job',
  'CronJob',
  'ServiceAccount',
  'ResourceQuota',
  'LimitRange',
  'PodDisruptionBudget',
  'HorizontalPodAutoscaler',
  'Ingress',
  'IngressClass',
] as const;

const reg = (kind: string, apiVersion: string, resource: string, namespaced: boolean, hasStatus: boolean, fields = {}) =>
  registerKind({ kind, apiVersion, resource, namespaced, hasStatus, fields });

reg('Deployment', 'apps/v1', 'deployments', true, true);
reg('ReplicaSet', 'apps/v1', 'replicasets', true, true, { 'status.replicas': (o: ReplicaSet) => str(o.status?.replicas ?? 0) });
reg('StatefulSet', 'apps/v1', 'statefulsets', true, true);
reg('DaemonSet', 'apps/v1', 'daemonsets', true, true);
reg('ControllerRevision', 'apps/v1', 'controllerrevisions', true, false);
reg('ReplicationController', 'v1', 'replicationcontrollers', true, true, { 'status.replicas': (o: ReplicationController) => str(o.status?.replicas ?? 0) });
reg('PodTemplate', 'v1', 'podtemplates', true, false);
reg('Job', 'batch/v1', 'jobs', true, true, { 'status.successful': (o: Job) => str(o.status?.succeeded ?? 0) });
reg('CronJob', 'batch/v1', 'cronjobs', true, true);
reg('ServiceAccount', 'v1', 'serviceaccounts', true, false);
reg('ResourceQuota', 'v1', 'resourcequotas', true, true);
reg('LimitRange', 'v1', 'limitranges', true, false);
reg('PodDisruptionBudget', 'policy/v1', 'poddisruptionbudgets', true, true);
reg('HorizontalPodAutoscaler', 'autoscaling/v2', 'horizontalpodautoscalers', true, true);
reg('Ingress', 'networking.k8s.io/v1', 'ingresses', true, true);
reg('IngressClass', 'networking.k8s.io/v1', 'ingressclasses', false, false);

const zeroStatus = (o: KubeObject) => {
  o.status = {};
};

registerKindHooks('Deployment', { defaults: (o) => defaultDeployment(o as Deployment), initialStatus: zeroStatus, validate: validateDeployment, validateUpdate: validateSelectorUpdate });
registerKindHooks('ReplicaSet', {
  defaults: (o) => defaultReplicaSet(o as ReplicaSet),
  initialStatus: (o) => {
    o.status = { replicas: 0 };
  },
  validate: validateReplicaSet,
  validateUpdate: validateSelectorUpdate,
});
registerKindHooks('ReplicationController', {
  defaults: (o) => defaultReplicationController(o as ReplicationController),
  initialStatus: (o) => {
    o.status = { replicas: 0 };
  },
  validate: validateReplicationController,
});
registerKindHooks('PodTemplate', { defaults: (o) => defaultTemplate(o.template), validate: validatePodTemplate });
registerKindHooks('StatefulSet', {
  defaults: (o) => defaultStatefulSet(o as StatefulSet),
  initialStatus: (o) => {
    o.status = { replicas: 0, availableReplicas: 0 };
  },
  validate: validateStatefulSet,
  validateUpdate: validateStatefulSetUpdate,
});
registerKindHooks('DaemonSet', {
  defaults: (o) => defaultDaemonSet(o as DaemonSet),
  initialStatus: (o) => {
    o.status = { currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0 };
  },
  validate: validateDaemonSet,
  validateUpdate: validateSelectorUpdate,
});
registerKindHooks('ControllerRevision', { validate: validateControllerRevision, validateUpdate: validateControllerRevisionUpdate });
registerKindHooks('Job', { defaults: (o) => defaultJob(o as Job), initialStatus: zeroStatus, validate: validateJob, validateUpdate: validateJobUpdate });
registerKindHooks('CronJob', { defaults: (o) => defaultCronJob(o as CronJob), initialStatus: zeroStatus, validate: validateCronJob });
registerKindHooks('ServiceAccount', { validate: validateServiceAccount });
registerKindHooks('ResourceQuota', { initialStatus: zeroStatus, validate: validateResourceQuota });
registerKindHooks('LimitRange', { defaults: (o) => defaultLimitRange(o as LimitRange), validate: validateLimitRange });
registerKindHooks('PodDisruptionBudget', {
  initialStatus: (o) => {
    o.status = { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 };
  },
  validate: validatePDB,
});
registerKindHooks('HorizontalPodAutoscaler', {
  defaults: (o) => defaultHPA(o as HorizontalPodAutoscaler),
  initialStatus: (o) => {
    o.status = { desiredReplicas: 0 };
  },
  validate: validateHPA,
});
registerKindHooks('Ingress', {
  initialStatus: (o) => {
    o.status = { loadBalancer: {} };
  },
  validate: validateIngress,
});
registerKindHooks('IngressClass', { validate: validateIngressClass });
