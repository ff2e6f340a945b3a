// rbac.authorization.k8s.io/v1: Role, ClusterRole (with aggregation), RoleBinding, ClusterRoleBinding.
import type { KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';

export const RBAC_GROUP = 'rbac.authorization.k8s.io';
export const RBAC_API_VERSION = 'rbac.authorization.k8s.io/v1';

/** One rule: verbs on resources (optionally by name) in API groups, or verbs on non-resource URLs. */
export interface PolicyRule {
  verbs: string[];
  apiGroups?: string[];
  /** Plural resources, `resource/subresource`, `*`, `*\/subresource` or `resource/*`. */
  resources?: string[];
  resourceNames?: string[];
  /** Paths such as `/healthz`; a trailing `*` matches a prefix. Cluster-scoped rules only. */
  nonResourceURLs?: string[];
}

export interface AggregationRule {
  /** ClusterRoles whose labels match any of these selectors contribute their rules. */
  clusterRoleSelectors?: LabelSelector[];
}

export type SubjectKind = 'User' | 'Group' | 'ServiceAccount';

export interface Subject {
  kind: SubjectKind;
  /** `rbac.authorization.k8s.io` for User and Group, `` for ServiceAccount. */
  apiGroup?: string;
  name: string;
  /** Required for ServiceAccount subjects of a ClusterRoleBinding; defaults to the binding's namespace. */
  namespace?: string;
}

export interface RoleRef {
  apiGroup: string;
  kind: 'Role' | 'ClusterRole';
  name: string;
}

export interface Role extends KubeObject {
  apiVersion: typeof RBAC_API_VERSION;
  kind: 'Role';
  metadata: ObjectMeta;
  rules?: PolicyRule[];
}

export interface ClusterRole extends KubeObject {
  apiVersion: typeof RBAC_API_VERSION;
  kind: 'ClusterRole';
  metadata: ObjectMeta;
  rules?: PolicyRule[];
  aggregationRule?: AggregationRule;
}

export interface RoleBinding extends KubeObject {
  apiVersion: typeof RBAC_API_VERSION;
  kind: 'RoleBinding';
  metadata: ObjectMeta;
  subjects?: Subject[];
  roleRef: RoleRef;
}

export interface ClusterRoleBinding extends KubeObject {
  apiVersion: typeof RBAC_API_VERSION;
  kind: 'ClusterRoleBinding';
  metadata: ObjectMeta;
  subjects?: Subject[];
  roleRef: RoleRef;
}
