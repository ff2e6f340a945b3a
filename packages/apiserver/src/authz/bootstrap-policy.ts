// The default ClusterRoles and ClusterRoleBindings kube-apiserver creates at start (its "bootstrap
// policy"): the user-facing cluster-admin/admin/edit/view (the last three aggregated from the
// system:aggregate-to-* roles), the discovery and self-review roles every user holds, and the roles of
// the built-in components, so a component missing a rule fails here as it would upstream.
import {
  type ClusterRole,
  type ClusterRoleBinding,
  isAlreadyExists,
  type PolicyRule,
  RBAC_API_VERSION,
  RBAC_GROUP,
  type Store,
  type Subject,
} from '@kemu/core';

export const AUTOUPDATE_ANNOTATION = 'rbac.authorization.kubernetes.io/autoupdate';
export const BOOTSTRAP_LABEL = 'kubernetes.io/bootstrapping';
export const AGGREGATE_TO_ADMIN = 'rbac.authorization.k8s.io/aggregate-to-admin';
export const AGGREGATE_TO_EDIT = 'rbac.authorization.k8s.io/aggregate-to-edit';
export const AGGREGATE_TO_VIEW = 'rbac.authorization.k8s.io/aggregate-to-view';

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'delete', 'deletecollection', 'patch', 'update'];
const ALL_RW = [...READ, ...WRITE];

function r(verbs: string[], groups: string[], resources: string[], names?: string[]): PolicyRule {
  return { verbs, apiGroups: groups, resources, ...(names ? { resourceNames: names } : {}) };
}
function url(verbs: string[], urls: string[]): PolicyRule {
  return { verbs, nonResourceURLs: urls };
}

function role(name: string, rules: PolicyRule[], labels: Record<string, string> = {}, aggregateFrom?: string): ClusterRole {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRole',
    metadata: { name, labels: { [BOOTSTRAP_LABEL]: 'rbac-defaults', ...labels }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    ...(aggregateFrom ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [aggregateFrom]: 'true' } }] } } : {}),
    rules: aggregateFrom ? [] : rules,
  };
}

const user = (name: string): Subject => ({ kind: 'User', apiGroup: RBAC_GROUP, name });
const group = (name: string): Subject => ({ kind: 'Group', apiGroup: RBAC_GROUP, name });

function binding(name: string, roleName: string, subjects: Subject[]): ClusterRoleBinding {
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { [BOOTSTRAP_LABEL]: 'rbac-defaults' }, annotations: { [AUTOUPDATE_ANNOTATION]: 'true' } },
    roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: roleName },
    subjects,
  };
}

const viewRules: PolicyRule[] = [
  r(READ, [''], ['pods', 'replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/status', 'endpoints', 'persistentvolumeclaims', 'persistentvolumeclaims/status', 'configmaps']),
  r(READ, [''], ['limitranges', 'resourcequotas', 'bindings', 'events', 'pods/status', 'resourcequotas/status', 'namespaces/status', 'replicationcontrollers/status', 'pods/log']),
  r(READ, [''], ['namespaces']),
  r(READ, ['discovery.k8s.io'], ['endpointslices']),
  r(READ, ['apps'], ['controllerrevisions', 'statefulsets', 'statefulsets/scale', 'statefulsets/status', 'daemonsets', 'daemonsets/status', 'deployments', 'deployments/scale', 'deployments/status', 'replicasets', 'replicasets/scale', 'replicasets/status']),
  r(READ, ['autoscaling'], ['horizontalpodautoscalers', 'horizontalpodautoscalers/status']),
  r(READ, ['batch'], ['jobs', 'jobs/status', 'cronjobs', 'cronjobs/status']),
  r(READ, ['policy'], ['poddisruptionbudgets', 'poddisruptionbudgets/status']),
  r(READ, ['networking.k8s.io'], ['ingresses', 'ingresses/status', 'networkpolicies']),
];

const editRules: PolicyRule[] = [
  r(['impersonate'], [''], ['serviceaccounts']),
  r(WRITE, [''], ['pods', 'pods/attach', 'pods/proxy', 'pods/exec', 'pods/portforward']),
  r(['create'], [''], ['pods/eviction']),
  r(WRITE, [''], ['replicationcontrollers', 'replicationcontrollers/scale', 'serviceaccounts', 'services', 'services/proxy', 'persistentvolumeclaims', 'configmaps', 'secrets', 'events']),
  r(['create'], [''], ['serviceaccounts/token']),
  r(WRITE, ['apps'], ['statefulsets', 'statefulsets/scale', 'daemonsets', 'deployments', 'deployments/scale', 'deployments/rollback', 'replicasets', 'replicasets/scale']),
  r(WRITE, ['autoscaling'], ['horizontalpodautoscalers']),
  r(WRITE, ['batch'], ['jobs', 'cronjobs']),
  r(WRITE, ['policy'], ['poddisruptionbudgets']),
  r(WRITE, ['networking.k8s.io'], ['ingresses', 'networkpolicies']),
  r(WRITE, ['discovery.k8s.io'], ['endpointslices']),
  r(READ, [''], ['secrets', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy', 'services/proxy']),
];

const adminRules: PolicyRule[] = [
  r(['create'], ['authorization.k8s.io'], ['localsubjectaccessreviews']),
  r(ALL_RW, [RBAC_GROUP], ['rolebindings', 'roles']),
];

const EVENTS = [r(['create', 'patch', 'update'], ['', 'events.k8s.io'], ['events'])];

/** The default ClusterRoles. */
export function bootstrapClusterRoles(): ClusterRole[] {
  return [
    role('cluster-admin', [r(['*'], ['*'], ['*']), url(['*'], ['*'])], { [BOOTSTRAP_LABEL]: 'rbac-defaults' }),
    role('admin', [], {}, AGGREGATE_TO_ADMIN),
    role('edit', [], { [AGGREGATE_TO_ADMIN]: 'true' }, AGGREGATE_TO_EDIT),
    role('view', [], { [AGGREGATE_TO_EDIT]: 'true' }, AGGREGATE_TO_VIEW),
    role('system:aggregate-to-admin', adminRules, { [AGGREGATE_TO_ADMIN]: 'true' }),
    role('system:aggregate-to-edit', editRules, { [AGGREGATE_TO_EDIT]: 'true' }),
    role('system:aggregate-to-view', viewRules, { [AGGREGATE_TO_VIEW]: 'true' }),
    // metrics.k8s.io is served in the box (resource-metrics-api.ts), so the reader role metrics-server
    // installs with it, aggregated into view/edit/admin, comes with it.
    role('system:aggregated-metrics-reader', [r(READ, ['metrics.k8s.io'], ['pods', 'nodes'])], {
      [AGGREGATE_TO_VIEW]: 'true',
      [AGGREGATE_TO_EDIT]: 'true',
      [AGGREGATE_TO_ADMIN]: 'true',
    }),
    role('system:discovery', [url(['get'], ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'])]),
    role('system:public-info-viewer', [url(['get'], ['/healthz', '/livez', '/readyz', '/version', '/version/'])]),
    role('system:monitoring', [url(['get'], ['/healthz', '/healthz/*', '/livez', '/livez/*', '/metrics', '/metrics/slis', '/readyz', '/readyz/*'])]),
    role('system:basic-user', [
      r(['create'], ['authorization.k8s.io'], ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']),
      r(['create'], ['authentication.k8s.io'], ['selfsubjectreviews']),
    ]),
    role('system:auth-delegator', [
      r(['create'], ['authentication.k8s.io'], ['tokenreviews']),
      r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
    ]),
    role('system:service-account-issuer-discovery', [url(['get'], ['/.well-known/openid-configuration', '/.well-known/openid-configuration/', '/openid/v1/jwks', '/openid/v1/jwks/'])]),
    role('system:kube-scheduler', [
      ...EVENTS,
      r(['create'], ['coordination.k8s.io'], ['leases']),
      r(['get', 'update'], ['coordination.k8s.io'], ['leases'], ['kube-scheduler']),
      r(['delete', 'get', 'list', 'watch'], [''], ['pods']),
      r(READ, [''], ['nodes']),
      r(['create'], [''], ['pods/binding', 'bindings']),
      r(['patch', 'update'], [''], ['pods/status']),
      r(READ, [''], ['replicationcontrollers', 'services']),
      r(READ, ['apps', 'extensions'], ['replicasets']),
      r(READ, ['apps'], ['statefulsets']),
      r(READ, ['policy'], ['poddisruptionbudgets']),
      r(['get', 'list', 'watch', 'update'], [''], ['persistentvolumeclaims', 'persistentvolumes']),
      r(['create'], ['authentication.k8s.io'], ['tokenreviews']),
      r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
      r(READ, ['storage.k8s.io'], ['csinodes', 'csidrivers', 'csistoragecapacities', 'storageclasses', 'volumeattachments']),
      r(READ, [''], ['namespaces']),
      r(READ, ['scheduling.k8s.io'], ['priorityclasses']),
      r(['get', 'list', 'watch'], [''], ['configmaps']),
    ]),
    role('system:volume-scheduler', [
      r(['get', 'list', 'patch', 'update', 'watch'], [''], ['persistentvolumes']),
      r(READ, ['storage.k8s.io'], ['storageclasses']),
      r(['get', 'list', 'patch', 'update', 'watch'], [''], ['persistentvolumeclaims']),
    ]),
    role('system:kube-controller-manager', [
      ...EVENTS,
      r(['create'], ['coordination.k8s.io'], ['leases']),
      r(['get', 'update'], ['coordination.k8s.io'], ['leases'], ['kube-controller-manager']),
      r(['create'], [''], ['secrets', 'serviceaccounts']),
      r(['delete'], [''], ['secrets']),
      r(['get'], [''], ['configmaps', 'namespaces', 'secrets', 'serviceaccounts']),
      r(['update'], [''], ['secrets', 'serviceaccounts']),
      r(['create'], ['authentication.k8s.io'], ['tokenreviews']),
      r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews']),
      r(['list', 'watch'], ['*'], ['*']),
      r(['create'], [''], ['serviceaccounts/token']),
    ]),
    role('system:node', [
      r(['create'], ['authentication.k8s.io'], ['tokenreviews']),
      r(['create'], ['authorization.k8s.io'], ['subjectaccessreviews', 'localsubjectaccessreviews']),
      r(READ, [''], ['services']),
      r(['create', 'get', 'list', 'watch', 'delete', 'patch', 'update'], [''], ['nodes']),
      r(['patch', 'update'], [''], ['nodes/status']),
      r(['create', 'patch', 'update'], [''], ['events']),
      r(['get', 'list', 'watch'], [''], ['pods']),
      r(['create', 'delete'], [''], ['pods']),
      r(['update', 'patch'], [''], ['pods/status']),
      r(['create'], [''], ['pods/eviction']),
      r(['get'], [''], ['secrets', 'configmaps', 'persistentvolumeclaims', 'persistentvolumes', 'endpoints']),
      r(['get', 'update', 'patch'], [''], ['persistentvolumeclaims/status']),
      r(['get'], ['storage.k8s.io'], ['volumeattachments']),
      r(['create'], [''], ['serviceaccounts/token']),
      r(['get'], ['storage.k8s.io'], ['csidrivers']),
      r(['get', 'create', 'update', 'patch', 'delete', 'list', 'watch'], ['storage.k8s.io'], ['csinodes']),
      r(['get', 'create', 'update', 'patch', 'delete'], ['coordination.k8s.io'], ['leases']),
      r(READ, ['node.k8s.io'], ['runtimeclasses']),
    ]),
    role('system:node-proxier', [
      r(['list', 'watch'], [''], ['services', 'endpoints']),
      r(['get', 'list', 'watch'], [''], ['nodes']),
      ...EVENTS,
      r(['list', 'watch'], ['discovery.k8s.io'], ['endpointslices']),
    ]),
    role('system:kube-dns', [r(['list', 'watch'], [''], ['endpoints', 'services']), r(['list', 'watch'], ['discovery.k8s.io'], ['endpointslices'])]),
    role('system:node-bootstrapper', [r(['create', 'get', 'list', 'watch'], ['certificates.k8s.io'], ['certificatesigningrequests'])]),
  ];
}

/** The default ClusterRoleBindings. */
export function bootstrapClusterRoleBindings(): ClusterRoleBinding[] {
  return [
    binding('cluster-admin', 'cluster-admin', [group('system:masters')]),
    binding('system:discovery', 'system:discovery', [group('system:authenticated')]),
    binding('system:basic-user', 'system:basic-user', [group('system:authenticated')]),
    binding('system:public-info-viewer', 'system:public-info-viewer', [group('system:authenticated'), group('system:unauthenticated')]),
    binding('system:monitoring', 'system:monitoring', [group('system:monitoring')]),
    binding('system:service-account-issuer-discovery', 'system:service-account-issuer-discovery', [group('system:serviceaccounts')]),
    binding('system:kube-scheduler', 'system:kube-scheduler', [user('system:kube-scheduler')]),
    binding('system:volume-scheduler', 'system:volume-scheduler', [user('system:kube-scheduler')]),
    binding('system:kube-controller-manager', 'system:kube-controller-manager', [user('system:kube-controller-manager')]),
    binding('system:node-proxier', 'system:node-proxier', [user('system:kube-proxy')]),
    binding('system:kube-dns', 'system:kube-dns', [{ kind: 'ServiceAccount', name: 'kube-dns', namespace: 'kube-system' }]),
    // Nodes get their rights from the Node authorizer (node-authorizer.ts), so, as upstream, this binding
    // names no one; binding the system:nodes group here would let every kubelet read every Secret.
    binding('system:node', 'system:node', []),
  ];
}

const EVENTS_RULE = r(['create', 'update', 'patch'], ['', 'events.k8s.io'], ['events']);
export const CONTROLLER_ROLE_PREFIX = 'system:controller:';

/**
 * The roles of kube-controller-manager's controllers, each `system:controller:<name>` bound to the
 * ServiceAccount kube-system/<name> the controller runs as (--use-service-account-credentials): those of
 * the controllers kemu runs, with upstream's rules.
 */
export function bootstrapControllerRoles(): ClusterRole[] {
  const c = (name: string, rules: PolicyRule[]) => role(`${CONTROLLER_ROLE_PREFIX}${name}`, rules);
  const APPS = ['extensions', 'apps'];
  return [
    c('attachdetach-controller', [
      r(['list', 'watch'], [''], ['persistentvolumes', 'persistentvolumeclaims']),
      r(READ, [''], ['nodes']),
      r(['patch', 'update'], [''], ['nodes/status']),
      r(['list', 'watch'], [''], ['pods']),
      EVENTS_RULE,
      r(['get', 'create', 'delete', 'list', 'watch'], ['storage.k8s.io'], ['volumeattachments']),
      r(READ, ['storage.k8s.io'], ['csidrivers']),
      r(READ, ['storage.k8s.io'], ['csinodes']),
    ]),
    c('clusterrole-aggregation-controller', [r(['escalate', 'get', 'list', 'watch', 'update', 'patch'], [RBAC_GROUP], ['clusterroles'])]),
    c('cronjob-controller', [
      r(['get', 'list', 'watch', 'update'], ['batch'], ['cronjobs']),
      r(['get', 'list', 'watch', 'create', 'update', 'delete', 'patch'], ['batch'], ['jobs']),
      r(['update'], ['batch'], ['cronjobs/status']),
      r(['update'], ['batch'], ['cronjobs/finalizers']),
      r(['list', 'watch', 'delete'], [''], ['pods']),
      EVENTS_RULE,
    ]),
    c('daemon-set-controller', [
      r(READ, APPS, ['daemonsets']),
      r(['update'], APPS, ['daemonsets/status']),
      r(['update'], APPS, ['daemonsets/finalizers']),
      r(['list', 'watch'], [''], ['nodes']),
      r(['list', 'watch', 'create', 'delete', 'patch'], [''], ['pods']),
      r(['create'], [''], ['pods/binding']),
      r(['get', 'list', 'watch', 'create', 'delete', 'update', 'patch'], ['apps'], ['controllerrevisions']),
      EVENTS_RULE,
    ]),
    c('deployment-controller', [
      r(['get', 'list', 'watch', 'update'], APPS, ['deployments']),
      r(['update'], APPS, ['deployments/status']),
      r(['update'], APPS, ['deployments/finalizers']),
      r(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'], APPS, ['replicasets']),
      r(['get', 'list', 'watch', 'update'], [''], ['pods']),
      EVENTS_RULE,
    ]),
    c('disruption-controller', [
      r(READ, APPS, ['deployments']),
      r(READ, APPS, ['replicasets']),
      r(READ, [''], ['replicationcontrollers']),
      r(READ, ['policy'], ['poddisruptionbudgets']),
      r(READ, ['apps'], ['statefulsets']),
      r(['update'], ['policy'], ['poddisruptionbudgets/status']),
      r(['patch', 'update'], [''], ['pods/status']),
      r(['get'], ['*'], ['*/scale']),
      EVENTS_RULE,
    ]),
    c('endpoint-controller', [
      r(READ, [''], ['services', 'pods']),
      r(['get', 'list', 'watch', 'create', 'update', 'delete'], [''], ['endpoints']),
      r(['create'], [''], ['endpoints/restricted']),
      EVENTS_RULE,
    ]),
    c('endpointslice-controller', [
      r(READ, [''], ['services', 'pods', 'nodes']),
      r(['update'], [''], ['services/finalizers']),
      r(['get', 'list', 'watch', 'create', 'update', 'delete'], ['discovery.k8s.io'], ['endpointslices']),
      EVENTS_RULE,
    ]),
    c('ephemeral-volume-controller', [
      r(READ, [''], ['pods']),
      r(['update'], [''], ['pods/finalizers']),
      r(['get', 'list', 'watch', 'create'], [''], ['persistentvolumeclaims']),
      EVENTS_RULE,
    ]),
    c('generic-garbage-collector', [r(['get', 'list', 'watch', 'patch', 'update', 'delete'], ['*'], ['*']), EVENTS_RULE]),
    c('horizontal-pod-autoscaler', [
      r(READ, ['autoscaling'], ['horizontalpodautoscalers']),
      r(['update'], ['autoscaling'], ['horizontalpodautoscalers/status']),
      r(['get', 'update'], ['*'], ['*/scale']),
      r(['list', 'watch'], [''], ['pods']),
      r(['list', 'watch'], ['metrics.k8s.io'], ['pods']),
      r(READ, ['custom.metrics.k8s.io'], ['*']),
      r(READ, ['external.metrics.k8s.io'], ['*']),
      EVENTS_RULE,
    ]),
    c('job-controller', [
      r(['get', 'list', 'watch', 'update', 'patch'], ['batch'], ['jobs']),
      r(['update'], ['batch'], ['jobs/status']),
      r(['update'], ['batch'], ['jobs/finalizers']),
      r(['list', 'watch', 'create', 'delete', 'patch'], [''], ['pods']),
      EVENTS_RULE,
    ]),
    c('namespace-controller', [
      r(['get', 'list', 'watch', 'delete'], [''], ['namespaces']),
      r(['update'], [''], ['namespaces/finalize', 'namespaces/status']),
      r(['get', 'list', 'watch', 'delete', 'deletecollection'], ['*'], ['*']),
    ]),
    c('node-controller', [
      r(['get', 'list', 'watch', 'update', 'delete', 'patch'], [''], ['nodes']),
      r(['patch', 'update'], [''], ['nodes/status']),
      r(['patch', 'update'], [''], ['pods/status']),
      r(['list', 'watch', 'get', 'delete'], [''], ['pods']),
      EVENTS_RULE,
    ]),
    c('persistent-volume-binder', [
      r(['get', 'list', 'watch', 'update', 'create', 'delete'], [''], ['persistentvolumes']),
      r(['update'], [''], ['persistentvolumes/status']),
      r(['get', 'list', 'watch', 'update'], [''], ['persistentvolumeclaims']),
      r(['update'], [''], ['persistentvolumeclaims/status']),
      r(['list', 'watch', 'get', 'create', 'delete'], [''], ['pods']),
      r(READ, ['storage.k8s.io'], ['storageclasses']),
      r(['list', 'watch'], [''], ['nodes']),
      EVENTS_RULE,
      r(['watch'], [''], ['events']),
      r(['get'], [''], ['services']),
    ]),
    c('pod-garbage-collector', [r(['list', 'watch', 'delete'], [''], ['pods']), r(READ, [''], ['nodes']), r(['patch'], [''], ['pods/status'])]),
    c('replicaset-controller', [
      r(['get', 'list', 'watch', 'update'], APPS, ['replicasets']),
      r(['update'], APPS, ['replicasets/status']),
      r(['update'], APPS, ['replicasets/finalizers']),
      r(['list', 'watch', 'patch', 'create', 'delete'], [''], ['pods']),
      EVENTS_RULE,
    ]),
    c('replication-controller', [
      r(['get', 'list', 'watch', 'update'], [''], ['replicationcontrollers']),
      r(['update'], [''], ['replicationcontrollers/status']),
      r(['update'], [''], ['replicationcontrollers/finalizers']),
      r(['list', 'watch', 'patch', 'create', 'delete'], [''], ['pods']),
      EVENTS_RULE,
    ]),
    c('resourcequota-controller', [r(['list', 'watch'], ['*'], ['*']), r(['update'], [''], ['resourcequotas/status']), EVENTS_RULE]),
    c('root-ca-cert-publisher', [r(['create', 'update'], [''], ['configmaps']), EVENTS_RULE]),
    c('service-account-controller', [r(['create'], [''], ['serviceaccounts']), EVENTS_RULE]),
    // The cloud provider's LoadBalancer controller (kemu's LoadBalancer address allocator runs as it).
    c('service-controller', [
      r(READ, [''], ['services']),
      r(['patch', 'update'], [''], ['services/status']),
      r(['list', 'watch'], [''], ['nodes']),
      EVENTS_RULE,
    ]),
    c('statefulset-controller', [
      r(['list', 'watch'], [''], ['pods']),
      r(READ, ['apps'], ['statefulsets']),
      r(['update'], ['apps'], ['statefulsets/status']),
      r(['update'], ['apps'], ['statefulsets/finalizers']),
      r(['get', 'create', 'delete', 'update', 'patch'], [''], ['pods']),
      r(['get', 'create', 'delete', 'update', 'patch', 'list', 'watch'], ['apps'], ['controllerrevisions']),
      r(['get', 'create', 'list', 'watch'], [''], ['persistentvolumeclaims']),
      r(['update', 'delete'], [''], ['persistentvolumeclaims']),
      r(['update'], [''], ['pods/finalizers']),
      EVENTS_RULE,
    ]),
    c('ttl-after-finished-controller', [r(['get', 'list', 'watch', 'delete'], ['batch'], ['jobs']), EVENTS_RULE]),
  ];
}

/** The ServiceAccounts (all in kube-system) the controllers run as, by name. */
export function controllerServiceAccountNames(): string[] {
  return bootstrapControllerRoles().map((cr) => cr.metadata.name!.slice(CONTROLLER_ROLE_PREFIX.length));
}

/** Each controller role bound to its controller's ServiceAccount in kube-system. */
export function bootstrapControllerRoleBindings(): ClusterRoleBinding[] {
  return bootstrapControllerRoles().map((cr) => {
    const sa = cr.metadata.name!.slice(CONTROLLER_ROLE_PREFIX.length);
    return binding(cr.metadata.name!, cr.metadata.name!, [{ kind: 'ServiceAccount', name: sa, namespace: 'kube-system' }]);
  });
}

/**
 * Creates the default roles and bindings that are missing, as kube-apiserver does at start. Existing ones are
 * left as they are (upstream reconciles those annotated autoupdate; a user's edits to them survive here).
 */
export async function ensureBootstrapPolicy(store: Store): Promise<void> {
  for (const obj of [...bootstrapClusterRoles(), ...bootstrapControllerRoles(), ...bootstrapClusterRoleBindings(), ...bootstrapControllerRoleBindings()]) {
    try {
      await store.create(obj);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
}
