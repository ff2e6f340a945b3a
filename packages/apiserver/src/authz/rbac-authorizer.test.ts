import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RequestInfo, UserInfo } from '../auth-seams.js';
import { ensureBootstrapPolicy } from './bootstrap-policy.js';
import { ClusterRoleAggregationController } from './cluster-role-aggregation.js';
import { RBACAuthorizer } from './rbac-authorizer.js';
import { InformerRBACSource } from './rbac-source.js';

const V = 'rbac.authorization.k8s.io/v1';
const G = 'rbac.authorization.k8s.io';

function req(verb: string, resource: string, namespace = '', extra: Partial<RequestInfo> = {}): RequestInfo {
  return {
    isResourceRequest: true,
    path: '',
    verb,
    apiPrefix: 'api',
    apiGroup: '',
    apiVersion: 'v1',
    namespace,
    resource,
    subresource: '',
    name: '',
    ...extra,
  };
}
const alice: UserInfo = { name: 'alice', groups: ['system:authenticated'] };

describe('RBAC authorizer', () => {
  let store: Store;
  let source: InformerRBACSource;
  let aggregation: ClusterRoleAggregationController;
  let authz: RBACAuthorizer;
  const can = async (user: UserInfo, r: RequestInfo) => (await authz.authorize({ ...r, user })).decision;

  beforeEach(async () => {
    store = await createMemoryStore();
    await ensureBootstrapPolicy(store);
    for (const name of ['dev', 'prod']) await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    source = new InformerRBACSource(store);
    await source.start();
    aggregation = new ClusterRoleAggregationController(store, source.clusterRolesInformer);
    await aggregation.start(false);
    authz = new RBACAuthorizer(source);
  });
  afterEach(async () => {
    await aggregation.stop(false);
    await source.stop();
  });

  const settle = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 5));
  };

  it('lets system:masters do anything, resource or not', async () => {
    const admin: UserInfo = { name: 'root', groups: ['system:masters'] };
    expect(await can(admin, req('delete', 'nodes'))).toBe('allow');
    const r = await authz.authorize({ ...req('get', ''), isResourceRequest: false, path: '/metrics', user: admin });
    expect(r).toEqual({ decision: 'allow', reason: 'RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters"' });
  });

  it('gives a Role only in its namespace, and matches subresources, names and wildcards as upstream', async () => {
    await store.create({
      apiVersion: V,
      kind: 'Role',
      metadata: { name: 'reader', namespace: 'dev' },
      rules: [
        { verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'pods/log'] },
        { verbs: ['update'], apiGroups: ['apps'], resources: ['*/scale'] },
        { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['app-config'] },
      ],
    } as KubeObject);
    await store.create({
      apiVersion: V,
      kind: 'RoleBinding',
      metadata: { name: 'alice-reads', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'alice' }],
    } as KubeObject);
    await settle(async () => (await can(alice, req('list', 'pods', 'dev'))) === 'allow');
    expect(await can(alice, req('list', 'pods', 'dev'))).toBe('allow');
    expect(await can(alice, req('list', 'pods', 'prod'))).toBe('no-opinion');
    expect(await can(alice, req('list', 'pods'))).toBe('no-opinion');
    expect(await can(alice, req('get', 'pods', 'dev', { subresource: 'log', name: 'web' }))).toBe('allow');
    expect(await can(alice, req('create', 'pods', 'dev', { subresource: 'exec', name: 'web' }))).toBe('no-opinion');
    expect(await can(alice, req('update', 'deployments', 'dev', { apiGroup: 'apps', subresource: 'scale' }))).toBe('allow');
    expect(await can(alice, req('update', 'deployments', 'dev', { apiGroup: 'apps' }))).toBe('no-opinion');
    expect(await can(alice, req('get', 'configmaps', 'dev', { name: 'app-config' }))).toBe('allow');
    expect(await can(alice, req('get', 'configmaps', 'dev', { name: 'other' }))).toBe('no-opinion');
    // A list is a request without a name: a rule limited by resourceNames does not cover it.
    expect(await can(alice, req('list', 'configmaps', 'dev'))).toBe('no-opinion');
  });

  it('binds ServiceAccounts by their user name, defaulting the namespace to the binding', async () => {
    await store.create({
      apiVersion: V,
      kind: 'RoleBinding',
      metadata: { name: 'sa-view', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'builder' }],
    } as KubeObject);
    const sa: UserInfo = { name: 'system:serviceaccount:dev:builder', groups: ['system:serviceaccounts', 'system:serviceaccounts:dev', 'system:authenticated'] };
    const other: UserInfo = { name: 'system:serviceaccount:prod:builder', groups: ['system:serviceaccounts'] };
    await settle(async () => (await can(sa, req('list', 'pods', 'dev'))) === 'allow');
    expect(await can(sa, req('list', 'pods', 'dev'))).toBe('allow');
    expect(await can(other, req('list', 'pods', 'dev'))).toBe('no-opinion');
    // view does not include secrets
    expect(await can(sa, req('get', 'secrets', 'dev'))).toBe('no-opinion');
    // view includes the pods' resource metrics, as metrics-server's aggregated reader role adds them
    expect(await can(sa, req('list', 'pods', 'dev', { apiGroup: 'metrics.k8s.io', apiVersion: 'v1beta1', apiPrefix: 'apis' }))).toBe('allow');
    expect(await can(sa, req('list', 'pods', 'prod', { apiGroup: 'metrics.k8s.io', apiVersion: 'v1beta1', apiPrefix: 'apis' }))).toBe('no-opinion');
  });

  it('reports a binding to a missing role as upstream does', async () => {
    await store.create({
      apiVersion: V,
      kind: 'ClusterRoleBinding',
      metadata: { name: 'dangling' },
      roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'nope' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'alice' }],
    } as KubeObject);
    let r = await authz.authorize({ ...req('get', 'pods', 'dev'), user: alice });
    await settle(async () => {
      r = await authz.authorize({ ...req('get', 'pods', 'dev'), user: alice });
      return r.reason !== '';
    });
    expect(r).toEqual({ decision: 'no-opinion', reason: 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found' });
  });

  it('gives every authenticated user discovery and self-review rights only', async () => {
    expect(await authz.authorize({ ...req('get', ''), isResourceRequest: false, path: '/apis/apps/v1', user: alice })).toMatchObject({ decision: 'allow' });
    expect(await can(alice, req('create', 'selfsubjectaccessreviews', '', { apiGroup: 'authorization.k8s.io' }))).toBe('allow');
    expect(await can(alice, req('list', 'namespaces'))).toBe('no-opinion');
    const anon: UserInfo = { name: 'system:anonymous', groups: ['system:unauthenticated'] };
    expect((await authz.authorize({ ...req('get', ''), isResourceRequest: false, path: '/version', user: anon })).decision).toBe('allow');
    expect((await authz.authorize({ ...req('get', ''), isResourceRequest: false, path: '/api', user: anon })).decision).toBe('no-opinion');
  });

  it('aggregates labelled ClusterRoles into admin, edit and view, and follows later changes', async () => {
    const rules = async (name: string) => (await store.get('ClusterRole', '', name)).rules ?? [];
    await settle(async () => (await rules('admin')).length > 0);
    const has = (rs: any[], res: string, verb: string) => rs.some((r) => r.resources?.includes(res) && r.verbs.includes(verb));
    expect(has(await rules('view'), 'pods', 'list')).toBe(true);
    expect(has(await rules('view'), 'secrets', 'get')).toBe(false);
    expect(has(await rules('edit'), 'pods', 'list')).toBe(true);
    expect(has(await rules('edit'), 'secrets', 'create')).toBe(true);
    expect(has(await rules('admin'), 'rolebindings', 'create')).toBe(true);
    await store.create({
      apiVersion: V,
      kind: 'ClusterRole',
      metadata: { name: 'widgets-view', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
      rules: [{ verbs: ['get'], apiGroups: ['example.com'], resources: ['widgets'] }],
    } as KubeObject);
    await settle(async () => has(await rules('admin'), 'widgets', 'get'));
    for (const n of ['view', 'edit', 'admin']) expect(has(await rules(n), 'widgets', 'get')).toBe(true);
    await store.delete('ClusterRole', '', 'widgets-view');
    await settle(async () => !has(await rules('admin'), 'widgets', 'get'));
    expect(has(await rules('view'), 'widgets', 'get')).toBe(false);
  });
});
