// The composed cluster with its auth stack, as `kemu up` builds it: a pod gets the projected ServiceAccount
// token volume, reads token, ca.crt and namespace where upstream puts them, and a client holding that token
// is refused until a RoleBinding lets the ServiceAccount list pods; the token dies with the pod.
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { clusterCredentials, decodeObjectBytes, deferredClusterAuth, ServiceAccountKeys, startClusterAuth, type ClusterAuth } from '@kemu/apiserver';
import type { Pod } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from './cluster.js';

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-auth-'));
let cluster: Cluster;
let auth: ClusterAuth;

beforeAll(async () => {
  const creds = await clusterCredentials(stateDir, { name: 'auth' });
  const deferred = deferredClusterAuth();
  cluster = await Cluster.start({
    stateDir,
    nodes: 1,
    fast: true,
    apiSocket: path.join(stateDir, 'kemu.sock'),
    serviceAccountTokens: async (pod, audience, seconds) => (await deferred.auth()).podToken(pod, audience, seconds),
    apiServer: { ...deferred.seams, renderers: { protobufDecode: decodeObjectBytes }, tcp: { host: '127.0.0.1', port: 0, tls: creds.serving } },
  });
  auth = await startClusterAuth({ store: cluster.store, caCertPem: creds.ca.certPem, serviceAccountKeys: await ServiceAccountKeys.loadOrCreate(path.join(stateDir, 'pki')) });
  deferred.resolve(auth);
}, 60_000);

afterAll(async () => {
  await auth?.stop();
  await cluster?.stop();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

function get(url: string, token: string, ca: string): Promise<{ code: number; body: any }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(text) }));
      })
      .on('error', reject);
  });
}

async function until(what: string, fn: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('a pod and its projected ServiceAccount token', () => {
  it('reads the token the kubelet projected and lists pods with it once RBAC allows', async () => {
    const pod: Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'client', namespace: 'default' }, spec: { containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', 'infinity'] }] } };
    // Through the API, so admission (ServiceAccount) adds the kube-api-access volume as upstream does.
    const created = await postPod(pod);
    expect(created.spec?.volumes?.[0]?.name).toMatch(/^kube-api-access-/);
    await until('the pod to run', async () => (await cluster.store.get('Pod', 'default', 'client')).status?.phase === 'Running');
    const exec = (file: string) => cluster.extensions().podExec!('default', 'client', { command: ['cat', `/var/run/secrets/kubernetes.io/serviceaccount/${file}`] });
    const token = (await exec('token')).stdout;
    const ca = (await exec('ca.crt')).stdout;
    expect((await exec('namespace')).stdout).toBe('default');
    expect(token).toMatch(/^eyJ/);
    const url = `${cluster.api!.url}/api/v1/namespaces/default/pods`;
    const denied = await get(url, token, ca);
    expect(denied.code).toBe(403);
    expect(denied.body.message).toBe('pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" in the namespace "default"');
    await cluster.store.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'default-view', namespace: 'default' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'default' }],
    });
    await until('the binding to take effect', async () => (await get(url, token, ca)).code === 200);
    const listed = await get(url, token, ca);
    expect(listed.body.items.map((p: Pod) => p.metadata.name)).toEqual(['client']);
    await cluster.store.delete('Pod', 'default', 'client', { gracePeriodSeconds: 0 });
    await until('the pod to go', async () => (await cluster.store.list('Pod', { namespace: 'default' })).items.length === 0);
    expect((await get(url, token, ca)).code).toBe(401);
  });
});

/** Creates a pod through the API server's HTTPS endpoint as the cluster admin (admission runs). */
async function postPod(pod: Pod): Promise<Pod> {
  const creds = await clusterCredentials(stateDir, { name: 'auth' });
  const kc = creds.writeKubeconfig(cluster.api!.url!);
  const user = kc.config.users[0].user as Record<string, string>;
  const body = JSON.stringify(pod);
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${cluster.api!.url}/api/v1/namespaces/default/pods`,
      {
        method: 'POST',
        ca: creds.ca.certPem,
        cert: Buffer.from(user['client-certificate-data'], 'base64'),
        key: Buffer.from(user['client-key-data'], 'base64'),
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => (res.statusCode === 201 ? resolve(JSON.parse(text)) : reject(new Error(`${res.statusCode} ${text}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
