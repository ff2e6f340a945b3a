import { describe, expect, it } from 'vitest';
import { applyDefaults, InvalidError, type KubeObject, MemoryStore, parseSchedule, updateErrors, validationErrors } from './index.js';

const tmpl = (labels: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  metadata: { labels },
  spec: { containers: [{ name: 'c', image: 'nginx:1.27' }], ...extra },
});
const obj = (kind: string, apiVersion: string, spec: Record<string, unknown>, name = 'x'): KubeObject => ({ apiVersion, kind, metadata: { name, namespace: 'default' }, spec });
const errs = (o: KubeObject) => {
  applyDefaults(o);
  return validationErrors(o).map((c) => `${c.field}: ${c.message}`);
};

describe('Deployment', () => {
  it('defaults as the API server does', () => {
    const d = obj('Deployment', 'apps/v1', { selector: { matchLabels: { app: 'web' } }, template: tmpl({ app: 'web' }) });
    applyDefaults(d);
    expect(d.spec).toMatchObject({
      replicas: 1,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      template: { spec: { restartPolicy: 'Always', dnsPolicy: 'ClusterFirst' } },
    });
    // Templates get pod-spec defaults, not the pod admission tolerations.
    expect(d.spec.template.spec.tolerations).toBeUndefined();
    expect(validationErrors(d)).toEqual([]);
  });

  it('reports selector mismatch, negative replicas and bad surge with field paths', () => {
    expect(
      errs(
        obj('Deployment', 'apps/v1', {
          replicas: -1,
          selector: { matchLabels: { app: 'web' } },
          template: tmpl({ app: 'api' }),
          strategy: { rollingUpdate: { maxSurge: 0, maxUnavailable: '120%' } },
        }),
      ),
    ).toEqual([
      'spec.replicas: Invalid value: -1: must be greater than or equal to 0',
      'spec.template.metadata.labels: Invalid value: {"app":"api"}: `selector` does not match template `labels`',
      'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
    ]);
    expect(errs(obj('Deployment', 'apps/v1', { template: tmpl({ app: 'a' }) }))).toEqual(['spec.selector: Required value']);
    expect(errs(obj('Deployment', 'apps/v1', { selector: {}, template: tmpl({ app: 'a' }) }))).toEqual([
      'spec.selector: Invalid value: {}: empty selector is invalid for deployment',
    ]);
    expect(errs(obj('Deployment', 'apps/v1', { selector: { matchLabels: { a: 'b' } }, template: tmpl({ a: 'b' }, { restartPolicy: 'Never' }) }))).toEqual([
      'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]);
    expect(errs(obj('Deployment', 'apps/v1', { selector: { matchLabels: { a: 'b' } }, template: { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c' }] } } }))).toEqual([
      'spec.template.spec.containers[0].image: Required value',
    ]);
  });

  it('keeps the selector immutable and refuses through the store with 422', async () => {
    const store = await MemoryStore.open();
    try {
      await store.create(obj('Deployment', 'apps/v1', { selector: { matchLabels: { app: 'web' } }, template: tmpl({ app: 'web' }) }, 'web'));
      const cur = await store.get('Deployment', 'default', 'web');
      cur.spec.selector = { matchLabels: { app: 'web2' } };
      cur.spec.template.metadata!.labels = { app: 'web2' };
      const err = await store.update(cur).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidError);
      expect(err.message).toBe('Deployment.apps "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web2"}}: field is immutable');
      expect(err.code).toBe(422);
      expect(err.details).toMatchObject({ name: 'web', group: 'apps', kind: 'Deployment' });
    } finally {
      await store.close();
    }
  });
});

describe('StatefulSet', () => {
  it('forbids changing volumeClaimTemplates', () => {
    const pvc = (size: string) => ({ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } } });
    const a = obj('StatefulSet', 'apps/v1', { serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: tmpl({ app: 'db' }), volumeClaimTemplates: [pvc('1Gi')] });
    const b = obj('StatefulSet', 'apps/v1', { serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: tmpl({ app: 'db' }), volumeClaimTemplates: [pvc('2Gi')] });
    expect(errs(a)).toEqual([]);
    // Containers may mount a claim template by name; any other unknown volume is still refused.
    a.spec.template.spec.containers[0].volumeMounts = [{ name: 'data', mountPath: '/data' }];
    expect(validationErrors(a)).toEqual([]);
    a.spec.template.spec.containers[0].volumeMounts = [{ name: 'other', mountPath: '/data' }];
    expect(validationErrors(a).map((c) => c.field)).toEqual(['spec.template.spec.containers[0].volumeMounts[0].name']);
    delete a.spec.template.spec.containers[0].volumeMounts;
    applyDefaults(b);
    expect(updateErrors(b, a).map((c) => `${c.field}: ${c.type}`)).toEqual(['spec: FieldValueForbidden']);
    expect(a.spec.persistentVolumeClaimRetentionPolicy).toEqual({ whenDeleted: 'Retain', whenScaled: 'Retain' });
    expect(a.spec.podManagementPolicy).toBe('OrderedReady');
  });
});

describe('Job and CronJob', () => {
  it('names the kind with its group in the error, as kube-apiserver does (the core group has none)', async () => {
    const store = await MemoryStore.open();
    try {
      const job = await store.create(obj('Job', 'batch/v1', { parallelism: -1, template: tmpl({}, { restartPolicy: 'Never' }) }, 'x')).catch((e) => e);
      expect(job).toBeInstanceOf(InvalidError);
      expect(job.message).toBe('Job.batch "x" is invalid: spec.parallelism: Invalid value: -1: must be greater than or equal to 0');
      expect(job.details).toMatchObject({ name: 'x', group: 'batch', kind: 'Job' });
      const pod = await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x', namespace: 'default' }, spec: { containers: [] } } as KubeObject).catch((e) => e);
      expect(pod.message).toMatch(/^Pod "x" is invalid: /);
      expect(pod.details).toMatchObject({ name: 'x', group: '', kind: 'Pod' });
    } finally {
      await store.close();
    }
  });

  it('validates a successPolicy as kube-apiserver does, and keeps it immutable', async () => {
    const indexed = (successPolicy: unknown, extra: Record<string, unknown> = {}) =>
      obj('Job', 'batch/v1', { completionMode: 'Indexed', completions: 5, parallelism: 5, successPolicy, template: tmpl({}, { restartPolicy: 'Never' }), ...extra });
    expect(errs(indexed({ rules: [{ succeededIndexes: '0,2-4', succeededCount: 2 }, { succeededCount: 5 }] }))).toEqual([]);
    expect(errs(obj('Job', 'batch/v1', { completions: 5, successPolicy: { rules: [{ succeededCount: 1 }] }, template: tmpl({}, { restartPolicy: 'Never' }) }))).toEqual([
      'spec.successPolicy: Invalid value: {"rules":[{"succeededCount":1}]}: requires indexed completion mode',
    ]);
    expect(errs(indexed({ rules: [] }))).toEqual(['spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified']);
    expect(errs(indexed({ rules: Array(21).fill({ succeededCount: 1 }) }))).toEqual(['spec.successPolicy.rules: Too many: 21: must have at most 20 items']);
    expect(errs(indexed({ rules: [{}] }))).toEqual(['spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified']);
    expect(errs(indexed({ rules: [{ succeededIndexes: '0-5' }] }))).toEqual([
      'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "0-5": error parsing succeededIndexes: too large index: "5"',
    ]);
    expect(errs(indexed({ rules: [{ succeededIndexes: '3,1' }] }))).toEqual([
      'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "3,1": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1',
    ]);
    expect(errs(indexed({ rules: [{ succeededIndexes: 'a' }] }))).toEqual([
      'spec.successPolicy.rules[0].succeededIndexes: Invalid value: "a": error parsing succeededIndexes: cannot convert string to integer for index: "a"',
    ]);
    expect(errs(indexed({ rules: [{ succeededIndexes: '1-2-3' }] }))).toEqual([
      `spec.successPolicy.rules[0].succeededIndexes: Invalid value: "1-2-3": error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`,
    ]);
    expect(errs(indexed({ rules: [{ succeededCount: 6 }] }))).toEqual([
      'spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)',
    ]);
    expect(errs(indexed({ rules: [{ succeededIndexes: '0-1', succeededCount: 3 }] }))).toEqual([
      'spec.successPolicy.rules[0].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)',
    ]);
    expect(errs(indexed({ rules: [{ succeededCount: -1 }] }))).toEqual(['spec.successPolicy.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0']);
    const store = await MemoryStore.open();
    try {
      const created = await store.create({ ...indexed({ rules: [{ succeededCount: 1 }] }, { suspend: true }), metadata: { name: 'sp', namespace: 'default' } });
      created.spec.successPolicy = { rules: [{ succeededCount: 2 }] };
      await expect(store.update(created)).rejects.toThrow('Job.batch "sp" is invalid: spec.successPolicy: Invalid value: {"rules":[{"succeededCount":2}]}: field is immutable');
    } finally {
      await store.close();
    }
  });

  it('requires OnFailure or Never and generates the selector from the uid', async () => {
    expect(errs(obj('Job', 'batch/v1', { template: tmpl({}) }))).toEqual([
      'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"',
    ]);
    const store = await MemoryStore.open();
    try {
      const job = await store.create(obj('Job', 'batch/v1', { template: tmpl({}, { restartPolicy: 'Never' }) }, 'pi'));
      expect(job.spec.selector).toEqual({ matchLabels: { 'batch.kubernetes.io/controller-uid': job.metadata.uid } });
      expect(job.spec.template.metadata.labels['batch.kubernetes.io/job-name']).toBe('pi');
      expect(job.spec).toMatchObject({ completions: 1, parallelism: 1, backoffLimit: 6, completionMode: 'NonIndexed', suspend: false });
    } finally {
      await store.close();
    }
    expect(errs(obj('Job', 'batch/v1', { completionMode: 'Indexed', parallelism: 2, template: tmpl({}, { restartPolicy: 'Never' }) }))).toEqual([
      'spec.completions: Required value: when completion mode is Indexed',
    ]);
  });

  it('rejects invalid cron expressions and time zones as the API server does', () => {
    const cj = (schedule: string, timeZone?: string) =>
      obj('CronJob', 'batch/v1', { schedule, timeZone, jobTemplate: { spec: { template: tmpl({}, { restartPolicy: 'OnFailure' }) } } }, 'hello');
    expect(errs(cj('*/1 * * * *'))).toEqual([]);
    expect(errs(cj('@hourly'))).toEqual([]);
    expect(errs(cj('* * * *'))).toEqual(['spec.schedule: Invalid value: "* * * *": expected exactly 5 fields, found 4: [* * * *]']);
    expect(errs(cj('61 * * * *'))[0]).toMatch(/^spec\.schedule: Invalid value: "61 \* \* \* \*": /);
    expect(errs(cj('TZ=UTC 0 * * * *'))).toEqual(['spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead']);
    expect(errs(cj('0 * * * *', 'Mars/Olympus'))).toEqual(['spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus']);
    const c = cj('0 * * * *');
    applyDefaults(c);
    expect(c.spec).toMatchObject({ concurrencyPolicy: 'Allow', suspend: false, successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 1 });
  });

  it('evaluates schedules in a time zone', () => {
    const s = parseSchedule('30 9 * * *', 'Europe/Berlin');
    expect(s.next(new Date('2026-01-15T00:00:00Z')).toISOString()).toBe('2026-01-15T08:30:00.000Z');
    expect(parseSchedule('@every 90s').next(new Date('2026-01-15T00:00:00Z')).toISOString()).toBe('2026-01-15T00:01:30.000Z');
  });
});
