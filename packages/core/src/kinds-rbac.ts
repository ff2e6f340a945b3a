// Registration of the RBAC kinds (rbac.authorization.k8s.io/v1): kind registry entries, their TypeScript
// types in KindMap, defaulting and validation hooks.
import type { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from './api-rbac.js';
import { registerKindHooks } from './kind-hooks.js';
import { registerKind } from './kinds.js';
import { defaultRBAC, validateRBAC, validateRBACUpdate } from './validation-rbac.js';

declare module './kinds.js' {
  interface KindMap {
    Role: Role;
    ClusterRole: ClusterRole;
    RoleBinding: RoleBinding;
    ClusterRoleBinding: ClusterRoleBinding;
  }
}

/** The kinds this module registers (importing it registers them). */
export const RBAC_KINDS = ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'] as const;

const V = 'rbac.authorization.k8s.io/v1';
registerKind({ kind: 'Role', apiVersion: V, resource: 'roles', namespaced: true, hasStatus: false });
registerKind({ kind: 'ClusterRole', apiVersion: V, resource: 'clusterroles', namespaced: false, hasStatus: false });
registerKind({ kind: 'RoleBinding', apiVersion: V, resource: 'rolebindings', namespaced: true, hasStatus: false });
registerKind({ kind: 'ClusterRoleBinding', apiVersion: V, resource: 'clusterrolebindings', namespaced: false, hasStatus: false });

for (const kind of RBAC_KINDS) {
  registerKindHooks(kind, { defaults: defaultRBAC, validate: validateRBAC, validateUpdate: validateRBACUpdate });
}
