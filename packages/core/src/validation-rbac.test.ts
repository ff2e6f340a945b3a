import { describe, expect, it } from 'vitest';
import type { KubeObject } from './api-meta.js';
import { applyDefaults } from './defaults.js';
import './kinds-rbac.js';
import { InvalidError } from './errors.js';
import { assertValid, updateErrors, validationErrors } from './validation.js';

const V = 'rbac.authorization.k8s.io/v1';
const msgs = (o: KubeObject) => validationErrors(o).map((c) => `${c.field}: ${c.message}`);

describe('RBAC validation', () => {
  it('accepts a ClusterRole named with colons, as the default system roles are', () => {
    const cr: KubeObject = {
      apiVersion: V,
      kind: 'ClusterRole',
      metadata: { name: 'system:controller:job-controller' },
      rules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }, { verbs: ['get'], nonResourceURLs: ['/healthz'] }],
    };
    expect(msgs(cr)).toEqual([]);
  });

  it('words rule errors as kube-apiserver does', () => {
    const role: KubeObject = {
      apiVersion: V,
      kind: 'Role',
      metadata: { name: 'r', namespace: 'default' },
      rules: [{ verbs: [] }, { verbs: ['get'], nonResourceURLs: ['/x'], resources: ['pods'] }],
    };
    expect(msgs(role)).toEqual([
      'rules[0].verbs: Required value: verbs must contain at least one value',
      'rules[0].apiGroups: Required value: resource rules must supply at least one api group',
      'rules[0].resources: Required value: resource rules must supply at least one resource',
      'rules[1].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs',
      'rules[1].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs',
    ]);
  });

  it('requires a selector in an aggregationRule', () => {
    const cr: KubeObject = { apiVersion: V, kind: 'ClusterRole', metadata: { name: 'agg' }, aggregationRule: {} };
    expect(msgs(cr)).toEqual([
      'aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil',
    ]);
  });

  it('defaults apiGroups of roleRef and subjects, then validates subjects per kind', () => {
    const rb: KubeObject = {
      apiVersion: V,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'b' },
      roleRef: { kind: 'Role', name: 'x' },
      subjects: [
        { kind: 'User', name: 'alice' },
        { kind: 'ServiceAccount', name: 'default' },
        { kind: 'Robot', name: 'r2' },
        { kind: 'Group', name: '', apiGroup: 'x' },
      ],
    };
    applyDefaults(rb);
    expect(rb.roleRef.apiGroup).toBe('rbac.authorization.k8s.io');
    expect(rb.subjects[0].apiGroup).toBe('rbac.authorization.k8s.io');
    expect(rb.subjects[1].apiGroup).toBe('');
    expect(msgs(rb)).toEqual([
      'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
      'subjects[1].namespace: Required value',
      'subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
      'subjects[3].name: Required value',
      'subjects[3].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"',
    ]);
  });

  it('refuses a changed roleRef on update', () => {
    const rb: KubeObject = {
      apiVersion: V,
      kind: 'RoleBinding',
      metadata: { name: 'b', namespace: 'default' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'a' },
      subjects: [{ kind: 'ServiceAccount', name: 'default' }],
    };
    applyDefaults(rb);
    assertValid(rb);
    const next = { ...rb, roleRef: { ...rb.roleRef, name: 'b' } };
    expect(updateErrors(next, rb).map((c) => c.message)).toEqual([
      'Invalid value: {"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"b"}: cannot change roleRef',
    ]);
    expect(() => assertValid(next, rb)).toThrow(InvalidError);
  });
});
