// The horizontal pod autoscaler on the composed cluster: pods whose simulated containers burn 200m of CPU
// against a 100m request (annotation kemu.io/sim-cpu-millicores) run at 200% of request; with a 50% target
// the autoscaler, reading usage from the nodes' CRI runtimes, scales the Deployment up to maxReplicas.
import type { Deployment, HorizontalPodAutoscaler } from '@kemu/core';
import { Cluster } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from '../cluster/composed-cluster.js';
import { until } from '../cluster/util.js';

describe('the horizontal pod autoscaler on the composed cluster', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-hpa-', { nodes: 2, fast: true }, (c) => (cluster = c));

  it('scales a busy Deployment up to maxReplicas from the CPU its pods use', async () => {
    await cluster.store.create({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'busy', namespace: 'default' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'busy' } },
        template: {
          metadata: { labels: { app: 'busy' }, annotations: { 'kemu.io/sim-cpu-millicores': '200' } },
          spec: { containers: [{ name: 'c', image: 'busybox:1.36', command: ['sleep', '3600'], resources: { requests: { cpu: '100m' } } }] },
        },
      },
    } as Deployment);
    await until('two available', async () => (await cluster.store.get('Deployment', 'default', 'busy')).status?.availableReplicas === 2, 60_000);
    await cluster.store.create({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'busy', namespace: 'default' },
      spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'busy' }, minReplicas: 1, maxReplicas: 5, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }] },
    } as HorizontalPodAutoscaler);
    const hpa = await until('scaled to 5', async () => {
      const h = await cluster.store.get('HorizontalPodAutoscaler', 'default', 'busy');
      return (await cluster.store.get('Deployment', 'default', 'busy')).spec.replicas === 5 && h;
    }, 60_000);
    const util = (hpa.status?.currentMetrics?.[0] as { resource?: { current?: { averageUtilization?: number } } } | undefined)?.resource?.current?.averageUtilization;
    expect(util).toBeGreaterThanOrEqual(150);
    expect(util).toBeLessThanOrEqual(250);
    await until('five available', async () => (await cluster.store.get('Deployment', 'default', 'busy')).status?.availableReplicas === 5, 60_000);
  }, 120_000);
});
