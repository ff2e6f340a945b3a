// The Node authorizer as kemu up runs it (Node,RBAC through startClusterAuth): a kubelet reads the Secrets,
// ConfigMaps, claims and volumes its own pods reference and nothing else, with kube-apiserver's 403 text and
// the Node authorizer's reason; the graph follows pods as they are bound, changed and deleted.
import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../ca.js';
import { type ClusterAuth, startClusterAuth } from '../authn/cluster-auth.js';
import { ServiceAccountKeys } from '../authn/service-account-token.js';
import { nodeUser } from './component-identities.js';

let store: Store;
let auth: ClusterAuth;

const pod = (name: string, nodeName: string | undefined, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'dev' },
  spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', image: 'busybox' }], ...extra },
});
const withSecret = (secretName: string) => ({ volumes: [{ name: 'v', secret: { secretName } }] });

async function until(what: string, cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}
const can = (p: Promise<unknown>) => p.then(() => true, () => false);

beforeEach(async () => {
  store = await createMemoryStore();
  await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
  for (const name of ['db-password', 'other', 'pv-secret']) await store.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'dev' }, data: {} });
  await store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'dev' }, data: {} });
  auth = await startClusterAuth({ store, caCertPem: (await CertificateAuthority.create('t')).certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
});
afterEach(async () => {
  await auth.stop();
  await store.close();
});

describe('the Node authorizer', () => {
  it("lets a kubelet read a Secret of a pod on its node; another node's kubelet gets the 403 with upstream's reason", async () => {
    await store.create(pod('web', 'n1', withSecret('db-password')));
    const n1 = auth.storeFor(nodeUser('n1'));
    const n2 = auth.storeFor(nodeUser('n2'));
    await until('the graph to have the pod', () => can(n1.get('Secret', 'dev', 'db-password')));
    expect((await n1.get('Secret', 'dev', 'db-password')).metadata.name).toBe('db-password');
    await expect(n2.get('Secret', 'dev', 'db-password')).rejects.toMatchObject({
      code: 403,
      message: `secrets "db-password" is forbidden: User "system:node:n2" cannot get resource "secrets" in API group "" in the namespace "dev": no relationship found between node 'n2' and this object`,
    });
    // A Secret no pod of n1 references stays closed to n1 too.
    await expect(n1.get('Secret', 'dev', 'other')).rejects.toMatchObject({
      code: 403,
      message: `secrets "other" is forbidden: User "system:node:n1" cannot get resource "secrets" in API group "" in the namespace "dev": no relationship found between node 'n1' and this object`,
    });
    // Reading is all a node may do with them, and only by name.
    await expect(n1.list('Secret', { namespace: 'dev' })).rejects.toMatchObject({
      message: 'secrets is forbidden: User "system:node:n1" cannot list resource "secrets" in API group "" in the namespace "dev": No Object name found',
    });
    await expect(n1.delete('Secret', 'dev', 'db-password')).rejects.toMatchObject({
      message: `secrets "db-password" is forbidden: User "system:node:n1" cannot delete resource "secrets" in API group "" in the namespace "dev": can only read resources of this type`,
    });
  });

  it('follows pods as they are bound, change what they reference, and go', async () => {
    const n1 = auth.storeFor(nodeUser('n1'));
    await store.create(pod('web', undefined, { ...withSecret('db-password'), containers: [{ name: 'c', image: 'busybox', envFrom: [{ configMapRef: { name: 'settings' } }] }] }));
    // Not bound yet: no node may read what it references.
    await new Promise((r) => setTimeout(r, 50));
    await expect(n1.get('ConfigMap', 'dev', 'settings')).rejects.toMatchObject({ code: 403 });
    await store.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'web', namespace: 'dev' }, target: { kind: 'Node', name: 'n1' } });
    await until('the bound pod in the graph', () => can(n1.get('ConfigMap', 'dev', 'settings')));
    expect(await can(n1.get('Secret', 'dev', 'db-password'))).toBe(true);
    await store.delete('Pod', 'dev', 'web', { gracePeriodSeconds: 0 });
    await until('the deleted pod to leave the graph', async () => !(await can(n1.get('ConfigMap', 'dev', 'settings'))));
    expect(await can(n1.get('Secret', 'dev', 'db-password'))).toBe(false);
  });

  it('reaches a PersistentVolume and the Secrets it names through the claim a pod on the node uses', async () => {
    await store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-1' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        claimRef: { namespace: 'dev', name: 'data' },
        csi: { driver: 'd', volumeHandle: 'h', nodePublishSecretRef: { namespace: 'dev', name: 'pv-secret' } },
      },
    });
    await store.create({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace: 'dev' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: 'pv-1' } });
    await store.create(pod('db', 'n1', { volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'data' } }] }));
    const n1 = auth.storeFor(nodeUser('n1'));
    const n2 = auth.storeFor(nodeUser('n2'));
    await until('the graph to have the claim', () => can(n1.get('PersistentVolumeClaim', 'dev', 'data')));
    expect((await n1.get('PersistentVolume', '', 'pv-1')).metadata.name).toBe('pv-1');
    expect((await n1.get('Secret', 'dev', 'pv-secret')).metadata.name).toBe('pv-secret');
    await expect(n2.get('PersistentVolume', '', 'pv-1')).rejects.toMatchObject({
      message: `persistentvolumes "pv-1" is forbidden: User "system:node:n2" cannot get resource "persistentvolumes" in API group "" at the cluster scope: no relationship found between node 'n2' and this object`,
    });
    expect(await can(n2.get('Secret', 'dev', 'pv-secret'))).toBe(false);
    await expect(n1.list('PersistentVolume')).rejects.toMatchObject({ message: expect.stringMatching(/: can only get individual resources of this type$/) });
  });

  it("keeps a kubelet to its own Lease and leaves other users to RBAC", async () => {
    const n1 = auth.storeFor(nodeUser('n1'));
    const lease = (name: string) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: 'kube-node-lease' }, spec: { holderIdentity: name } });
    await n1.create(lease('n1'));
    await store.create(lease('n2'));
    await expect(n1.get('Lease', 'kube-node-lease', 'n2')).rejects.toMatchObject({
      message: 'leases.coordination.k8s.io "n2" is forbidden: User "system:node:n1" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": can only access node lease with the same name as the requesting node',
    });
    // The rules of the system:node role still hold for what the graph does not subdivide.
    expect((await n1.list('Pod', { namespace: 'dev' })).items).toEqual([]);
    // The system:node role is bound to no one: a user in another group gets nothing from it.
    const binding = await store.get('ClusterRoleBinding', '', 'system:node');
    expect(binding.subjects ?? []).toEqual([]);
    await store.create(pod('web', 'n1', withSecret('db-password')));
    const alice = auth.storeFor({ name: 'alice', groups: ['system:authenticated'] });
    await until('the graph to have the pod', () => can(n1.get('Secret', 'dev', 'db-password')));
    await expect(alice.get('Secret', 'dev', 'db-password')).rejects.toMatchObject({
      message: 'secrets "db-password" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "dev"',
    });
  });

  it('answers SubjectAccessReviews for nodes through the same chain (Node, then RBAC)', async () => {
    await store.create(pod('web', 'n1', withSecret('db-password')));
    const sar = auth.seams.endpoints!.find((e) => e.resource === 'subjectaccessreviews')!;
    const review = (node: string) =>
      sar.create({
        user: { name: 'admin', groups: ['system:masters'] },
        namespace: '',
        body: { spec: { user: `system:node:${node}`, groups: ['system:nodes'], resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'dev', name: 'db-password' } } },
      } as never) as Promise<{ status: { allowed: boolean; reason?: string } }>;
    await until('the graph to have the pod', async () => (await review('n1')).status.allowed);
    expect((await review('n2')).status).toEqual({ allowed: false, reason: "no relationship found between node 'n2' and this object" });
  });
});
