// Schema of rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding, ClusterRoleBinding.
// Field names, protobuf numbers, types and list types follow upstream's API (1.32).
import { f, META, schemaModule, type } from './dsl.js';

const atomic = { listType: 'atomic' as const };

export default schemaModule(
  'io.k8s.api.rbac.v1',
  {
    PolicyRule: type('Verbs allowed on resources (optionally by name) in API groups, or on non-resource URLs.', {
      verbs: f(1, '[]string', 'Verbs the rule allows; * means all.', { required: true, ...atomic }),
      apiGroups: f(2, '[]string', 'API groups of the resources; "" is the core group, * means all.', atomic),
      resources: f(3, '[]string', 'Resources (resource/subresource allowed); * means all, */sub a subresource of all.', atomic),
      resourceNames: f(4, '[]string', 'Names the rule is limited to; empty means all.', atomic),
      nonResourceURLs: f(5, '[]string', 'URL paths (a trailing * matches a prefix); only in cluster-wide rules.', atomic),
    }),
    AggregationRule: type('How a ClusterRole collects the rules of other ClusterRoles.', {
      clusterRoleSelectors: f(1, `[]${META}LabelSelector`, 'ClusterRoles matching any selector contribute their rules.', atomic),
    }),
    Role: type('Rules in one namespace, granted through RoleBindings.', {
      metadata: f(1, `${META}ObjectMeta`),
      rules: f(2, '[]PolicyRule', 'The rules.', atomic),
    }),
    ClusterRole: type('Rules cluster-wide or, through a RoleBinding, in one namespace.', {
      metadata: f(1, `${META}ObjectMeta`),
      rules: f(2, '[]PolicyRule', 'The rules (managed by the controller when aggregationRule is set).', atomic),
      aggregationRule: f(3, 'AggregationRule', 'Build the rules from other ClusterRoles.'),
    }),
    RoleRef: type('The role a binding grants.', {
      apiGroup: f(1, 'string', 'Group of the role (rbac.authorization.k8s.io).', { required: true }),
      kind: f(2, 'string', 'Role or ClusterRole.', { required: true }),
      name: f(3, 'string', 'Name of the role.', { required: true }),
    }, 'atomic'),
    Subject: type('A user, group or ServiceAccount a binding applies to.', {
      kind: f(1, 'string', 'User, Group or ServiceAccount.', { required: true }),
      apiGroup: f(2, 'string', 'rbac.authorization.k8s.io for User and Group, "" for ServiceAccount.'),
      name: f(3, 'string', 'Name of the subject.', { required: true }),
      namespace: f(4, 'string', 'Namespace of a ServiceAccount.'),
    }, 'atomic'),
    RoleBinding: type('Grants a role to subjects in one namespace.', {
      metadata: f(1, `${META}ObjectMeta`),
      subjects: f(2, '[]Subject', 'Who the role is granted to.', atomic),
      roleRef: f(3, 'RoleRef', 'The role; fixed once created.', { required: true }),
    }),
    ClusterRoleBinding: type('Grants a ClusterRole to subjects cluster-wide.', {
      metadata: f(1, `${META}ObjectMeta`),
      subjects: f(2, '[]Subject', 'Who the role is granted to.', atomic),
      roleRef: f(3, 'RoleRef', 'The ClusterRole; fixed once created.', { required: true }),
    }),
  },
  [
    { kind: 'Role', apiVersion: 'rbac.authorization.k8s.io/v1', type: 'Role' },
    { kind: 'ClusterRole', apiVersion: 'rbac.authorization.k8s.io/v1', type: 'ClusterRole' },
    { kind: 'RoleBinding', apiVersion: 'rbac.authorization.k8s.io/v1', type: 'RoleBinding' },
    { kind: 'ClusterRoleBinding', apiVersion: 'rbac.authorization.k8s.io/v1', type: 'ClusterRoleBinding' },
  ],
);
