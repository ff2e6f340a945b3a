import { afterEach, describe, expect, it } from 'vitest';
import { type Deployment, MemoryStore, type PodDisruptionBudget } from '@kemu/core';
import { ControllerManager } from './controller-manager.js';
import { fakeKubelet, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const deployment = (replicas: number): Deployment => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'default' },
  spec: { replicas, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
});

describe('disruption controller', () => {
  it('reports disruptionsAllowed from healthy pods and the owning Deployment scale', async () => {
    const store = await MemoryStore.open();
    const stop = await fakeKubelet(store);
    const cm = new ControllerManager({ store, controllers: 'deployment,replicaset,disruption', leaderElect: false });
    await cm.start();
    cleanup.push(() => store.close(), stop, () => cm.stop());
    await store.create(deployment(4));
    await store.create({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'min', namespace: 'default' }, spec: { minAvailable: 3, selector: { matchLabels: { app: 'web' } } } } as PodDisruptionBudget);
    await store.create({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'pct', namespace: 'default' }, spec: { maxUnavailable: '50%', selector: { matchLabels: { app: 'web' } } } } as PodDisruptionBudget);
    const min = await until('min status', async () => {
      const p = await store.get('PodDisruptionBudget', 'default', 'min');
      return p.status?.currentHealthy === 4 && p;
    });
    expect(min.status).toMatchObject({ disruptionsAllowed: 1, desiredHealthy: 3, expectedPods: 4 });
    expect(min.status?.conditions?.[0]).toMatchObject({ type: 'DisruptionAllowed', status: 'True', reason: 'SufficientPods' });
    const pct = await until('pct status', async () => {
      const p = await store.get('PodDisruptionBudget', 'default', 'pct');
      return p.status?.currentHealthy === 4 && p;
    });
    expect(pct.status).toMatchObject({ disruptionsAllowed: 2, desiredHealthy: 2, expectedPods: 4 });
    await store.patch('Deployment', 'default', 'web', { spec: { replicas: 3 } }, 'merge');
    await until('no disruptions left', async () => {
      const p = await store.get('PodDisruptionBudget', 'default', 'min');
      return p.status?.disruptionsAllowed === 0 && p.status.conditions?.[0].reason === 'InsufficientPods';
    });
  });
});

describe('resource quota controller', () => {
  it('keeps status.used of pods, services, claims and cpu/memory requests', async () => {
    const store = await MemoryStore.open();
    const cm = new ControllerManager({ store, controllers: 'resourcequota', leaderElect: false });
    await cm.start();
    cleanup.push(() => store.close(), () => cm.stop());
    await store.create({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'q', namespace: 'default' },
      spec: { hard: { pods: '10', 'requests.cpu': '4', 'limits.memory': '8Gi', services: '5', 'services.nodeports': '2', 'count/deployments.apps': '3' } },
    });
    const pod = (name: string, cpu: string, mem: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: { containers: [{ name: 'c', image: 'x', resources: { requests: { cpu }, limits: { memory: mem } } }, { name: 'd', image: 'x', resources: { requests: { cpu: '100m' } } }] },
    });
    await store.create(pod('a', '500m', '1Gi'));
    await store.create(pod('b', '1', '512Mi'));
    await store.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'default' }, spec: { type: 'NodePort', ports: [{ port: 80 }] } });
    await store.create(deployment(1));
    const q = await until('usage', async () => {
      const x = await store.get('ResourceQuota', 'default', 'q');
      return x.status?.used?.pods === '2' && x.status.used['count/deployments.apps'] === '1' && x;
    });
    expect(q.status?.used).toEqual({ pods: '2', 'requests.cpu': '1700m', 'limits.memory': '1536Mi', services: '1', 'services.nodeports': '1', 'count/deployments.apps': '1' });
    expect(q.status?.hard).toEqual(q.spec?.hard);
  });
});

describe('leader election', () => {
  it('runs the controllers of one manager at a time and hands over when the leader stops', async () => {
    const store = await MemoryStore.open();
    cleanup.push(() => store.close());
    const opts = { store, controllers: 'deployment,replicaset', leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 100 };
    const a = new ControllerManager({ ...opts, identity: 'a' });
    const b = new ControllerManager({ ...opts, identity: 'b' });
    await a.start();
    await until('a leads', async () => a.leading);
    await b.start();
    cleanup.push(() => b.stop());
    await new Promise((r) => setTimeout(r, 300));
    expect(b.leading).toBe(false);
    const lease = await store.get('Lease', 'kube-system', 'kube-controller-manager');
    expect(lease.spec?.holderIdentity).toBe('a');
    await a.stop();
    await until('b takes over', async () => b.leading, 5000);
    // The new leader's controllers act.
    await store.create(deployment(1));
    await until('replicaset from b', async () => (await store.list('ReplicaSet', { namespace: 'default' })).items.length === 1);
  });
});
