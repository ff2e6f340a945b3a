// Real kubectl v1.32 against the API server with the whole auth stack on: users by client certificate get
// 403s worded as kube-apiserver's until a RoleBinding lets them in; `auth can-i` and `auth whoami` answer as
// the bindings say; `create token` mints a ServiceAccount token that works until it expires (then 401);
// impersonation needs the impersonate verb; escalation through a binding is refused; PodSecurity refuses a
// privileged pod under enforce=restricted and warns under warn.
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createMemoryStore, type Store } from '@kemu/core';
import { KUBECTL_OLD, peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceAccountKeys } from '../authn/service-account-token.js';
import { type ClusterAuth, startClusterAuth } from '../authn/cluster-auth.js';
import { CertificateAuthority } from '../ca.js';
import { decodeObjectBytes } from '../protobuf/index.js';
import { buildKubeconfig, kubeconfigYaml } from '../kubeconfig.js';
import { type ApiServer, startApiServer } from '../server.js';
import { runClient } from '../testing.js';

const lastLine = (text: string) => text.trim().split('\n').pop();
const ok = requirePeers('the kubectl auth end-to-end tests', [peers.kubectl]);
const py = requirePeers('the Python client bearer-token test', [peers.pythonKubernetes]);
const old = requirePeers('the kubectl v1.20 auth test', [peers.kubectlOld]);

describe.runIf(ok)('kubectl v1.32 against the API server with authentication, RBAC and admission', () => {
  let dir: string;
  let store: Store;
  let ca: CertificateAuthority;
  let auth: ClusterAuth;
  let api: ApiServer;
  let clock = 0; // seconds the server's token clock is moved ahead
  const configs = new Map<string, string>();

  async function kubeconfigFor(user: string, groups: string[] = []): Promise<string> {
    const key = `${user}|${groups.join(',')}`;
    if (configs.has(key)) return configs.get(key)!;
    const cert = await ca.issueClient({ user, groups });
    const file = path.join(dir, `kubeconfig-${configs.size}`);
    fs.writeFileSync(file, kubeconfigYaml(buildKubeconfig({ name: 'auth', server: api.url!, caPem: ca.certPem, clientCertPem: cert.cert, clientKeyPem: cert.key, namespace: 'dev' })), { mode: 0o600 });
    configs.set(key, file);
    return file;
  }
  const as = async (user: string, args: string[], groups: string[] = [], stdin?: string) => runClient('kubectl', args, { kubeconfig: await kubeconfigFor(user, groups), stdin });
  const admin = (args: string[], stdin?: string) => as('kemu-admin', args, ['system:masters'], stdin);
  const withToken = (token: string, args: string[]) => {
    const file = path.join(dir, 'kubeconfig-token');
    fs.writeFileSync(file, kubeconfigYaml(buildKubeconfig({ name: 'auth', server: api.url!, caPem: ca.certPem, token, namespace: 'dev' })), { mode: 0o600 });
    return runClient('kubectl', args, { kubeconfig: file });
  };
  const eventually = async (fn: () => Promise<boolean>) => {
    for (let i = 0; i < 100 && !(await fn()); i++) await new Promise((r) => setTimeout(r, 20));
  };

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-auth-e2e-'));
    store = await createMemoryStore();
    ca = await CertificateAuthority.create('kemu-auth-ca');
    fs.writeFileSync(path.join(dir, 'audit-policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  resources:\n  - group: ""\n    resources: [pods]\n- level: None\n');
    auth = await startClusterAuth({
      store,
      caCertPem: ca.certPem,
      serviceAccountKeys: await ServiceAccountKeys.create(),
      now: () => new Date(Date.now() + clock * 1000),
      audit: { path: path.join(dir, 'audit.log'), policyFile: path.join(dir, 'audit-policy.yaml') },
    });
    const serving = await ca.issueServing();
    api = await startApiServer(store, path.join(dir, 'api.sock'), {}, { ...auth.seams, renderers: { protobufDecode: decodeObjectBytes }, tcp: { host: '127.0.0.1', port: 0, tls: { ...serving, clientCA: ca.certPem } } });
    for (const name of ['dev', 'secure', 'lax']) await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    await eventually(async () => (await store.list('ServiceAccount', { namespace: 'lax' })).items.length > 0);
  });
  afterAll(async () => {
    await api?.close();
    await auth?.stop();
    await store?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a user without bindings with 403, then lets them in after a RoleBinding', async () => {
    const denied = await as('alice', ['get', 'pods'], ['developers']);
    expect(denied.code).toBe(1);
    expect(denied.stderr.trim()).toBe('Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "dev"');
    expect((await as('alice', ['auth', 'can-i', 'list', 'pods'], ['developers'])).stdout.trim()).toBe('no');

    expect((await admin(['create', 'role', 'pod-reader', '--verb=get,list,watch', '--resource=pods'])).code).toBe(0);
    const rb = await admin(['create', 'rolebinding', 'devs-read', '--role=pod-reader', '--group=developers']);
    expect(rb.code, rb.stderr).toBe(0);
    await eventually(async () => (await as('alice', ['auth', 'can-i', 'list', 'pods'], ['developers'])).stdout.trim() === 'yes');
    expect((await as('alice', ['auth', 'can-i', 'list', 'pods'], ['developers'])).stdout.trim()).toBe('yes');
    expect((await as('alice', ['auth', 'can-i', 'delete', 'pods'], ['developers'])).stdout.trim()).toBe('no');
    expect((await as('alice', ['auth', 'can-i', 'list', 'pods', '-n', 'secure'], ['developers'])).stdout.trim()).toBe('no');
    const got = await as('alice', ['get', 'pods'], ['developers']);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stderr.trim()).toBe('No resources found in dev namespace.');
    const list = await as('alice', ['auth', 'can-i', '--list'], ['developers']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^pods\s+\[\]\s+\[\]\s+\[get list watch\]$/m);
    expect(list.stdout).toMatch(/^selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$/m);
    // Another user with another group still gets nothing.
    expect((await as('bob', ['auth', 'can-i', 'list', 'pods'], ['testers'])).stdout.trim()).toBe('no');
  });

  it('keeps an audit log of pod requests in the audit.k8s.io/v1 Event format, refusals included', async () => {
    await eventually(async () => fs.existsSync(path.join(dir, 'audit.log')) && fs.readFileSync(path.join(dir, 'audit.log'), 'utf8').includes('"code":403'));
    const events = fs.readFileSync(path.join(dir, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(events.every((e) => e.kind === 'Event' && e.apiVersion === 'audit.k8s.io/v1' && e.level === 'Metadata' && e.stage === 'ResponseComplete')).toBe(true);
    expect(events.every((e) => e.objectRef.resource === 'pods')).toBe(true);
    expect(events).toContainEqual(
      expect.objectContaining({
        verb: 'list',
        requestURI: expect.stringMatching(/^\/api\/v1\/namespaces\/dev\/pods/),
        user: { username: 'alice', groups: ['developers', 'system:authenticated'] },
        objectRef: expect.objectContaining({ resource: 'pods', namespace: 'dev' }),
        responseStatus: expect.objectContaining({ code: 403 }),
      }),
    );
  });

  it('answers a forged client certificate with 401, not as anonymous', async () => {
    const other = await CertificateAuthority.create('kemu-auth-ca');
    const forged = await other.issueClient({ user: 'kemu-admin', groups: ['system:masters'] });
    const file = path.join(dir, 'kubeconfig-forged');
    fs.writeFileSync(file, kubeconfigYaml(buildKubeconfig({ name: 'auth', server: api.url!, caPem: ca.certPem, clientCertPem: forged.cert, clientKeyPem: forged.key, namespace: 'dev' })), { mode: 0o600 });
    const r = await runClient('kubectl', ['get', '--raw', '/api/v1/namespaces/dev/pods'], { kubeconfig: file });
    expect(r.stderr.trim()).toBe('error: You must be logged in to the server (Unauthorized)');
  });

  it('prints the user and groups for auth whoami', async () => {
    const w = await as('alice', ['auth', 'whoami', '-o', 'json'], ['developers']);
    expect(w.code, w.stderr).toBe(0);
    expect(JSON.parse(w.stdout).status.userInfo).toEqual({ username: 'alice', groups: ['developers', 'system:authenticated'] });
  });

  it('mints a ServiceAccount token with create token that works until it expires, then gets 401', async () => {
    // Made in the store: `kubectl create serviceaccount` needs the ServiceAccount kind schema (not ours).
    await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'builder', namespace: 'dev' } });
    const t = await admin(['create', 'token', 'builder', '--duration=10m']);
    expect(t.code, t.stderr).toBe(0);
    const token = t.stdout.trim();
    const who = await withToken(token, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
    expect(who.stdout, who.stderr).toBe('system:serviceaccount:dev:builder');
    const denied = await withToken(token, ['get', 'pods']);
    expect(denied.stderr.trim()).toBe('Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:dev:builder" cannot list resource "pods" in API group "" in the namespace "dev"');
    expect((await admin(['create', 'rolebinding', 'builder-view', '--clusterrole=view', '--serviceaccount=dev:builder'])).code).toBe(0);
    await eventually(async () => (await withToken(token, ['get', 'pods'])).code === 0);
    expect((await withToken(token, ['get', 'pods'])).code).toBe(0);
    clock = 601;
    try {
      const expired = await withToken(token, ['get', 'pods']);
      expect(expired.code).toBe(1);
      expect(lastLine(expired.stderr)).toBe('error: You must be logged in to the server (the server has asked for the client to provide credentials)');
    } finally {
      clock = 0;
    }
    const garbage = await withToken('not-a-token', ['get', 'pods']);
    expect(lastLine(garbage.stderr)).toBe('error: You must be logged in to the server (the server has asked for the client to provide credentials)');
    // The 401 itself, without kubectl's discovery in front.
    const raw = await withToken('not-a-token', ['get', '--raw', '/api/v1/namespaces/dev/pods']);
    expect(raw.stderr.trim()).toBe('error: You must be logged in to the server (Unauthorized)');
  });

  it('impersonates only for users allowed to, and refuses escalation through a binding', async () => {
    const imp = await admin(['auth', 'can-i', 'list', 'pods', '--as=alice', '--as-group=developers']);
    expect(imp.stdout.trim()).toBe('yes');
    // --raw: no discovery first, so the impersonation refusal is the only answer.
    const notAllowed = await as('alice', ['get', '--raw', '/api/v1/namespaces/dev/pods', '--as=bob'], ['developers']);
    expect(notAllowed.stderr.trim()).toBe('Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope');
    // carol may manage RoleBindings in dev (admin) but holds no cluster-admin rights to hand out.
    expect((await admin(['create', 'rolebinding', 'carol-admin', '--clusterrole=admin', '--user=carol'])).code).toBe(0);
    await eventually(async () => (await as('carol', ['auth', 'can-i', 'create', 'rolebindings'])).stdout.trim() === 'yes');
    const esc = await as('carol', ['create', 'rolebinding', 'carol-root', '--clusterrole=cluster-admin', '--user=carol']);
    expect(esc.code).toBe(1);
    expect(esc.stderr).toBe(
      'error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io "carol-root" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n' +
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}\n',
    );
    expect((await admin(['get', 'rolebinding', 'carol-root'])).code).toBe(1);
    const fine = await as('carol', ['create', 'rolebinding', 'dave-view', '--clusterrole=view', '--user=dave']);
    expect(fine.code, fine.stderr).toBe(0);
  });

  it('refuses a privileged pod under enforce=restricted and warns under warn', async () => {
    expect((await admin(['label', 'namespace', 'secure', 'pod-security.kubernetes.io/enforce=restricted'])).code).toBe(0);
    expect((await admin(['label', 'namespace', 'lax', 'pod-security.kubernetes.io/warn=baseline'])).code).toBe(0);
    const pod = (ns: string) =>
      `apiVersion: v1\nkind: Pod\nmetadata:\n  name: priv\n  namespace: ${ns}\nspec:\n  containers:\n  - name: c\n    image: busybox\n    securityContext:\n      privileged: true\n`;
    const refused = await admin(['apply', '-f', '-'], pod('secure'));
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      'Error from server (Forbidden): error when creating "STDIN": pods "priv" is forbidden: violates PodSecurity "restricted:latest": ' +
        'privileged (container "c" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
    const warned = await admin(['apply', '-f', '-'], pod('lax'));
    expect(warned.code, warned.stderr).toBe(0);
    expect(warned.stderr.trim()).toBe('Warning: would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)');
    expect(warned.stdout.trim()).toBe('pod/priv created');
  });

  it.runIf(py)('lets the official Python client in with a ServiceAccount bearer token, as RBAC allows', async () => {
    await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'pyclient', namespace: 'dev' } });
    const token = (await admin(['create', 'token', 'pyclient'])).stdout.trim();
    const caFile = path.join(dir, 'ca.crt');
    fs.writeFileSync(caFile, ca.certPem);
    const script = [
      'import os, kubernetes.client as k',
      'c = k.Configuration(); c.host = os.environ["SERVER"]; c.ssl_ca_cert = os.environ["CA"]',
      'c.api_key = {"authorization": os.environ["TOKEN"]}; c.api_key_prefix = {"authorization": "Bearer"}',
      'api = k.CoreV1Api(k.ApiClient(c))',
      'try:',
      '    print("pods", sorted(p.metadata.name for p in api.list_namespaced_pod("dev").items))',
      'except k.rest.ApiException as e:',
      '    print("status", e.status, e.reason)',
    ].join('\n');
    const run = () => runClient('/usr/bin/python3', ['-c', script], { kubeconfig: '/dev/null', env: { SERVER: api.url!, CA: caFile, TOKEN: token } });
    expect((await run()).stdout.trim()).toBe('status 403 Forbidden');
    expect((await admin(['create', 'rolebinding', 'pyclient-view', '--clusterrole=view', '--serviceaccount=dev:pyclient'])).code).toBe(0);
    await eventually(async () => (await run()).stdout.startsWith('pods'));
    const r = await run();
    expect(r.stdout.trim(), r.stderr).toMatch(/^pods \[/);
  });

  it('refuses through a ValidatingAdmissionPolicy and a user\'s webhooks, applies a mutating JSONPatch, and writes nothing refused', async () => {
    const V = 'admissionregistration.k8s.io/v1';
    const podRules = [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }];
    await store.create({
      apiVersion: V,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'no-latest' },
      spec: { matchConstraints: { resourceRules: podRules }, validations: [{ expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))", message: 'images must not use the latest tag' }] },
    });
    await store.create({ apiVersion: V, kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'no-latest-dev' }, spec: { policyName: 'no-latest', validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'dev' } } } } });
    // The namespace label the selector uses (the namespace controller sets it upstream).
    await admin(['label', 'namespace', 'dev', 'kubernetes.io/metadata.name=dev', '--overwrite']);
    const run = (name: string, image: string) => admin(['run', name, `--image=${image}`, '--restart=Never']);
    await eventually(async () => (await run('probe', 'busybox:latest')).code !== 0);
    const vap = await run('latest', 'busybox:latest');
    expect(vap.stderr.trim()).toBe(`The pods "latest" is invalid: : ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest-dev' denied request: images must not use the latest tag`);
    expect((await admin(['get', 'pod', 'latest'])).stderr.trim()).toBe('Error from server (NotFound): pods "latest" not found');

    // A user's HTTPS webhook: refuses pods named "bad*", and labels every pod it sees.
    const serving = await ca.issueServing();
    const hook = https.createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        const { request } = JSON.parse(text);
        const name: string = request.object.metadata.name;
        const response = req.url!.startsWith('/mutate')
          ? { uid: request.uid, allowed: true, patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify([{ op: 'add', path: '/metadata/labels', value: { ...(request.object.metadata.labels ?? {}), 'webhook.example.com/seen': 'true' } }])).toString('base64') }
          : name.startsWith('bad')
            ? { uid: request.uid, allowed: false, status: { code: 403, message: `pod name "${name}" is not allowed` } }
            : { uid: request.uid, allowed: true };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }));
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    try {
      const url = `https://127.0.0.1:${(hook.address() as AddressInfo).port}`;
      const caBundle = Buffer.from(ca.certPem).toString('base64');
      const wh = (path: string) => ({ name: `${path}.example.com`, clientConfig: { url: `${url}/${path}`, caBundle }, rules: podRules, sideEffects: 'None', admissionReviewVersions: ['v1'], namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'dev' } } });
      await store.create({ apiVersion: V, kind: 'ValidatingWebhookConfiguration', metadata: { name: 'names' }, webhooks: [wh('validate')] });
      await store.create({ apiVersion: V, kind: 'MutatingWebhookConfiguration', metadata: { name: 'labels' }, webhooks: [wh('mutate')] });
      await eventually(async () => (await run('bad-probe', 'busybox:1.36')).code !== 0);
      const refused = await run('bad-pod', 'busybox:1.36');
      // The webhook sets no reason, so kubectl names none (as with webhooks that leave it empty upstream).
      expect(refused.stderr.trim()).toBe('Error from server: admission webhook "validate.example.com" denied the request: pod name "bad-pod" is not allowed');
      expect((await admin(['get', 'pod', 'bad-pod'])).code).toBe(1);
      const ok = await run('good', 'busybox:1.36');
      expect(ok.code, ok.stderr).toBe(0);
      expect((await admin(['get', 'pod', 'good', '-o', 'jsonpath={.metadata.labels.webhook\\.example\\.com/seen}'])).stdout).toBe('true');
    } finally {
      hook.closeAllConnections();
      await new Promise((r) => hook.close(r));
    }
  });

  it('stops the pod past a ResourceQuota with the upstream message, and defaults requests from a LimitRange', async () => {
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'quota' } });
    await store.create({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'two-pods', namespace: 'quota' }, spec: { hard: { pods: '2' } } });
    await store.create({ apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'defaults', namespace: 'quota' }, spec: { limits: [{ type: 'Container', defaultRequest: { cpu: '100m', memory: '64Mi' } }] } });
    await eventually(async () => (await admin(['get', 'resourcequota', 'two-pods', '-n', 'quota', '-o', 'jsonpath={.status.used.pods}'])).stdout === '0');
    await eventually(async () => (await store.list('ServiceAccount', { namespace: 'quota' })).items.length > 0);
    const run = (name: string) => admin(['run', name, '--image=busybox:1.36', '--restart=Never', '-n', 'quota']);
    expect((await run('p1')).code).toBe(0);
    expect((await run('p2')).code).toBe(0);
    const third = await run('p3');
    expect(third.stderr.trim()).toBe('Error from server (Forbidden): pods "p3" is forbidden: exceeded quota: two-pods, requested: pods=1, used: pods=2, limited: pods=2');
    expect((await admin(['get', 'resourcequota', 'two-pods', '-n', 'quota', '-o', 'jsonpath={.status.used.pods}'])).stdout).toBe('2');
    const req = await admin(['get', 'pod', 'p1', '-n', 'quota', '-o', 'jsonpath={.spec.containers[0].resources.requests}']);
    expect(JSON.parse(req.stdout)).toEqual({ cpu: '100m', memory: '64Mi' });
  });

  it.runIf(old)('answers the old kubectl v1.20 the same: can-i, a 403 worded as upstream, then access after a RoleBinding', async () => {
    const kc = await kubeconfigFor('olduser', ['old-timers']);
    const k = (args: string[]) => runClient(KUBECTL_OLD, args, { kubeconfig: kc });
    expect((await k(['auth', 'can-i', 'list', 'pods'])).stdout.trim()).toBe('no');
    expect((await k(['get', 'pods'])).stderr.trim()).toBe('Error from server (Forbidden): pods is forbidden: User "olduser" cannot list resource "pods" in API group "" in the namespace "dev"');
    expect((await admin(['create', 'rolebinding', 'old-view', '--clusterrole=view', '--group=old-timers'])).code).toBe(0);
    await eventually(async () => (await k(['auth', 'can-i', 'list', 'pods'])).stdout.trim() === 'yes');
    expect((await k(['get', 'pods'])).code).toBe(0);
  });
});
