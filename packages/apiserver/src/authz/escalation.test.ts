import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionAttributes, UserInfo } from '../auth-seams.js';
import { ensureBootstrapPolicy } from './bootstrap-policy.js';
import { compactString, covers, RBACEscalationCheck } from './escalation.js';
import { RBACAuthorizer } from './rbac-authorizer.js';
import { InformerRBACSource } from './rbac-source.js';

const G = 'rbac.authorization.k8s.io';
const V = `${G}/v1`;
const alice: UserInfo = { name: 'alice', groups: ['system:authenticated'] };

function write(obj: KubeObject, user: UserInfo, op: 'CREATE' | 'UPDATE' = 'CREATE'): AdmissionAttributes {
  const resource = `${obj.kind.toLowerCase()}s`;
  return {
    operation: op,
    kind: { group: G, version: 'v1', kind: obj.kind },
    resource: { group: G, version: 'v1', resource },
    subresource: '',
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name ?? '',
    object: obj,
    dryRun: false,
    userInfo: user,
  };
}

describe('RBAC escalation prevention', () => {
  let store: Store;
  let source: InformerRBACSource;
  let check: RBACEscalationCheck;
  let rbac: RBACAuthorizer;
  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  };

  beforeEach(async () => {
    store = await createMemoryStore();
    await ensureBootstrapPolicy(store);
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
    await store.create({ apiVersion: V, kind: 'Role', metadata: { name: 'pod-reader', namespace: 'dev' }, rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'] }] } as KubeObject);
    await store.create({
      apiVersion: V,
      kind: 'RoleBinding',
      metadata: { name: 'alice', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'Role', name: 'pod-reader' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'alice' }],
    } as KubeObject);
    source = new InformerRBACSource(store);
    await source.start();
    rbac = new RBACAuthorizer(source);
    check = new RBACEscalationCheck(rbac);
  });
  afterEach(() => source.stop());

  const role = (rules: unknown[]): KubeObject => ({ apiVersion: V, kind: 'Role', metadata: { name: 'mine', namespace: 'dev' }, rules });

  it('lets a user grant rights they hold, and refuses more with the upstream message', async () => {
    await expect(check.validate(write(role([{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }]), alice))).resolves.toBeUndefined();
    await expect(check.validate(write(role([{ verbs: ['get', 'delete', 'watch'], apiGroups: [''], resources: ['pods', 'secrets'] }]), alice))).rejects.toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message:
        'roles.rbac.authorization.k8s.io "mine" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n' +
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete" "watch"]}\n' +
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete" "watch"]}',
    });
    // A Role in another namespace: alice holds nothing there.
    const other = { ...role([{ verbs: ['get'], apiGroups: [''], resources: ['pods'] }]), metadata: { name: 'mine', namespace: 'prod' } };
    await expect(check.validate(write(other, alice))).rejects.toMatchObject({ code: 403 });
  });

  it('refuses a binding to a role with more rights unless the user may bind it', async () => {
    const rb: KubeObject = {
      apiVersion: V,
      kind: 'RoleBinding',
      metadata: { name: 'bob-admin', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'bob' }],
    };
    await expect(check.validate(write(rb, alice))).rejects.toMatchObject({ code: 403, message: expect.stringMatching(/^rolebindings.rbac.authorization.k8s.io "bob-admin" is forbidden: user "alice" .* not currently held:\n/) });
    const same: KubeObject = { ...rb, metadata: { name: 'bob-read', namespace: 'dev' }, roleRef: { apiGroup: G, kind: 'Role', name: 'pod-reader' } };
    await expect(check.validate(write(same, alice))).resolves.toBeUndefined();
    await store.create({ apiVersion: V, kind: 'Role', metadata: { name: 'binder', namespace: 'dev' }, rules: [{ verbs: ['bind'], apiGroups: [G], resources: ['clusterroles'], resourceNames: ['cluster-admin'] }] } as KubeObject);
    await store.create({
      apiVersion: V,
      kind: 'RoleBinding',
      metadata: { name: 'alice-binder', namespace: 'dev' },
      roleRef: { apiGroup: G, kind: 'Role', name: 'binder' },
      subjects: [{ kind: 'User', apiGroup: G, name: 'alice' }],
    } as KubeObject);
    await until(() => rbac.rulesFor(alice, 'dev').rules.some((r) => r.verbs.includes('bind')));
    await expect(check.validate(write(rb, alice))).resolves.toBeUndefined();
  });

  it('exempts system:masters and keeps aggregationRule for those who may escalate', async () => {
    const admin: UserInfo = { name: 'root', groups: ['system:masters'] };
    await expect(check.validate(write(role([{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }]), admin))).resolves.toBeUndefined();
    const agg: KubeObject = { apiVersion: V, kind: 'ClusterRole', metadata: { name: 'agg' }, aggregationRule: { clusterRoleSelectors: [{ matchLabels: { a: 'b' } }] } };
    await expect(check.validate(write(agg, alice))).rejects.toMatchObject({
      message: 'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule',
    });
  });

  it('matches wildcards and subresources the way the authorizer does', () => {
    const owner = [{ verbs: ['*'], apiGroups: ['apps'], resources: ['*/scale'] }, { verbs: ['get'], nonResourceURLs: ['/logs/*'] }];
    expect(covers(owner, [{ verbs: ['update'], apiGroups: ['apps'], resources: ['deployments/scale'] }]).ok).toBe(true);
    expect(covers(owner, [{ verbs: ['update'], apiGroups: ['apps'], resources: ['deployments'] }]).ok).toBe(false);
    expect(covers(owner, [{ verbs: ['get'], nonResourceURLs: ['/logs/kube'] }]).ok).toBe(true);
    expect(compactString({ verbs: ['get'], nonResourceURLs: ['/x'] })).toBe('{NonResourceURLs:["/x"], Verbs:["get"]}');
  });
});
