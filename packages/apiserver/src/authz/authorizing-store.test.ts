import { createMemoryStore, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { authorizingStore } from './authorizing-store.js';
import { ensureBootstrapPolicy } from './bootstrap-policy.js';
import { RBACAuthorizer } from './rbac-authorizer.js';
import { InformerRBACSource } from './rbac-source.js';

describe('a store seen through a component identity', () => {
  let store: Store;
  let source: InformerRBACSource;
  beforeEach(async () => {
    store = await createMemoryStore();
    await ensureBootstrapPolicy(store);
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'dev' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    source = new InformerRBACSource(store);
    await source.start();
  });
  afterEach(() => source.stop());

  it('lets the scheduler do what system:kube-scheduler allows and refuses the rest as kube-apiserver would', async () => {
    const scheduler = authorizingStore(store, { name: 'system:kube-scheduler', groups: ['system:authenticated'] }, new RBACAuthorizer(source));
    expect((await scheduler.list('Pod', { namespace: 'dev' })).items).toHaveLength(1);
    const w = await scheduler.watch('Node');
    w.stop();
    await scheduler.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'web', namespace: 'dev' }, target: { kind: 'Node', name: 'n1' } });
    expect((await store.get('Pod', 'dev', 'web')).spec.nodeName).toBe('n1');
    await expect(scheduler.delete('Namespace', '', 'dev')).rejects.toMatchObject({
      code: 403,
      message: 'namespaces "dev" is forbidden: User "system:kube-scheduler" cannot delete resource "namespaces" in API group "" at the cluster scope',
    });
    await expect(scheduler.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'dev' } })).rejects.toMatchObject({ code: 403 });
    await expect(store.get('ConfigMap', 'dev', 'x')).rejects.toMatchObject({ code: 404 });
  });
});
