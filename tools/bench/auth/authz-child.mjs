// The RBAC authorizer alone, for tools/bench/auth/auth.mjs: for each N, a memory store with the bootstrap
// policy and N bindings for other users and groups, the informer caches filled, then `checks` decisions for
// a user allowed through a group binding and for one who holds nothing. Prints JSON.
import { createMemoryStore } from '@kemu/core';
import { ensureBootstrapPolicy, RBACAuthorizer } from '@kemu/apiserver';
import { InformerRBACSource } from '../../../packages/apiserver/src/authz/rbac-source.ts';

const [sizes, checks] = process.argv.slice(2);
const G = 'rbac.authorization.k8s.io';
const out = [];
for (const n of sizes.split(',').map(Number)) {
  const store = await createMemoryStore();
  await ensureBootstrapPolicy(store);
  await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
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
    roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'Group', apiGroup: G, name: 'benchers' }],
  });
  const source = new InformerRBACSource(store);
  await source.start();
  const authz = new RBACAuthorizer(source);
  const req = { isResourceRequest: true, verb: 'create', apiGroup: '', resource: 'pods', subresource: '', name: '', path: '', namespace: 'bench', apiPrefix: 'api', apiVersion: 'v1' };
  const allowed = { name: 'bench', groups: ['benchers', 'system:authenticated'] };
  const nobody = { name: 'stranger', groups: ['strangers', 'system:authenticated'] };
  if (authz.decide(allowed, 'bench', req).decision !== 'allow' || authz.decide(nobody, 'bench', req).decision === 'allow') throw new Error('unexpected decision');
  const time = (user) => {
    const t = performance.now();
    for (let i = 0; i < Number(checks); i++) authz.decide(user, 'bench', req);
    return Number(checks) / ((performance.now() - t) / 1000);
  };
  time(allowed);
  out.push({ bindings: n, allowPerSec: time(allowed), denyPerSec: time(nobody) });
  await source.stop();
}
process.stdout.write(JSON.stringify(out));
