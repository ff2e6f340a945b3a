// Validation and defaulting of the RBAC kinds, with the field paths and wording of kube-apiserver.
import type { KubeObject, LabelSelector } from './api-meta.js';
import { type PolicyRule, RBAC_GROUP, type Subject } from './api-rbac.js';
import type { FieldErrors } from './field-errors.js';
import { dns1123Subdomain, pathSegmentName } from './names.js';

const LABEL_OPS = ['DoesNotExist', 'Exists', 'In', 'NotIn'];

/** RBAC object names are path segments (`system:controller:x` is valid), not DNS names. */
export const rbacName = pathSegmentName;

export function isRBACKind(kind: string): boolean {
  return kind === 'Role' || kind === 'ClusterRole' || kind === 'RoleBinding' || kind === 'ClusterRoleBinding';
}

/** Defaults the API server applies: subjects' and roleRef's apiGroup. */
export function defaultRBAC(obj: KubeObject): void {
  if (obj.kind !== 'RoleBinding' && obj.kind !== 'ClusterRoleBinding') return;
  if (obj.roleRef && !obj.roleRef.apiGroup) obj.roleRef.apiGroup = RBAC_GROUP;
  for (const s of (obj.subjects ?? []) as Subject[]) {
    if (s && s.apiGroup === undefined) s.apiGroup = s.kind === 'User' || s.kind === 'Group' ? RBAC_GROUP : '';
  }
}

function validateRule(e: FieldErrors, path: string, rule: PolicyRule, namespaced: boolean): void {
  if (!rule || typeof rule !== 'object') {
    e.invalid(path, rule, 'must be an object');
    return;
  }
  if (!rule.verbs?.length) e.required(`${path}.verbs`, 'verbs must contain at least one value');
  if (rule.nonResourceURLs?.length) {
    if (namespaced) e.invalid(`${path}.nonResourceURLs`, rule.nonResourceURLs, 'namespaced rules cannot apply to non-resource URLs');
    if (rule.apiGroups?.length || rule.resources?.length || rule.resourceNames?.length) {
      e.invalid(`${path}.nonResourceURLs`, rule.nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs');
    }
    return;
  }
  if (!rule.apiGroups?.length) e.required(`${path}.apiGroups`, 'resource rules must supply at least one api group');
  if (!rule.resources?.length) e.required(`${path}.resources`, 'resource rules must supply at least one resource');
}

function validateSelector(e: FieldErrors, path: string, sel: LabelSelector): void {
  (sel?.matchExpressions ?? []).forEach((x, i) => {
    const p = `${path}.matchExpressions[${i}]`;
    if (!LABEL_OPS.includes(x.operator)) e.notSupported(`${p}.operator`, x.operator, LABEL_OPS);
    else if ((x.operator === 'In' || x.operator === 'NotIn') && !x.values?.length) {
      e.required(`${p}.values`, "must be specified when `operator` is 'In' or 'NotIn'");
    } else if ((x.operator === 'Exists' || x.operator === 'DoesNotExist') && x.values?.length) {
      e.forbidden(`${p}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
    }
  });
}

function validateSubject(e: FieldErrors, path: string, s: Subject, namespaced: boolean): void {
  if (!s?.name) e.required(`${path}.name`);
  switch (s?.kind) {
    case 'ServiceAccount':
      if (s.name) e.check(`${path}.name`, s.name, dns1123Subdomain(s.name));
      if (s.apiGroup) e.notSupported(`${path}.apiGroup`, s.apiGroup, ['']);
      if (!namespaced && !s.namespace) e.required(`${path}.namespace`);
      break;
    case 'User':
    case 'Group':
      if (s.apiGroup !== RBAC_GROUP) e.notSupported(`${path}.apiGroup`, s.apiGroup ?? '', [RBAC_GROUP]);
      break;
    default:
      e.notSupported(`${path}.kind`, s?.kind ?? '', ['ServiceAccount', 'User', 'Group']);
  }
}

/** Field errors of an RBAC object's body (metadata is checked by the caller). */
export function validateRBAC(e: FieldErrors, obj: KubeObject): void {
  switch (obj.kind) {
    case 'Role':
    case 'ClusterRole': {
      const namespaced = obj.kind === 'Role';
      if (obj.rules !== undefined && !Array.isArray(obj.rules)) e.invalid('rules', obj.rules, 'must be a list');
      else (obj.rules ?? []).forEach((r: PolicyRule, i: number) => validateRule(e, `rules[${i}]`, r, namespaced));
      const agg = obj.aggregationRule;
      if (obj.kind === 'ClusterRole' && agg) {
        if (!agg.clusterRoleSelectors?.length) {
          e.required('aggregationRule.clusterRoleSelectors', 'at least one clusterRoleSelector required if aggregationRule is non-nil');
        }
        (agg.clusterRoleSelectors ?? []).forEach((s: LabelSelector, i: number) =>
          validateSelector(e, `aggregationRule.clusterRoleSelectors[${i}]`, s),
        );
      }
      break;
    }
    case 'RoleBinding':
    case 'ClusterRoleBinding': {
      const namespaced = obj.kind === 'RoleBinding';
      const ref = obj.roleRef;
      if (!ref || typeof ref !== 'object') {
        e.required('roleRef');
        break;
      }
      if (ref.apiGroup !== RBAC_GROUP) e.notSupported('roleRef.apiGroup', ref.apiGroup ?? '', [RBAC_GROUP]);
      const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
      if (!kinds.includes(ref.kind)) e.notSupported('roleRef.kind', ref.kind ?? '', kinds);
      if (!ref.name) e.required('roleRef.name');
      else e.check('roleRef.name', ref.name, rbacName(ref.name));
      if (obj.subjects !== undefined && !Array.isArray(obj.subjects)) e.invalid('subjects', obj.subjects, 'must be a list');
      else (obj.subjects ?? []).forEach((s: Subject, i: number) => validateSubject(e, `subjects[${i}]`, s, namespaced));
      break;
    }
  }
}

/** Field errors of an RBAC update beyond validating the new object: a binding's roleRef is fixed. */
export function validateRBACUpdate(e: FieldErrors, next: KubeObject, prev: KubeObject): void {
  if (next.kind !== 'RoleBinding' && next.kind !== 'ClusterRoleBinding') return;
  const a = prev.roleRef ?? {};
  const b = next.roleRef ?? {};
  if (a.apiGroup !== b.apiGroup || a.kind !== b.kind || a.name !== b.name) e.invalid('roleRef', b, 'cannot change roleRef');
}
