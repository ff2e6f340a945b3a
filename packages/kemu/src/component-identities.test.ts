// `kemu up` runs its components as their upstream users through RBAC: the scheduler as
// system:kube-scheduler, so a cluster without that user's binding leaves pods unscheduled (the bind is
// refused) until the binding is back, as a kube-apiserver cluster would; each controller as its ServiceAccount
// in kube-system (system:controller:<name>); kubelets as system:node:<name> in
// system:nodes, under the Node authorizer, reading only what their pods reference; the CSI
// sidecars and the LoadBalancer allocator as the ServiceAccounts their upstream manifests deploy them with.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, node, up } from './commands.js';
import { paths } from './state.js';

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-identities-'));
let running: { stop(): Promise<void> } | undefined;
const api = () => client(stateDir);
const quiet = { log() {}, err() {} };
/** What the cluster's components reported (the log `kemu up` writes), to find their 403s in. */
const reported: string[] = [];

async function until(what: string, fn: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const getJson = async (p: string) => {
  const r = await api().request('GET', p);
  return { code: r.code, body: JSON.parse(r.text) };
};
const nodeName = async (name: string) => (await getJson(`/api/v1/namespaces/default/pods/${name}`)).body.spec?.nodeName;
const RBAC = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';

/** A request through the cluster's socket (as its admin) impersonating `user` in `group`. */
function impersonated(method: string, p: string, user: string, group: string): Promise<{ code: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: paths(stateDir).socket, path: p, method, headers: { 'Impersonate-User': user, 'Impersonate-Group': group } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Removes a ClusterRoleBinding and returns how to put it back as it was. */
async function unbind(name: string): Promise<() => Promise<void>> {
  const binding = (await getJson(`${RBAC}/${name}`)).body;
  expect((await api().request('DELETE', `${RBAC}/${name}`)).code).toBe(200);
  const { metadata, ...rest } = binding;
  return async () => {
    expect((await api().request('POST', RBAC, { ...rest, metadata: { name: metadata.name } })).code).toBe(201);
  };
}

/** Waits until a component reported kube-apiserver's 403 for `user` doing `what`. */
const forbidden = (user: string, what: string) =>
  until(`a 403 for ${user}`, async () => reported.some((m) => m.includes(`is forbidden: User "${user}" cannot ${what}`)));

beforeAll(async () => {
  running = await up({ stateDir, nodes: 1, fast: true, mergeKubeconfig: false, onError: (err, ctx) => reported.push(`${ctx}: ${(err as Error)?.message ?? err}`) }, quiet);
}, 60_000);

afterAll(async () => {
  await running?.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

describe('kemu up component identities', () => {
  it('schedules only while system:kube-scheduler is bound to its role', async () => {
    const binding = (await getJson(`${RBAC}/system:kube-scheduler`)).body;
    expect(binding.subjects).toEqual([{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:kube-scheduler' }]);
    expect((await api().request('DELETE', `${RBAC}/system:kube-scheduler`)).code).toBe(200);
    const pod = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    expect((await api().request('POST', '/api/v1/namespaces/default/pods', pod('waits'))).code).toBe(201);
    // The scheduler finds the node but may not bind the pod there.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await nodeName('waits')).toBeUndefined();
    const { metadata, ...rest } = binding;
    expect((await api().request('POST', RBAC, { ...rest, metadata: { name: metadata.name } })).code).toBe(201);
    await until('the pod to be bound', async () => Boolean(await nodeName('waits')));
    expect(await nodeName('waits')).toBe('kemu-node-1');
  }, 60_000);

  it('runs each controller as its own ServiceAccount in kube-system, as --use-service-account-credentials does', async () => {
    const name = `${RBAC}/system:controller:replicaset-controller`;
    const binding = (await getJson(name)).body;
    expect(binding.subjects).toMatchObject([{ kind: 'ServiceAccount', name: 'replicaset-controller', namespace: 'kube-system' }]);
    expect((await getJson('/api/v1/namespaces/kube-system/serviceaccounts/replicaset-controller')).code).toBe(200);
    expect((await api().request('DELETE', name)).code).toBe(200);
    const rs = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'rs', namespace: 'default' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'rs' } }, template: { metadata: { labels: { app: 'rs' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
    };
    expect((await api().request('POST', '/apis/apps/v1/namespaces/default/replicasets', rs)).code).toBe(201);
    const pods = async () => (await getJson('/api/v1/namespaces/default/pods?labelSelector=app%3Drs')).body.items.length;
    // The ReplicaSet controller may not create its pods without its role.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await pods()).toBe(0);
    const { metadata, ...rest } = binding;
    expect((await api().request('POST', RBAC, { ...rest, metadata: { name: metadata.name } })).code).toBe(201);
    await until('the ReplicaSet to create its pod', async () => (await pods()) === 1);
  }, 60_000);

  it("runs the kubelet as system:node:<name> under the Node authorizer: it reads its pod's Secret, another node may not", async () => {
    // As upstream (Node,RBAC), the system:node role is bound to no one: nodes get their rights from the graph.
    expect((await getJson(`${RBAC}/system:node`)).body.subjects ?? []).toEqual([]);
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'app-secret', namespace: 'default' }, stringData: { password: 'x' } };
    expect((await api().request('POST', '/api/v1/namespaces/default/secrets', secret)).code).toBe(201);
    const config = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: 'default' }, data: { MODE: 'test' } };
    expect((await api().request('POST', '/api/v1/namespaces/default/configmaps', config)).code).toBe(201);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'with-secret', namespace: 'default' },
      spec: {
        containers: [{ name: 'c', image: 'busybox', envFrom: [{ configMapRef: { name: 'app-config' } }], volumeMounts: [{ name: 's', mountPath: '/s' }] }],
        volumes: [{ name: 's', secret: { secretName: 'app-secret' } }],
      },
    };
    expect((await api().request('POST', '/api/v1/namespaces/default/pods', pod)).code).toBe(201);
    // The in-process kubelet fetched the Secret, the ConfigMap and the projected token's kube-root-ca.crt as
    // system:node:kemu-node-1.
    await until('the pod to run', async () => (await getJson('/api/v1/namespaces/default/pods/with-secret')).body.status?.phase === 'Running');
    const asNode = (node: string) => impersonated('GET', '/api/v1/namespaces/default/secrets/app-secret', `system:node:${node}`, 'system:nodes');
    expect((await asNode('kemu-node-1')).code).toBe(200);
    const other = await asNode('kemu-node-2');
    expect(other.code).toBe(403);
    expect(JSON.parse(other.text).message).toBe(
      `secrets "app-secret" is forbidden: User "system:node:kemu-node-2" cannot get resource "secrets" in API group "" in the namespace "default": no relationship found between node 'kemu-node-2' and this object`,
    );
  }, 60_000);

  it('provisions volumes as kube-system/csi-provisioner, bound to external-provisioner-runner', async () => {
    const binding = (await getJson(`${RBAC}/csi-provisioner-role`)).body;
    expect(binding.roleRef.name).toBe('external-provisioner-runner');
    expect(binding.subjects).toMatchObject([{ kind: 'ServiceAccount', name: 'csi-provisioner', namespace: 'kube-system' }]);
    const rebind = await unbind('csi-provisioner-role');
    const claim = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data', namespace: 'default' }, spec: { storageClassName: 'standard-immediate', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
    expect((await api().request('POST', '/api/v1/namespaces/default/persistentvolumeclaims', claim)).code).toBe(201);
    await forbidden('system:serviceaccount:kube-system:csi-provisioner', 'create resource "persistentvolumes" in API group "" at the cluster scope');
    const phase = async () => (await getJson('/api/v1/namespaces/default/persistentvolumeclaims/data')).body.status?.phase;
    expect(await phase()).toBe('Pending');
    await rebind();
    await until('the claim to be bound', async () => (await phase()) === 'Bound');
  }, 60_000);

  it('attaches volumes as kube-system/csi-attacher, bound to external-attacher-runner', async () => {
    const rebind = await unbind('csi-attacher-role');
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'uses-data', namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'busybox', volumeMounts: [{ name: 'd', mountPath: '/data' }] }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }] },
    };
    expect((await api().request('POST', '/api/v1/namespaces/default/pods', pod)).code).toBe(201);
    await forbidden('system:serviceaccount:kube-system:csi-attacher', 'get resource "volumeattachments" in API group "storage.k8s.io" at the cluster scope');
    const attached = async () => ((await getJson('/apis/storage.k8s.io/v1/volumeattachments')).body.items ?? []).some((va: { status?: { attached?: boolean } }) => va.status?.attached);
    expect(await attached()).toBe(false);
    await rebind();
    await until('the volume to be attached', attached);
    await until('the pod to run', async () => (await getJson('/api/v1/namespaces/default/pods/uses-data')).body.status?.phase === 'Running');
  }, 60_000);

  it('gives LoadBalancer Services addresses as kube-system/service-controller', async () => {
    const rebind = await unbind('system:controller:service-controller');
    const svc = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'lb', namespace: 'default' }, spec: { type: 'LoadBalancer', selector: { app: 'lb' }, ports: [{ port: 80 }] } };
    expect((await api().request('POST', '/api/v1/namespaces/default/services', svc)).code).toBe(201);
    await forbidden('system:serviceaccount:kube-system:service-controller', 'patch resource "services/status" in API group "" in the namespace "default"');
    const ingress = async () => (await getJson('/api/v1/namespaces/default/services/lb')).body.status?.loadBalancer?.ingress;
    expect(await ingress()).toBeUndefined();
    await rebind();
    // The allocator reconciles a Service on its next change (it does not retry a refused write by itself).
    expect((await api().request('PATCH', '/api/v1/namespaces/default/services/lb', { metadata: { labels: { retry: '1' } } }, 'application/merge-patch+json')).code).toBe(200);
    await until('the Service to get an address', async () => Boolean((await ingress())?.length));
  }, 60_000);

  it('runs a joined node (kemu node) as its upstream users: its kube-proxy without its binding gets the 403, its kubelet registers as system:node:<name>', async () => {
    const rebind = await unbind('system:node-proxier');
    const logged: string[] = [];
    const joining = node(
      { name: 'joined-1', ip: '172.18.0.200', podCIDR: '10.244.200.0/24', stateDir, apiSocket: paths(stateDir).socket, datapath: 'sim', network: 'bridge', runtime: 'sim', durable: false, fast: true },
      { log() {}, err: (m: string) => logged.push(m) },
    );
    await until('the 403 of the joined node\'s kube-proxy', async () =>
      logged.some((m) => m.includes('joined-1: kube-proxy: failed to list *v1.Service: services is forbidden: User "system:kube-proxy" cannot list resource "services" in API group "" at the cluster scope')),
    );
    await rebind();
    const joined = await joining;
    try {
      await until('the joined node to be ready', async () => (await getJson('/api/v1/nodes/joined-1')).body.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True'));
      // Its kubelet's writes were made as system:node:joined-1: NodeRestriction keeps it off other Nodes.
      const other = await impersonated('DELETE', '/api/v1/nodes/kemu-node-1', 'system:node:joined-1', 'system:nodes');
      expect(JSON.parse(other.text).message).toBe('nodes "kemu-node-1" is forbidden: node "joined-1" is not allowed to modify node "kemu-node-1"');
    } finally {
      await joined.stop();
    }
  }, 60_000);

  it("keeps ResourceQuota status with the controller manager's resourcequota controller alone, as its ServiceAccount", async () => {
    const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'q', namespace: 'default' }, spec: { hard: { pods: '100' } } };
    expect((await api().request('POST', '/api/v1/namespaces/default/resourcequotas', quota)).code).toBe(201);
    const used = async () => (await getJson('/api/v1/namespaces/default/resourcequotas/q')).body.status?.used?.pods as string | undefined;
    await until('the quota to be counted', async () => (await used()) !== undefined);
    const before = await used();
    const rebind = await unbind('system:controller:resourcequota-controller');
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'counted', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
    // Admission counts the create; only a controller's recount takes the deletion off again.
    expect((await api().request('POST', '/api/v1/namespaces/default/pods', pod)).code).toBe(201);
    expect(await used()).toBe(String(Number(before) + 1));
    expect((await api().request('DELETE', '/api/v1/namespaces/default/pods/counted?gracePeriodSeconds=0')).code).toBe(200);
    await forbidden('system:serviceaccount:kube-system:resourcequota-controller', 'update resource "resourcequotas/status" in API group "" in the namespace "default"');
    expect(await used()).toBe(String(Number(before) + 1));
    await rebind();
    await until('the recount', async () => (await used()) === before);
  }, 60_000);

  it("passes the controllers' writes through admission, as the API server's: a ReplicaSet's pods get their token volume and stop at the quota", async () => {
    expect((await api().request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'limited' } })).code).toBe(201);
    const quota = { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'one-pod', namespace: 'limited' }, spec: { hard: { pods: '1' } } };
    expect((await api().request('POST', '/api/v1/namespaces/limited/resourcequotas', quota)).code).toBe(201);
    const rs = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'two', namespace: 'limited' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'two' } }, template: { metadata: { labels: { app: 'two' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
    };
    expect((await api().request('POST', '/apis/apps/v1/namespaces/limited/replicasets', rs)).code).toBe(201);
    const pods = async () => (await getJson('/api/v1/namespaces/limited/pods')).body.items as Array<{ spec: { volumes?: Array<{ name: string }> } }>;
    await until('the first pod', async () => (await pods()).length === 1);
    // The quota admits one pod; the controller's second create is refused as an HTTP create would be.
    await until("the quota's refusal", async () => reported.some((m) => m.includes('is forbidden: exceeded quota: one-pod, requested: pods=1, used: pods=1, limited: pods=1')));
    expect(await pods()).toHaveLength(1);
    // ServiceAccount admission gave the controller's pod its projected token volume.
    expect((await pods())[0].spec.volumes?.map((v) => v.name)).toEqual([expect.stringMatching(/^kube-api-access-/)]);
  }, 60_000);
});
