import { afterEach, describe, expect, it } from 'vitest';
import { type Job, MemoryStore, type Pod } from '@kemu/core';
import { ControllerManager } from './controller-manager.js';
import { formatIndexes, parseIndexes } from './job-indexes.js';
import { matchSuccessPolicy } from './job-success-policy.js';
import { fakeKubelet, type FakeKubeletOptions, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function cluster(kubelet: FakeKubeletOptions = {}) {
  const store = await MemoryStore.open();
  const stop = await fakeKubelet(store, kubelet);
  const cm = new ControllerManager({ store, controllers: 'job', leaderElect: false, job: { backoffBaseMs: 10 } });
  await cm.start();
  cleanup.push(() => store.close(), stop, () => cm.stop());
  return store;
}

const job = (name: string, spec: Partial<Job['spec']>): Job =>
  ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: 'default' },
    spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox' }] } }, ...spec },
  }) as Job;

const condition = async (store: MemoryStore, name: string, type: string) =>
  until(`${name} ${type}`, async () => {
    const j = await store.get('Job', 'default', name);
    return j.status?.conditions?.find((c) => c.type === type && c.status === 'True') && j;
  });

describe('completion indexes', () => {
  it('are written as upstream intervals', () => {
    expect(formatIndexes([4, 0, 1, 2, 6, 7])).toBe('0-2,4,6-7');
    expect([...parseIndexes('0-2,4,6-7')]).toEqual([0, 1, 2, 4, 6, 7]);
    expect(formatIndexes([])).toBe('');
  });
});

describe('Job controller policies', () => {
  it('a FailJob podFailurePolicy rule fails the Job on the first matching exit code', async () => {
    const store = await cluster({ fail: () => 42 });
    await store.create(
      job('fatal', {
        backoffLimit: 6,
        podFailurePolicy: { rules: [{ action: 'FailJob', onExitCodes: { containerName: 'main', operator: 'In', values: [42] } }] },
      }),
    );
    const j = await condition(store, 'fatal', 'Failed');
    expect(j.status?.conditions?.find((c) => c.type === 'Failed')?.reason).toBe('PodFailurePolicy');
    expect(j.status?.failed).toBe(1);
  });

  it('an Ignore rule does not count towards backoffLimit', async () => {
    let n = 0;
    const store = await cluster({ fail: () => (n++ < 2 ? 3 : undefined) });
    await store.create(job('flaky', { backoffLimit: 0, podFailurePolicy: { rules: [{ action: 'Ignore', onExitCodes: { operator: 'In', values: [3] } }] } }));
    const j = await condition(store, 'flaky', 'Complete');
    expect(j.status).toMatchObject({ succeeded: 1, failed: 0 });
  });

  it('backoffLimitPerIndex fails only the index that used its retries', async () => {
    const store = await cluster({ fail: (p) => (p.metadata.annotations?.['batch.kubernetes.io/job-completion-index'] === '1' ? 1 : undefined) });
    await store.create(job('per-index', { completions: 3, parallelism: 3, completionMode: 'Indexed', backoffLimitPerIndex: 1 }));
    const j = await condition(store, 'per-index', 'Failed');
    expect(j.status).toMatchObject({ completedIndexes: '0,2', failedIndexes: '1', failed: 2 });
    expect(j.status?.conditions?.find((c) => c.type === 'Failed')?.reason).toBe('FailedIndexes');
  });

  it('activeDeadlineSeconds fails a Job that runs too long and removes its pods', async () => {
    const store = await cluster({ hold: () => true });
    await store.create(job('slow', { activeDeadlineSeconds: 1 }));
    const j = await condition(store, 'slow', 'Failed');
    expect(j.status?.conditions?.find((c) => c.type === 'Failed')).toMatchObject({ reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' });
    await until('pods gone', async () => ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).length === 0);
  });

  it('suspend removes active pods and resume starts them again', async () => {
    const store = await cluster({ hold: () => true });
    await store.create(job('paused', { parallelism: 2, completions: 4 }));
    await until('two active', async () => (await store.get('Job', 'default', 'paused')).status?.active === 2);
    await store.patch('Job', 'default', 'paused', { spec: { suspend: true } }, 'merge');
    const j = await condition(store, 'paused', 'Suspended');
    expect(j.status?.conditions?.find((c) => c.type === 'Suspended')?.reason).toBe('JobSuspended');
    await until('no pods', async () => (await store.list('Pod', { namespace: 'default' })).items.length === 0);
    expect((await store.get('Job', 'default', 'paused')).status?.failed ?? 0).toBe(0);
    await store.patch('Job', 'default', 'paused', { spec: { suspend: false } }, 'merge');
    await until('active again', async () => (await store.get('Job', 'default', 'paused')).status?.active === 2);
  });

  it('a successPolicy rule on succeededIndexes completes the Job early and deletes the indexes still running', async () => {
    // Only index 0 finishes; the others would run forever.
    const store = await cluster({ hold: (p) => p.metadata.annotations?.['batch.kubernetes.io/job-completion-index'] !== '0' });
    await store.create(job('leader', { completionMode: 'Indexed', completions: 4, parallelism: 4, successPolicy: { rules: [{ succeededIndexes: '0' }] } }));
    const j = await condition(store, 'leader', 'Complete');
    const met = j.status?.conditions?.find((c) => c.type === 'SuccessCriteriaMet');
    expect(met).toMatchObject({ status: 'True', reason: 'SuccessPolicy', message: 'Matched rules at index 0' });
    expect(j.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ reason: 'SuccessPolicy', message: 'Matched rules at index 0' });
    expect(j.status).toMatchObject({ succeeded: 1, failed: 0, completedIndexes: '0', active: 0 });
    await until('the other indexes gone', async () => ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).every((p) => p.status?.phase === 'Succeeded'));
  });

  it('a succeededCount rule counts succeeded indexes, and a later rule can be the one that matches', async () => {
    // Indexes 1 and 3 succeed, 0 and 2 stay running.
    const store = await cluster({ hold: (p) => ['0', '2'].includes(p.metadata.annotations?.['batch.kubernetes.io/job-completion-index'] ?? '') });
    await store.create(
      job('pair', {
        completionMode: 'Indexed',
        completions: 4,
        parallelism: 4,
        successPolicy: { rules: [{ succeededIndexes: '0-2', succeededCount: 3 }, { succeededIndexes: '1-3', succeededCount: 2 }] },
      }),
    );
    const j = await condition(store, 'pair', 'Complete');
    expect(j.status?.conditions?.find((c) => c.type === 'SuccessCriteriaMet')).toMatchObject({ reason: 'SuccessPolicy', message: 'Matched rules at index 1' });
    expect(j.status).toMatchObject({ succeeded: 2, failed: 0, completedIndexes: '1,3' });
  });
});

describe('matchSuccessPolicy', () => {
  it('tries the rules in order, as upstream', () => {
    const rules = (...r: { succeededIndexes?: string; succeededCount?: number }[]) => ({ rules: r });
    expect(matchSuccessPolicy(rules({ succeededIndexes: '0-2' }), 10, new Set([0, 1, 2, 4]))).toBe('Matched rules at index 0');
    expect(matchSuccessPolicy(rules({ succeededIndexes: '3' }), 10, new Set([0, 1, 2]))).toBeUndefined();
    expect(matchSuccessPolicy(rules({ succeededCount: 2 }), 10, new Set([0, 1]))).toBe('Matched rules at index 0');
    expect(matchSuccessPolicy(rules({ succeededCount: 3 }), 10, new Set([0, 1]))).toBeUndefined();
    expect(matchSuccessPolicy(rules({ succeededIndexes: '0-4', succeededCount: 2 }, { succeededCount: 1 }), 10, new Set([4, 7]))).toBe('Matched rules at index 1');
    expect(matchSuccessPolicy(rules({ succeededIndexes: '0-4', succeededCount: 2 }), 10, new Set([3, 4]))).toBe('Matched rules at index 0');
    expect(matchSuccessPolicy(rules({ succeededCount: 0 }), 10, new Set())).toBeUndefined();
    expect(matchSuccessPolicy(undefined, 10, new Set([1]))).toBeUndefined();
  });
});
