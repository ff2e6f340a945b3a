import { afterEach, describe, expect, it } from 'vitest';
import { type Job, MemoryStore, type Pod } from '@kemu/core';
import { ControllerManager } from './controller-manager.js';
import { formatIndexes, parseIndexes } from './job-indexes.js';
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
});
