// An Indexed Job of 5 completions with parallelism 2 on the composed cluster, with one failure injected
// (a running pod of index 2 is deleted): the Job recreates that index after its backoff, completes within
// backoffLimit, and counts every finished pod exactly once through its tracking finalizer.
import type { Job, Pod } from '@kemu/core';
import { Cluster } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from '../cluster/composed-cluster.js';
import { until } from '../cluster/util.js';

describe('an Indexed Job on the composed cluster', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-job-', { nodes: 2, fast: true }, (c) => (cluster = c));

  it('completes 5 indexes, 2 at a time, despite one injected failure', async () => {
    await cluster.store.create({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'idx', namespace: 'default' },
      spec: {
        completions: 5,
        parallelism: 2,
        completionMode: 'Indexed',
        backoffLimit: 2,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', 'sleep 1; echo done'] }] } },
      },
    } as Job);
    // Inject a failure: delete index 2's pod while it runs.
    const victim = await until('index 2 running', async () =>
      ((await cluster.store.list('Pod', { namespace: 'default' })).items as Pod[]).find(
        (p) => p.metadata.annotations?.['batch.kubernetes.io/job-completion-index'] === '2' && p.status?.phase === 'Running',
      ), 60_000);
    await cluster.store.delete('Pod', 'default', victim.metadata.name!);
    const job = await until('complete', async () => {
      const j = await cluster.store.get('Job', 'default', 'idx');
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') && j;
    }, 90_000);
    expect(job.status).toMatchObject({ succeeded: 5, failed: 1, completedIndexes: '0-4', active: 0 });
    const pods = (await cluster.store.list('Pod', { namespace: 'default' })).items as Pod[];
    expect(pods.some((p) => p.metadata.finalizers?.includes('batch.kubernetes.io/job-tracking'))).toBe(false);
    expect(pods.filter((p) => p.status?.phase === 'Succeeded').map((p) => p.spec.hostname).sort()).toEqual(['idx-0', 'idx-1', 'idx-2', 'idx-3', 'idx-4']);
  }, 120_000);

  it('with a successPolicy of 2 succeeded indexes completes early and removes the pods still running', async () => {
    await cluster.store.create({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'early', namespace: 'default' },
      spec: {
        completions: 6,
        parallelism: 2,
        completionMode: 'Indexed',
        successPolicy: { rules: [{ succeededCount: 2 }] },
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox:1.36', command: ['sh', '-c', 'sleep 1; echo done'] }] } },
      },
    } as Job);
    const job = await until('complete', async () => {
      const j = await cluster.store.get('Job', 'default', 'early');
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') && j;
    }, 60_000);
    expect(job.status?.conditions?.find((c) => c.type === 'SuccessCriteriaMet')).toMatchObject({ status: 'True', reason: 'SuccessPolicy', message: 'Matched rules at index 0' });
    expect(job.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ reason: 'SuccessPolicy' });
    expect(job.status?.failed).toBe(0);
    expect(job.status?.succeeded).toBeGreaterThanOrEqual(2);
    expect(job.status?.succeeded).toBeLessThan(6);
    // Nothing of the Job is left running.
    await until('no active pods', async () => {
      const pods = ((await cluster.store.list('Pod', { namespace: 'default' })).items as Pod[]).filter((p) => p.metadata.labels?.['batch.kubernetes.io/job-name'] === 'early');
      return pods.every((p) => p.status?.phase === 'Succeeded');
    }, 30_000);
  }, 90_000);
});
