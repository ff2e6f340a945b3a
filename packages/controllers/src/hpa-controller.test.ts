import { afterEach, describe, expect, it } from 'vitest';
import { type Deployment, type HorizontalPodAutoscaler, MemoryStore } from '@kemu/core';
import { ControllerContext } from './controller-context.js';
import { DeploymentController } from './deployment-controller.js';
import { HPAController, type MetricsSource, type PodUsage } from './hpa-controller.js';
import { ReplicaSetController } from './replica-set-controller.js';
import { fakeKubelet, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe('horizontal pod autoscaler', () => {
  it('scales a Deployment from simulated CPU usage, limited by maxReplicas, and stabilizes scale-down', async () => {
    const store = await MemoryStore.open();
    const stop = await fakeKubelet(store);
    let perPod: PodUsage = { cpuMillis: 200 };
    const metrics: MetricsSource = { podUsage: async (_ns, pods) => new Map(pods.map((p) => [p.metadata.name!, perPod])) };
    const ctx = new ControllerContext({ store });
    const parts = [new DeploymentController(ctx), new ReplicaSetController(ctx), new HPAController(ctx, { metrics, syncPeriodMs: 50 })];
    for (const p of parts) await p.start();
    cleanup.push(() => store.close(), stop, async () => {
      for (const p of parts) await p.stop();
      await ctx.informers.stop();
    });
    await store.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default' },
      spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx', resources: { requests: { cpu: '100m' } } }] } } },
    } as Deployment);
    await until('two ready', async () => (await store.get('Deployment', 'default', 'web')).status?.availableReplicas === 2);
    await store.create({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'web', namespace: 'default' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }, minReplicas: 1, maxReplicas: 5, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }] },
    } as HorizontalPodAutoscaler);
    // 200% of request against a 50% target: 8 wanted, 6 allowed this round, 5 at most.
    const h = await until('scaled up to max', async () => {
      const x = await store.get('HorizontalPodAutoscaler', 'default', 'web');
      return (await store.get('Deployment', 'default', 'web')).spec.replicas === 5 && x.status?.conditions?.find((c) => c.type === 'ScalingLimited')?.reason === 'TooManyReplicas' && x;
    });
    expect(h.status?.currentMetrics?.[0]).toMatchObject({ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: 200 } } });
    const events = (await store.list('Event', { namespace: 'default' })).items.filter((e) => e.reason === 'SuccessfulRescale').map((e) => e.message);
    expect(events[0]).toBe('New size: 5; reason: cpu resource utilization (percentage of request) above target');
    // Load drops: the recommendation falls, but scale-down waits for the stabilization window.
    perPod = { cpuMillis: 5 };
    await until('stabilized', async () => (await store.get('HorizontalPodAutoscaler', 'default', 'web')).status?.conditions?.find((c) => c.type === 'AbleToScale')?.reason === 'ScaleDownStabilized');
    expect((await store.get('Deployment', 'default', 'web')).spec.replicas).toBe(5);
  });

  it('reports ScalingActive False without metrics', async () => {
    const store = await MemoryStore.open();
    const ctx = new ControllerContext({ store, disableEvents: true });
    const hpa = new HPAController(ctx, { syncPeriodMs: 50 });
    await hpa.start();
    cleanup.push(() => store.close(), async () => {
      await hpa.stop();
      await ctx.informers.stop();
    });
    await store.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default' },
      spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
    } as Deployment);
    await store.create({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'web', namespace: 'default' },
      spec: { scaleTargetRef: { kind: 'Deployment', name: 'web' }, maxReplicas: 3 },
    } as HorizontalPodAutoscaler);
    const c = await until('condition', async () => (await store.get('HorizontalPodAutoscaler', 'default', 'web')).status?.conditions?.find((x) => x.type === 'ScalingActive'));
    expect(c).toMatchObject({ status: 'False', reason: 'FailedGetResourceMetric' });
  });
});
