import { createMemoryStore, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuthorizationAttributes, UserInfo } from '../auth-seams.js';
import { DecisionCache } from './decision-cache.js';
import { RBACAuthorizer } from './rbac-authorizer.js';
import { InformerRBACSource } from './rbac-source.js';

const G = 'rbac.authorization.k8s.io';
const bob: UserInfo = { name: 'bob', groups: ['system:authenticated'] };
const get = (name: string, resource = 'configmaps'): AuthorizationAttributes => ({
  user: bob,
  isResourceRequest: true,
  path: '',
  verb: 'get',
  apiPrefix: 'api',
  apiGroup: '',
  apiVersion: 'v1',
  namespace: 'dev',
  resource,
  subresource: '',
  name,
});

describe('cached RBAC decisions', () => {
  let store: Store;
  let source: InformerRBACSource;
  let cache: DecisionCache;
  let rbac: RBACAuthorizer;
  const until = async (cond: () => Promise<boolean>) => {
    for (let i = 0; i < 200 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 5));
  };
  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    // Bob may get one ConfigMap by name, and every Secret.
    await store.create({
      apiVersion: `${G}/v1`,
      kind: 'Role',
      metadata: { name: 'one', namespace: 'dev' },
      rules: [
        { apiGroups: [''], resources: ['configmaps'], resourceNames: ['a', ''], verbs: ['get'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
      ],
    });
    await store.create({
      apiVersion: `${G}/v1`,
      kind: 'RoleBinding',
      metadata: { name: 'bob', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'Role', name: 'one' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'bob' }],
    });
    source = new InformerRBACSource(store);
    await source.start();
    rbac = new RBACAuthorizer(source);
    cache = new DecisionCache(rbac, source);
  });
  afterEach(() => source.stop());

  it('gives the uncached answer for named objects, asked in any order and again', async () => {
    for (const attrs of [get('b'), get('a'), get('b'), get(''), get('x', 'secrets'), get('a'), get('b'), get('y', 'secrets')]) {
      expect(await cache.authorize(attrs)).toEqual(await rbac.authorize(attrs));
    }
    // A rule listing names allows those alone, even when one of them is empty.
    expect((await cache.authorize(get('b'))).decision).toBe('no-opinion');
    expect((await cache.authorize(get('a'))).decision).toBe('allow');
  });

  it('keeps apart users whose groups only differ in where a comma falls', async () => {
    await store.create({
      apiVersion: `${G}/v1`,
      kind: 'RoleBinding',
      metadata: { name: 'split', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'Role', name: 'one' },
      subjects: [{ kind: 'Group', apiGroup: G, name: 'a' }],
    });
    await until(async () => (await rbac.authorize({ ...get('x', 'secrets'), user: { name: 'carol', groups: ['a', 'b'] } })).decision === 'allow');
    expect((await cache.authorize({ ...get('x', 'secrets'), user: { name: 'carol', groups: ['a', 'b'] } })).decision).toBe('allow');
    expect((await cache.authorize({ ...get('x', 'secrets'), user: { name: 'carol', groups: ['a,b'] } })).decision).toBe('no-opinion');
  });

  it('forgets its answers when the policy changes', async () => {
    expect((await cache.authorize(get('x', 'secrets'))).decision).toBe('allow');
    await store.delete('RoleBinding', 'dev', 'bob');
    await until(async () => (await cache.authorize(get('x', 'secrets'))).decision !== 'allow');
    expect(await cache.authorize(get('x', 'secrets'))).toEqual({ decision: 'no-opinion', reason: '' });
  });
});
