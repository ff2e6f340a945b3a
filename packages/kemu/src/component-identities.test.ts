// `kemu up` runs its components as their upstream users through RBAC: the scheduler as
// system:kube-scheduler, so a cluster without that user's binding leaves pods unscheduled (the bind is
// refused) until the binding is back, as a kube-apiserver cluster would; each controller as its ServiceAccount
// in kube-system (system:controller:<name>); kubelets as system:node:<name> in
// system:nodes, so a node whose group lost its role stops renewing its Lease and goes unready.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, up } from './commands.js';

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-identities-'));
let running: { stop(): Promise<void> } | undefined;
const api = () => client(stateDir);
const quiet = { log() {}, err() {} };

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

beforeAll(async () => {
  running = await up({ stateDir, nodes: 1, fast: true, mergeKubeconfig: false, onError: () => {} }, quiet);
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

  it('runs the kubelet as system:node:<name> in system:nodes: without that group\'s binding its node goes unready', async () => {
    const ready = async () => (await getJson('/api/v1/nodes/kemu-node-1')).body.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.status;
    await until('the node to be ready', async () => (await ready()) === 'True');
    const binding = (await getJson(`${RBAC}/system:node`)).body;
    expect(binding.subjects).toEqual([{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:nodes' }]);
    expect((await api().request('DELETE', `${RBAC}/system:node`)).code).toBe(200);
    // Its Lease renewals and status posts are refused, so the node lifecycle controller stops hearing from it.
    await until('the node to be not ready', async () => (await ready()) !== 'True');
    const { metadata, ...rest } = binding;
    expect((await api().request('POST', RBAC, { ...rest, metadata: { name: metadata.name } })).code).toBe(201);
    await until('the node to be ready again', async () => (await ready()) === 'True');
  }, 60_000);
});
