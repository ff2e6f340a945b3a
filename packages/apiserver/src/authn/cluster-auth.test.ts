import { createMemoryStore, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../ca.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { clusterCredentials } from '../cluster-credentials.js';
import { userFromCertificate } from '../ca.js';
import { type ClusterAuth, deferredClusterAuth, startClusterAuth } from './cluster-auth.js';
import { userKubeconfig } from './user-kubeconfig.js';
import { ServiceAccountKeys } from './service-account-token.js';

describe('a cluster auth stack', () => {
  let store: Store;
  let auth: ClusterAuth;
  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'ci', namespace: 'dev' } });
    const ca = await CertificateAuthority.create();
    auth = await startClusterAuth({ store, caCertPem: ca.certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
  });
  afterEach(() => auth.stop());

  it('mints a token through its TokenRequest endpoint that authenticates, then is authorized only as RBAC says', async () => {
    const ep = auth.seams.endpoints!.find((e) => e.subresource === 'token')!;
    const admin = { name: 'root', groups: ['system:masters'] };
    const tr = (await ep.create({ user: admin, namespace: 'dev', name: 'ci', body: { spec: {} }, dryRun: false })) as { status: { token: string } };
    const r = await auth.seams.authenticator!.authenticate({ method: 'GET', url: '/api/v1/namespaces/dev/pods', headers: { authorization: `Bearer ${tr.status.token}` }, localSocket: false });
    expect(r?.user.name).toBe('system:serviceaccount:dev:ci');
    const attrs = { isResourceRequest: true, path: '/api/v1/namespaces/dev/pods', verb: 'list', apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', namespace: 'dev', resource: 'pods', subresource: '', name: '' };
    expect((await auth.seams.authorizer!.authorize({ ...attrs, user: r!.user })).decision).toBe('no-opinion');
    const whoami = auth.seams.endpoints!.find((e) => e.resource === 'selfsubjectreviews')!;
    expect(await whoami.create({ user: r!.user, namespace: '', name: '', body: {}, dryRun: false })).toMatchObject({ status: { userInfo: { username: 'system:serviceaccount:dev:ci' } } });
  });

  it('gives a pod a token of its ServiceAccount bound to it, as kubelet projects it', async () => {
    const pod = await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'dev' }, spec: { serviceAccountName: 'ci', containers: [{ name: 'c', image: 'busybox' }] } });
    const token = await auth.podToken(pod, undefined, 3607);
    const r = await auth.seams.authenticator!.authenticate({ method: 'GET', url: '/api', headers: { authorization: `Bearer ${token}` }, localSocket: false });
    expect(r?.user).toMatchObject({ name: 'system:serviceaccount:dev:ci', extra: { 'authentication.kubernetes.io/pod-name': ['web'] } });
    await store.delete('Pod', 'dev', 'web', { gracePeriodSeconds: 0 });
    await expect(auth.seams.authenticator!.authenticate({ method: 'GET', url: '/api', headers: { authorization: `Bearer ${token}` }, localSocket: false })).rejects.toMatchObject({ code: 401 });
  });
});

describe('deferred auth seams', () => {
  it('hold requests until the auth stack is handed over, then answer with it', async () => {
    const store = await createMemoryStore();
    const d = deferredClusterAuth();
    const req = { method: 'GET', url: '/api', headers: { authorization: 'Bearer nope' }, localSocket: false };
    let settled = false;
    const pending = d.seams.authenticator!.authenticate(req).then(
      () => (settled = true),
      (e: unknown) => {
        settled = true;
        return e;
      },
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    const ca = await CertificateAuthority.create();
    const auth = await startClusterAuth({ store, caCertPem: ca.certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
    d.resolve(auth);
    expect(await pending).toMatchObject({ code: 401 });
    expect(d.seams.endpoints!.map((e) => e.subresource ? `${e.resource}/${e.subresource}` : e.resource)).toEqual(auth.seams.endpoints!.map((e) => e.subresource ? `${e.resource}/${e.subresource}` : e.resource));
    await auth.stop();
  });
});

describe('kemu kubeconfig --user', () => {
  it('mints a client certificate for the user and groups, signed by the cluster CA', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-userkc-'));
    try {
      const creds = await clusterCredentials(dir, { name: 'demo' });
      creds.writeKubeconfig('https://127.0.0.1:6443');
      const text = await userKubeconfig({ stateDir: dir, name: 'demo', user: 'alice', groups: ['dev', 'qa'] });
      const cfg = YAML.parse(text);
      expect(cfg.clusters[0].cluster.server).toBe('https://127.0.0.1:6443');
      const pem = Buffer.from(cfg.users[0].user['client-certificate-data'], 'base64').toString();
      const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
      expect(userFromCertificate(der)).toEqual({ name: 'alice', groups: ['dev', 'qa'] });
      await expect(userKubeconfig({ stateDir: dir, name: 'demo', user: 'bad\nname' })).rejects.toThrow('one line');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
