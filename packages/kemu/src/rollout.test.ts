// `kemu rollout` and `kemu scale` against a store (the same calls the CLI makes over the API socket).
import { type Deployment, MemoryStore } from '@kemu/core';
import { afterEach, describe, expect, it } from 'vitest';
import { deploymentStatus, RolloutError, rolloutHistory, rolloutPause, rolloutRestart, rolloutStatus, scale } from './rollout.js';

const dep = (status: Deployment['status'], generation = 1, replicas = 3): Deployment =>
  ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default', generation },
    spec: { replicas, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } },
    status,
  }) as Deployment;

describe('rollout status', () => {
  it("words every stage as kubectl's deployment status viewer does", () => {
    expect(deploymentStatus(dep({ observedGeneration: 1 }, 2)).message).toBe('Waiting for deployment spec update to be observed...');
    expect(deploymentStatus(dep({ observedGeneration: 1, updatedReplicas: 1, replicas: 4 })).message).toBe('Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...');
    expect(deploymentStatus(dep({ observedGeneration: 1, updatedReplicas: 3, replicas: 4 })).message).toBe('Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...');
    expect(deploymentStatus(dep({ observedGeneration: 1, updatedReplicas: 3, replicas: 3, availableReplicas: 2 })).message).toBe('Waiting for deployment "web" rollout to finish: 2 of 3 updated replicas are available...');
    expect(deploymentStatus(dep({ observedGeneration: 1, updatedReplicas: 3, replicas: 3, availableReplicas: 3 }))).toEqual({ message: 'deployment "web" successfully rolled out', done: true });
    expect(() => deploymentStatus(dep({ observedGeneration: 1, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }] }))).toThrow('deployment "web" exceeded its progress deadline');
  });
});

describe('rollout pause, resume, restart and scale', () => {
  let store: MemoryStore | undefined;
  afterEach(async () => store?.close());

  it('changes the fields kubectl changes and refuses what kubectl refuses', async () => {
    store = await MemoryStore.open();
    await store.create(dep(undefined));
    const api = store as unknown as Parameters<typeof scale>[0];
    expect(await rolloutPause(api, 'Deployment', 'default', 'web', true)).toBe('deployment.apps/web paused');
    await expect(rolloutPause(api, 'Deployment', 'default', 'web', true)).rejects.toThrow('deployments.apps "web" is already paused');
    await expect(rolloutRestart(api, 'Deployment', 'default', 'web')).rejects.toBeInstanceOf(RolloutError);
    expect(await rolloutPause(api, 'Deployment', 'default', 'web', false)).toBe('deployment.apps/web resumed');
    expect(await rolloutRestart(api, 'Deployment', 'default', 'web', new Date('2026-01-01T00:00:00Z'))).toBe('deployment.apps/web restarted');
    const d = await store.get('Deployment', 'default', 'web');
    expect(d.spec.template.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt']).toBe('2026-01-01T00:00:00Z');
    expect(await scale(api, 'Deployment', 'default', 'web', 5)).toBe('deployment.apps/web scaled');
    expect((await store.get('Deployment', 'default', 'web')).spec.replicas).toBe(5);
    await expect(scale(api, 'Deployment', 'default', 'web', 2, 3)).rejects.toThrow('Expected replicas to be 3, was 5');
    await expect(scale(api, 'Job', 'default', 'web', 2)).rejects.toThrow('cannot scale a Job');
    const lines: string[] = [];
    await rolloutStatus(api, 'Deployment', 'default', 'web', { watch: false }, (l) => lines.push(l));
    // No controller has observed the new generation yet.
    expect(lines).toEqual(['Waiting for deployment spec update to be observed...']);
  });
});

describe('rollout history of a StatefulSet', () => {
  it('lists its ControllerRevisions', async () => {
    const store = await MemoryStore.open();
    try {
      const sts = await store.create({
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'db', namespace: 'default' },
        spec: { serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'c', image: 'x' }] } } },
      });
      for (const [revision, cause] of [[1, undefined], [2, 'kubectl set image sts/db c=y']] as const) {
        await store.create({
          apiVersion: 'apps/v1',
          kind: 'ControllerRevision',
          metadata: { name: `db-${revision}`, namespace: 'default', ...(cause ? { annotations: { 'kubernetes.io/change-cause': cause } } : {}), ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: sts.metadata.uid!, controller: true }] },
          revision,
          data: {},
        });
      }
      const lines: string[] = [];
      await rolloutHistory(store as unknown as Parameters<typeof scale>[0], 'StatefulSet', 'default', 'db', undefined, (l) => lines.push(l));
      expect(lines).toEqual(['statefulset.apps/db', 'REVISION  CHANGE-CAUSE', '1         <none>', '2         kubectl set image sts/db c=y', '']);
    } finally {
      await store.close();
    }
  });
});
