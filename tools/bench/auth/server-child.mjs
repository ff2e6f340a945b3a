// The measured server for tools/bench/auth/auth.mjs, in a process of its own: @kemu/apiserver over a memory
// store with HTTPS, either `open` (no authentication, authorization or admission: the allow-all seams),
// `rbac` (authentication and RBAC, admission left open) or `auth` (the whole stack of `kemu up`: client
// certificates, tokens, RBAC with `bindings` extra bindings for other users, and every admission plugin).
// The client is user `bench` (group `benchers`), bound to the `edit` ClusterRole in namespace `bench`; the
// namespace has a ServiceAccount `default` and a roomy quota. Prints one READY line, then serves until
// killed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMemoryStore } from '@kemu/core';
import { CertificateAuthority, decodeObjectBytes, ServiceAccountKeys, startApiServer, startClusterAuth } from '@kemu/apiserver';

const [mode, bindingsArg = '0'] = process.argv.slice(2);
const G = 'rbac.authorization.k8s.io';
const ca = await CertificateAuthority.create('bench-ca');
const serving = await ca.issueServing();
const client = await ca.issueClient({ user: 'bench', groups: ['benchers'] });
const store = await createMemoryStore();
await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
let auth;
if (mode === 'auth' || mode === 'rbac') {
  auth = await startClusterAuth({ store, caCertPem: ca.certPem, serviceAccountKeys: await ServiceAccountKeys.create() });
  const n = Number(bindingsArg);
  for (let i = 0; i < n; i++) {
    const ns = i % 2 === 0 ? 'bench' : undefined;
    await store.create({
      apiVersion: `${G}/v1`,
      kind: ns ? 'RoleBinding' : 'ClusterRoleBinding',
      metadata: { name: `other-${i}`, ...(ns ? { namespace: ns } : {}) },
      roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'User', apiGroup: G, name: `user-${i}` }, { kind: 'Group', apiGroup: G, name: `group-${i}` }],
    });
  }
  await store.create({
    apiVersion: `${G}/v1`,
    kind: 'RoleBinding',
    metadata: { name: 'benchers-edit', namespace: 'bench' },
    roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'edit' },
    subjects: [{ kind: 'Group', apiGroup: G, name: 'benchers' }],
  });
  await store.create({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'roomy', namespace: 'bench' }, spec: { hard: { pods: '1000000' } } });
  // Let the informers see the policy before the first request.
  for (let i = 0; i < 400; i++) {
    const ok = auth.rbac.decide({ name: 'bench', groups: ['benchers'] }, 'bench', { isResourceRequest: true, verb: 'create', apiGroup: '', resource: 'pods', subresource: '', name: '', path: '' });
    const sa = (await store.list('ServiceAccount', { namespace: 'bench' })).items.length;
    const q = (await store.get('ResourceQuota', 'bench', 'roomy')).status?.used;
    if (ok.decision === 'allow' && sa && q) break;
    await new Promise((r) => setTimeout(r, 10));
  }
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-auth-'));
// `rbac`: authentication and RBAC only (admission allows everything), to tell their cost from admission's.
const seams = auth ? (mode === 'rbac' ? { ...auth.seams, admission: undefined } : auth.seams) : {};
const api = await startApiServer(store, path.join(dir, 'api.sock'), {}, {
  ...seams,
  renderers: { protobufDecode: decodeObjectBytes },
  tcp: { host: '127.0.0.1', port: 0, tls: { ...serving, clientCA: ca.certPem } },
});
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
process.stdout.write(`READY ${JSON.stringify({ port: api.port, ca: ca.certPem, cert: client.cert, key: client.key })}\n`);
process.on('SIGTERM', () => process.exit(0));
