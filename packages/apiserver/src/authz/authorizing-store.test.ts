import { createMemoryStore, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../ca.js';
import { type ClusterAuth, startClusterAuth } from '../authn/cluster-auth.js';
import { ServiceAccountKeys } from '../authn/service-account-token.js';
import { authorizingStore } from './authorizing-store.js';
import { KUBE_PROXY, KUBE_SCHEDULER, nodeUser } from './component-identities.js';
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

describe('the stores kemu up gives its components', () => {
  let store: Store;
  let auth: ClusterAuth;
  const pod = (name: string, nodeName: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'dev' },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }] },
  });
  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    await store.create(pod('on-1', 'n1'));
    await store.create(pod('on-2', 'n2'));
    auth = await startClusterAuth({ store, caCertPem: (await CertificateAuthority.create('t')).certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
  });
  afterEach(() => auth.stop());

  it("lets a kubelet write its own pods' status but not another node's, with NodeRestriction's 403", async () => {
    const kubelet = auth.storeFor(nodeUser('n1'));
    const status = { status: { phase: 'Running' } };
    await kubelet.patch('Pod', 'dev', 'on-1', status, 'merge', { subresource: 'status' });
    expect((await store.get('Pod', 'dev', 'on-1')).status?.phase).toBe('Running');
    await expect(kubelet.patch('Pod', 'dev', 'on-2', status, 'merge', { subresource: 'status' })).rejects.toMatchObject({
      code: 403,
      message: 'pods "on-2" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself',
    });
    const other = await store.get('Pod', 'dev', 'on-2');
    await expect(kubelet.updateStatus({ ...other, status: { phase: 'Failed' } })).rejects.toMatchObject({ code: 403 });
    expect((await store.get('Pod', 'dev', 'on-2')).status?.phase).not.toBe('Failed');
    // Nor another node's Node, nor anything its role leaves out.
    await store.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n2' } });
    await expect(kubelet.patch('Node', '', 'n2', { metadata: { labels: { a: 'b' } } }, 'merge')).rejects.toMatchObject({
      code: 403,
      message: 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"',
    });
    await expect(kubelet.list('Secret', { namespace: 'dev' })).rejects.toMatchObject({
      code: 403,
      message: 'secrets is forbidden: User "system:node:n1" cannot list resource "secrets" in API group "" in the namespace "dev": No Object name found',
    });
  });

  it('lets the scheduler bind pods but not create them, and kube-proxy watch Services but not change them', async () => {
    const scheduler = auth.storeFor(KUBE_SCHEDULER);
    await expect(scheduler.create(pod('new', 'n1'))).rejects.toMatchObject({
      code: 403,
      message: 'pods is forbidden: User "system:kube-scheduler" cannot create resource "pods" in API group "" in the namespace "dev"',
    });
    await expect(store.get('Pod', 'dev', 'new')).rejects.toMatchObject({ code: 404 });
    const proxy = auth.storeFor(KUBE_PROXY);
    (await proxy.watch('Service')).stop();
    await expect(proxy.delete('Service', 'default', 'kubernetes')).rejects.toMatchObject({ code: 403 });
  });

  it('answers from cached decisions only while the policy is unchanged', async () => {
    const alice = auth.storeFor({ name: 'alice', groups: ['system:authenticated'] });
    await expect(alice.list('Pod', { namespace: 'dev' })).rejects.toMatchObject({ code: 403 });
    await store.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'alice-view', namespace: 'dev' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }],
    });
    await until(async () => (await alice.list('Pod', { namespace: 'dev' }).then(() => true, () => false)));
    expect((await alice.list('Pod', { namespace: 'dev' })).items).toHaveLength(2);
    await store.delete('RoleBinding', 'dev', 'alice-view');
    await until(async () => (await alice.list('Pod', { namespace: 'dev' }).then(() => false, () => true)));
    await expect(alice.list('Pod', { namespace: 'dev' })).rejects.toMatchObject({ code: 403 });
  });
});

async function until(cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('timed out');
}
