import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionAttributes, AdmissionOperation } from '../auth-seams.js';
import { DefaultStorageClassAdmission } from './default-storage-class.js';
import { DefaultTolerationSecondsAdmission } from './default-toleration-seconds.js';
import { NamespaceLifecycleAdmission } from './namespace-lifecycle.js';
import { NodeRestrictionAdmission } from './node-restriction.js';
import { ensureSystemPriorityClasses, PriorityAdmission } from './priority.js';
import { SERVICE_ACCOUNT_MOUNT, ServiceAccountAdmission } from './service-account.js';

type Opts = { op?: AdmissionOperation; resource?: string; sub?: string; old?: KubeObject; user?: { name: string; groups: string[] }; name?: string; ns?: string };
function attrs(obj: KubeObject | undefined, o: Opts = {}): AdmissionAttributes {
  return {
    operation: o.op ?? 'CREATE',
    kind: { group: '', version: 'v1', kind: obj?.kind ?? '' },
    resource: { group: '', version: 'v1', resource: o.resource ?? 'pods' },
    subresource: o.sub ?? '',
    namespace: o.ns ?? obj?.metadata.namespace ?? '',
    name: o.name ?? obj?.metadata.name ?? '',
    object: obj,
    oldObject: o.old,
    dryRun: false,
    userInfo: o.user ?? { name: 'alice', groups: ['system:authenticated'] },
  };
}
const pod = (extra: Record<string, unknown> = {}, meta: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'dev', ...meta },
  spec: { containers: [{ name: 'app', image: 'busybox' }], ...extra },
});

describe('built-in admission plugins', () => {
  let store: Store;
  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dev' } });
  });

  it('NamespaceLifecycle: 404 for a missing namespace, 403 while terminating, system namespaces stay', async () => {
    const nl = new NamespaceLifecycleAdmission(store);
    await expect(nl.validate(attrs(pod({}, { namespace: 'ghost' })))).rejects.toMatchObject({ code: 404, message: 'namespaces "ghost" not found' });
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'going', finalizers: ['example.com/hold'] } });
    await store.delete('Namespace', '', 'going');
    await expect(nl.validate(attrs(pod({}, { namespace: 'going' })))).rejects.toMatchObject({
      code: 403,
      message: 'pods "web" is forbidden: unable to create new content in namespace going because it is being terminated',
    });
    await expect(nl.validate(attrs(undefined, { op: 'DELETE', resource: 'namespaces', name: 'kube-system' }))).rejects.toMatchObject({
      message: 'namespaces "kube-system" is forbidden: this namespace may not be deleted',
    });
    await expect(nl.validate(attrs(pod()))).resolves.toBeUndefined();
  });

  it('ServiceAccount: default account, its existence, and the projected token volume', async () => {
    const sa = new ServiceAccountAdmission(store);
    await expect(sa.admit(attrs(pod()))).rejects.toMatchObject({ code: 403, message: 'pods "web" is forbidden: error looking up service account dev/default: serviceaccount "default" not found' });
    await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'dev' }, imagePullSecrets: [{ name: 'regcred' }] });
    const p = pod({ initContainers: [{ name: 'init', image: 'busybox' }] });
    await sa.admit(attrs(p));
    expect(p.spec.serviceAccountName).toBe('default');
    expect(p.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    const vol = p.spec.volumes[0];
    expect(vol.name).toMatch(/^kube-api-access-[a-z0-9]{5}$/);
    expect(vol.projected.sources.map((s: object) => Object.keys(s)[0])).toEqual(['serviceAccountToken', 'configMap', 'downwardAPI']);
    for (const c of [...p.spec.initContainers, ...p.spec.containers]) expect(c.volumeMounts).toEqual([{ name: vol.name, readOnly: true, mountPath: SERVICE_ACCOUNT_MOUNT }]);
    const off = pod({ automountServiceAccountToken: false });
    await sa.admit(attrs(off));
    expect(off.spec.volumes).toBeUndefined();
  });

  it('DefaultTolerationSeconds adds the two NoExecute tolerations unless present', async () => {
    const p = pod({ tolerations: [{ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 }] });
    await new DefaultTolerationSecondsAdmission().admit(attrs(p));
    expect(p.spec.tolerations).toEqual([
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ]);
  });

  it('DefaultStorageClass fills the default class into a claim that names none', async () => {
    await store.create({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'slow' }, provisioner: 'x' });
    await store.create({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fast', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }, provisioner: 'x' });
    const claim = (cls?: string | null): KubeObject => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', namespace: 'dev' }, spec: { ...(cls !== undefined ? { storageClassName: cls } : {}) } });
    const dsc = new DefaultStorageClassAdmission(store);
    const a = claim();
    await dsc.admit(attrs(a, { resource: 'persistentvolumeclaims' }));
    expect(a.spec.storageClassName).toBe('fast');
    const b = claim('');
    await dsc.admit(attrs(b, { resource: 'persistentvolumeclaims' }));
    expect(b.spec.storageClassName).toBe('');
  });

  it('Priority resolves the class, refuses an unknown one and a hand-set priority', async () => {
    await ensureSystemPriorityClasses(store);
    const pr = new PriorityAdmission(store);
    const p = pod({ priorityClassName: 'system-node-critical' });
    await pr.admit(attrs(p));
    expect(p.spec.priority).toBe(2000001000);
    await expect(pr.admit(attrs(pod({ priorityClassName: 'gold' })))).rejects.toMatchObject({ message: 'pods "web" is forbidden: no PriorityClass with name gold was found' });
    await expect(pr.admit(attrs(pod({ priority: 5 })))).rejects.toMatchObject({
      message: 'pods "web" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name',
    });
    await store.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'normal' }, value: 1000, globalDefault: true });
    const d = pod();
    await pr.admit(attrs(d));
    expect([d.spec.priorityClassName, d.spec.priority]).toEqual(['normal', 1000]);
  });

  it('NodeRestriction keeps a kubelet to its own node and pods', async () => {
    const nr = new NodeRestrictionAdmission(store);
    const kubelet = { name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] };
    const node = (name: string): KubeObject => ({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
    await expect(nr.validate(attrs(node('n1'), { resource: 'nodes', op: 'UPDATE', user: kubelet }))).resolves.toBeUndefined();
    await expect(nr.validate(attrs(node('n2'), { resource: 'nodes', op: 'UPDATE', user: kubelet }))).rejects.toMatchObject({
      message: 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"',
    });
    await expect(nr.validate(attrs(pod({ nodeName: 'n1' }), { user: kubelet }))).rejects.toMatchObject({
      message: 'pods "web" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods',
    });
    const other = pod({ nodeName: 'n2' });
    await expect(nr.validate(attrs(other, { op: 'UPDATE', sub: 'status', old: other, user: kubelet }))).rejects.toMatchObject({
      message: 'pods "web" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself',
    });
    const mine = pod({ nodeName: 'n1' });
    await expect(nr.validate(attrs(mine, { op: 'UPDATE', sub: 'status', old: mine, user: kubelet }))).resolves.toBeUndefined();
    // Users who are not nodes are not this plugin's business.
    await expect(nr.validate(attrs(node('n2'), { resource: 'nodes', op: 'UPDATE' }))).resolves.toBeUndefined();
  });
});
