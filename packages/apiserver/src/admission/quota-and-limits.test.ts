import { createMemoryStore, type KubeObject, SharedInformer, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AdmissionAttributes } from '../auth-seams.js';
import { LimitRangerAdmission } from './limit-ranger.js';
import { ResourceQuotaAdmission, ResourceQuotaStatusController } from './resource-quota.js';

function attrs(obj: KubeObject, resource = 'pods', op: 'CREATE' | 'UPDATE' = 'CREATE', old?: KubeObject): AdmissionAttributes {
  return {
    operation: op,
    kind: { group: '', version: 'v1', kind: obj.kind },
    resource: { group: '', version: 'v1', resource },
    subresource: '',
    namespace: obj.metadata.namespace ?? '',
    name: obj.metadata.name ?? '',
    object: obj,
    oldObject: old,
    dryRun: false,
    userInfo: { name: 'alice', groups: ['system:authenticated'] },
  };
}
const pod = (name: string, cpu?: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'q' },
  spec: { containers: [{ name: 'app', image: 'busybox', ...(cpu ? { resources: { requests: { cpu } } } : {}) }] },
});

// Rounds read either the store (no informer given) or the status controller's quota informer plus their own
// writes, which the informer may not have seen yet: both must count every admitted pod exactly once.
describe.each(['store', 'informer'] as const)('ResourceQuota admission reading quotas from the %s', (source) => {
  let store: Store;
  let quota: ResourceQuotaAdmission;
  let controller: ResourceQuotaStatusController;
  const used = async () => (await store.get('ResourceQuota', 'q', 'compute')).status?.used;
  const until = async (cond: () => Promise<boolean>) => {
    for (let i = 0; i < 200 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 5));
  };
  const admitAndCreate = async (p: KubeObject) => {
    await quota.validate(attrs(p));
    return store.create(p);
  };

  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'q' } });
    controller = new ResourceQuotaStatusController(store);
    await controller.start();
    await store.create({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'compute', namespace: 'q' }, spec: { hard: { pods: '2', 'requests.cpu': '1' } } });
    await until(async () => (await used()) !== undefined);
    quota = new ResourceQuotaAdmission(store, source === 'informer' ? controller.quotaInformer : undefined);
  });
  afterEach(() => controller.stop());

  it('keeps usage in status and stops the pod past the limit with the upstream message', async () => {
    expect(await used()).toEqual({ pods: '0', 'requests.cpu': '0' });
    await admitAndCreate(pod('p1', '250m'));
    expect(await used()).toEqual({ pods: '1', 'requests.cpu': '250m' });
    await admitAndCreate(pod('p2', '250m'));
    await expect(admitAndCreate(pod('p3', '100m'))).rejects.toMatchObject({
      code: 403,
      message: 'pods "p3" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2',
    });
    expect(await used()).toEqual({ pods: '2', 'requests.cpu': '500m' });
    await expect(store.get('Pod', 'q', 'p3')).rejects.toMatchObject({ code: 404 });
    // Deleting a pod gives its share back once the usage is recounted.
    await store.delete('Pod', 'q', 'p1', { gracePeriodSeconds: 0 });
    await until(async () => (await used())?.pods === '1');
    expect(await used()).toEqual({ pods: '1', 'requests.cpu': '250m' });
    await admitAndCreate(pod('p3', '100m'));
  });

  it('refuses cpu past the limit and a pod that states no cpu request', async () => {
    await expect(admitAndCreate(pod('big', '1500m'))).rejects.toMatchObject({
      message: 'pods "big" is forbidden: exceeded quota: compute, requested: requests.cpu=1500m, used: requests.cpu=0, limited: requests.cpu=1',
    });
    await expect(admitAndCreate(pod('none'))).rejects.toMatchObject({
      message: 'pods "none" is forbidden: failed quota: compute: must specify requests.cpu for: app',
    });
  });

  it('lets only one of two racing creates take the last pod', async () => {
    await admitAndCreate(pod('p1', '100m'));
    const results = await Promise.allSettled([admitAndCreate(pod('a', '100m')), admitAndCreate(pod('b', '100m'))]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('checks concurrent creates together yet exactly: the quota admits as many as it holds and counts each once', async () => {
    await store.update({ ...(await store.get('ResourceQuota', 'q', 'compute')), spec: { hard: { pods: '5' } } });
    await until(async () => (await used())?.pods === '0' && (await used())?.['requests.cpu'] === undefined);
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => admitAndCreate(pod(`c${i}`))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason.message);
    expect(refused).toEqual(['c5', 'c6', 'c7'].map((n) => `pods "${n}" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=5, limited: pods=5`));
    expect(await used()).toEqual({ pods: '5' });
  });
});

describe('ResourceQuota admission behind its informer', () => {
  it('admits once a quota the informer still holds is gone, reading the quotas again', async () => {
    const store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'q' } });
    const q = await store.create({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'gone', namespace: 'q' }, spec: { hard: { pods: '1' } } });
    await store.updateStatus({ ...q, status: { hard: { pods: '1' }, used: { pods: '0' } } });
    // An informer that stopped before the delete: its cache still holds the full quota.
    const stale = new SharedInformer<string>(store, 'ResourceQuota');
    stale.start();
    await stale.waitForSync();
    await stale.stop();
    await store.delete('ResourceQuota', 'q', 'gone');
    const quota = new ResourceQuotaAdmission(store, stale);
    await expect(quota.validate(attrs(pod('p1', '100m')))).resolves.toBeUndefined();
  });
});

describe('LimitRanger admission', () => {
  let store: Store;
  let lr: LimitRangerAdmission;
  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'q' } });
    await store.create({
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name: 'defaults', namespace: 'q' },
      spec: { limits: [{ type: 'Container', default: { memory: '512Mi' }, defaultRequest: { cpu: '100m', memory: '256Mi' }, max: { memory: '1Gi' }, min: { cpu: '50m' } }] },
    });
    lr = new LimitRangerAdmission(store);
  });

  it('defaults requests and limits and says so in an annotation', async () => {
    const p = pod('web');
    await lr.admit(attrs(p));
    expect(p.spec.containers[0].resources).toEqual({ limits: { memory: '512Mi' }, requests: { cpu: '100m', memory: '256Mi' } });
    expect(p.metadata.annotations?.['kubernetes.io/limit-ranger']).toBe('LimitRanger plugin set: cpu, memory request for container app; memory limit for container app');
    await expect(lr.validate(attrs(p))).resolves.toBeUndefined();
  });

  it('refuses a container outside min and max, with every reason', async () => {
    const p = pod('greedy', '10m');
    p.spec.containers[0].resources.limits = { memory: '2Gi' };
    await lr.admit(attrs(p));
    await expect(lr.validate(attrs(p))).rejects.toMatchObject({
      code: 403,
      message: 'pods "greedy" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, maximum memory usage per Container is 1Gi, but limit is 2Gi]',
    });
  });
});
