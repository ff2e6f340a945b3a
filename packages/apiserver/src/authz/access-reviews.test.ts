import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthenticationRequest, UserInfo } from '../auth-seams.js';
import { HeaderImpersonator } from '../authn/impersonation.js';
import { localSubjectAccessReview, selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from './access-reviews.js';
import { ensureBootstrapPolicy } from './bootstrap-policy.js';
import { RBACAuthorizer } from './rbac-authorizer.js';
import { InformerRBACSource } from './rbac-source.js';

const G = 'rbac.authorization.k8s.io';
const alice: UserInfo = { name: 'alice', groups: ['system:authenticated'] };

describe('access reviews and impersonation over RBAC', () => {
  let store: Store;
  let source: InformerRBACSource;
  let rbac: RBACAuthorizer;

  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  };

  beforeEach(async () => {
    store = await createMemoryStore();
    await ensureBootstrapPolicy(store);
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    await store.create({
      apiVersion: `${G}/v1`,
      kind: 'Role',
      metadata: { name: 'pod-reader', namespace: 'dev' },
      rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }],
    } as KubeObject);
    await store.create({
      apiVersion: `${G}/v1`,
      kind: 'RoleBinding',
      metadata: { name: 'alice', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'Role', name: 'pod-reader' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'alice' }],
    } as KubeObject);
    source = new InformerRBACSource(store);
    await source.start();
    rbac = new RBACAuthorizer(source);
  });
  afterEach(() => source.stop());

  it('answers SelfSubjectAccessReview as kubectl auth can-i reads it', async () => {
    const yes = await selfSubjectAccessReview(rbac, alice, { spec: { resourceAttributes: { namespace: 'dev', verb: 'list', resource: 'pods' } } });
    expect(yes.status).toEqual({ allowed: true, reason: 'RBAC: allowed by RoleBinding "alice/dev" of Role "pod-reader" to User "alice"' });
    const no = await selfSubjectAccessReview(rbac, alice, { spec: { resourceAttributes: { namespace: 'dev', verb: 'delete', resource: 'pods' } } });
    expect(no.status).toEqual({ allowed: false });
    await expect(selfSubjectAccessReview(rbac, alice, { spec: {} })).rejects.toMatchObject({
      code: 422,
      message: 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified',
    });
  });

  it('checks SubjectAccessReview and LocalSubjectAccessReview specs', async () => {
    const sar = await subjectAccessReview(rbac, { spec: { user: 'alice', resourceAttributes: { namespace: 'dev', verb: 'get', resource: 'pods' } } });
    expect(sar.status.allowed).toBe(true);
    await expect(subjectAccessReview(rbac, { spec: { nonResourceAttributes: { path: '/api', verb: 'get' } } })).rejects.toMatchObject({
      message: 'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified',
    });
    const local = await localSubjectAccessReview(rbac, 'dev', { metadata: { namespace: 'dev' }, spec: { user: 'alice', resourceAttributes: { namespace: 'dev', verb: 'list', resource: 'pods' } } });
    expect(local.status.allowed).toBe(true);
    await expect(localSubjectAccessReview(rbac, 'dev', { spec: { user: 'alice', resourceAttributes: { namespace: 'prod', verb: 'list', resource: 'pods' } } })).rejects.toMatchObject({
      message: 'LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "prod": must match metadata.namespace',
    });
  });

  it('lists the rules a user holds in a namespace', () => {
    const r = selfSubjectRulesReview(rbac, alice, { spec: { namespace: 'dev' } });
    expect(r.status.resourceRules).toContainEqual({ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] });
    expect(r.status.resourceRules).toContainEqual({ verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] });
    expect(r.status.nonResourceRules.some((n) => n.nonResourceURLs?.includes('/api'))).toBe(true);
    const other = selfSubjectRulesReview(rbac, alice, { spec: { namespace: 'prod' } });
    expect(other.status.resourceRules).not.toContainEqual({ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] });
  });

  it('lets only users with the impersonate verb act as someone else', async () => {
    const imp = new HeaderImpersonator();
    const req = (headers: Record<string, string | string[]>): AuthenticationRequest => ({ method: 'GET', url: '/api', headers, localSocket: false });
    await expect(imp.impersonate(alice, req({ 'impersonate-user': 'bob' }), rbac)).rejects.toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message: 'users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope',
    });
    expect(await imp.impersonate(alice, req({}), rbac)).toEqual({ user: alice });
    await store.create({
      apiVersion: `${G}/v1`,
      kind: 'ClusterRole',
      metadata: { name: 'impersonator' },
      rules: [{ verbs: ['impersonate'], apiGroups: [''], resources: ['users', 'groups'] }],
    } as KubeObject);
    await store.create({
      apiVersion: `${G}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'alice-impersonates' },
      roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'impersonator' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'alice' }],
    } as KubeObject);
    await until(() => rbac.decide(alice, '', { isResourceRequest: true, verb: 'impersonate', apiGroup: '', resource: 'users', subresource: '', name: 'bob', path: '' }).decision === 'allow');
    const r = await imp.impersonate(alice, req({ 'impersonate-user': 'bob', 'impersonate-group': ['qa'] }), rbac);
    expect(r).toEqual({ user: { name: 'bob', groups: ['qa', 'system:authenticated'] }, impersonatedBy: alice });
    // Service accounts need the verb on serviceaccounts, which the role does not grant.
    await expect(imp.impersonate(alice, req({ 'impersonate-user': 'system:serviceaccount:dev:builder' }), rbac)).rejects.toMatchObject({
      message: 'serviceaccounts "builder" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "dev"',
    });
    await expect(imp.impersonate(alice, req({ 'impersonate-group': 'qa' }), rbac)).rejects.toMatchObject({ code: 500 });
  });
});
