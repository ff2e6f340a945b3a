import { afterEach, describe, expect, it } from 'vitest';
import { type CronJob, type EndpointSlice, type Job, type KubeObject, MemoryStore, type Pod, type ReplicaSet, type Service } from '@kemu/core';
import { ScaledClock } from './clock.js';
import { ControllerManager, enabledControllers } from './controller-manager.js';
import { fakeKubelet, type FakeKubeletOptions, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function cluster(controllers: string, kubelet: FakeKubeletOptions = {}, extra: Partial<ConstructorParameters<typeof ControllerManager>[0]> = {}) {
  const store = await MemoryStore.open();
  const stop = await fakeKubelet(store, kubelet);
  const cm = new ControllerManager({ store, controllers, leaderElect: false, ...extra });
  await cm.start();
  cleanup.push(() => store.close(), stop, () => cm.stop());
  return { store, cm };
}

const template = (labels: Record<string, string>, restartPolicy?: string) => ({
  metadata: { labels },
  spec: { containers: [{ name: 'c', image: 'busybox:1.36', ports: [{ name: 'http', containerPort: 8080 }] }], ...(restartPolicy ? { restartPolicy } : {}) },
});

describe('controller selection', () => {
  it('parses --controllers like kube-controller-manager', () => {
    expect(enabledControllers('*,-job').has('job')).toBe(false);
    expect(enabledControllers('*,-job').has('deployment')).toBe(true);
    expect([...enabledControllers('job,cronjob')].sort()).toEqual(['cronjob', 'job']);
    expect(() => enabledControllers('*,-bogus')).toThrow('"bogus" is not in the list of known controllers');
  });
});

describe('ReplicaSet controller', () => {
  it('creates, adopts orphans, scales down and reports status', async () => {
    const { store } = await cluster('replicaset');
    await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'orphan', namespace: 'default', labels: { app: 'x' } }, spec: template({}).spec } as Pod);
    await store.create({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'x', namespace: 'default' }, spec: { replicas: 3, selector: { matchLabels: { app: 'x' } }, template: template({ app: 'x' }) } } as ReplicaSet);
    const rs = await until('ready', async () => {
      const r = await store.get('ReplicaSet', 'default', 'x');
      return r.status?.readyReplicas === 3 && r.status.availableReplicas === 3 && r.status.fullyLabeledReplicas === 3 && r.status.observedGeneration === r.metadata.generation && r;
    });
    const pods = (await store.list('Pod', { namespace: 'default' })).items;
    expect(pods).toHaveLength(3);
    const orphan = pods.find((p) => p.metadata.name === 'orphan')!;
    expect(orphan.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ReplicaSet', name: 'x', uid: rs.metadata.uid, controller: true });
    await store.patch('ReplicaSet', 'default', 'x', { spec: { replicas: 1 } }, 'merge');
    await until('scaled down', async () => (await store.list('Pod', { namespace: 'default' })).items.length === 1 && (await store.get('ReplicaSet', 'default', 'x')).status?.replicas === 1);
    const events = (await store.list('Event', { namespace: 'default' })).items.map((e) => e.reason);
    expect(events.filter((r) => r === 'SuccessfulCreate')).toHaveLength(2);
    expect(events.filter((r) => r === 'SuccessfulDelete')).toHaveLength(2);
  });

  it('a ReplicationController keeps its pods too', async () => {
    const { store } = await cluster('replicationcontroller');
    await store.create({ apiVersion: 'v1', kind: 'ReplicationController', metadata: { name: 'rc', namespace: 'default' }, spec: { replicas: 2, template: template({ app: 'rc' }) } } as KubeObject);
    await until('ready', async () => (await store.get('ReplicationController', 'default', 'rc')).status?.readyReplicas === 2);
  });
});

describe('EndpointSlice and Endpoints controllers', () => {
  it('publishes ready pods with named target ports, splits slices at the limit, and follows readiness', async () => {
    const { store } = await cluster('replicaset,endpointslice,endpoint', { hold: (p) => p.metadata.labels?.hold === 'yes' });
    await store.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] } } as Service);
    // The ReplicaSet selects a subset of what the Service selects, so it leaves the hand-made pod alone.
    await store.create({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'web', namespace: 'default' }, spec: { replicas: 3, selector: { matchLabels: { app: 'web', rs: 'web' } }, template: template({ app: 'web', rs: 'web' }) } } as ReplicaSet);
    const slice = await until('slice', async () => {
      const s = (await store.list('EndpointSlice', { namespace: 'default' })).items as EndpointSlice[];
      return s.length === 1 && s[0].endpoints.length === 3 && s[0].endpoints.every((e) => e.conditions?.ready) && s[0];
    });
    expect(slice.metadata.labels).toMatchObject({ 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' });
    expect(slice.metadata.name).toMatch(/^web-/);
    expect(slice.addressType).toBe('IPv4');
    expect(slice.ports).toEqual([{ name: 'http', port: 8080, protocol: 'TCP' }]);
    expect(slice.endpoints[0].targetRef?.kind).toBe('Pod');
    const ep = await until('endpoints', async () => {
      const e = await store.get('Endpoints', 'default', 'web');
      return e.subsets?.[0]?.addresses?.length === 3 && e;
    });
    expect(ep.subsets![0].ports).toEqual([{ name: 'http', port: 8080, protocol: 'TCP' }]);
    // A not-ready pod appears as not ready (and in notReadyAddresses).
    await store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'late', namespace: 'default', labels: { app: 'other', hold: 'yes' } }, spec: template({}).spec } as Pod);
    const late = await store.get('Pod', 'default', 'late');
    late.status = { phase: 'Running', podIP: '10.9.9.9', podIPs: [{ ip: '10.9.9.9' }], conditions: [{ type: 'Ready', status: 'False' }] };
    await store.updateStatus(late);
    await store.patch('Pod', 'default', 'late', { metadata: { labels: { app: 'web' } } }, 'merge');
    await until('not ready endpoint', async () => {
      const e = await store.get('Endpoints', 'default', 'web');
      return e.subsets?.[0]?.notReadyAddresses?.[0]?.ip === '10.9.9.9';
    });
    const s2 = ((await store.list('EndpointSlice', { namespace: 'default' })).items as EndpointSlice[])[0];
    expect(s2.endpoints.find((e) => e.addresses[0] === '10.9.9.9')?.conditions).toEqual({ ready: false, serving: false, terminating: false });
    // Scaling to 0 empties the slice but keeps it.
    await store.patch('ReplicaSet', 'default', 'web', { spec: { replicas: 0 } }, 'merge');
    await store.delete('Pod', 'default', 'late');
    await until('empty', async () => {
      const s = (await store.list('EndpointSlice', { namespace: 'default' })).items as EndpointSlice[];
      return s.length === 1 && s[0].endpoints.length === 0;
    });
  });

  it('selects exactly the pods carrying every selector pair in the Service\'s namespace, and follows relabelling', async () => {
    const { store } = await cluster('endpointslice');
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } });
    await store.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { app: 'web', tier: 'fe' }, ports: [{ port: 80 }] } } as Service);
    const pod = (ns: string, name: string, labels: Record<string, string>) =>
      store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels }, spec: template(labels).spec } as Pod);
    await pod('default', 'both', { app: 'web', tier: 'fe' });
    await pod('default', 'app-only', { app: 'web' });
    await pod('default', 'tier-only', { tier: 'fe', app: 'db' });
    await pod('other', 'elsewhere', { app: 'web', tier: 'fe' });
    const names = async () =>
      ((await store.list('EndpointSlice', { namespace: 'default' })).items as EndpointSlice[]).flatMap((s) => s.endpoints.map((e) => e.targetRef?.name)).sort();
    await until('the one selected pod', async () => JSON.stringify(await names()) === JSON.stringify(['both']));
    const p = (await store.get('Pod', 'default', 'app-only')) as Pod;
    await store.update({ ...p, metadata: { ...p.metadata, labels: { app: 'web', tier: 'fe' } } });
    await until('the relabelled pod joins', async () => JSON.stringify(await names()) === JSON.stringify(['app-only', 'both']));
    const q = (await store.get('Pod', 'default', 'both')) as Pod;
    await store.update({ ...q, metadata: { ...q.metadata, labels: { app: 'web' } } });
    await until('the relabelled pod leaves', async () => JSON.stringify(await names()) === JSON.stringify(['app-only']));
    expect(await names()).toEqual(['app-only']);
  });

  it('puts at most maxEndpointsPerSlice endpoints in a slice', async () => {
    const store = await MemoryStore.open();
    const stop = await fakeKubelet(store);
    const { ControllerContext } = await import('./controller-context.js');
    const { EndpointSliceController } = await import('./endpointslice-controller.js');
    const { ReplicaSetController } = await import('./replica-set-controller.js');
    const ctx = new ControllerContext({ store });
    const esc = new EndpointSliceController(ctx, { maxEndpointsPerSlice: 2 });
    const rsc = new ReplicaSetController(ctx);
    await esc.start();
    await rsc.start();
    cleanup.push(() => store.close(), stop, () => esc.stop(), () => rsc.stop(), () => ctx.informers.stop());
    await store.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } } as Service);
    await store.create({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name: 'web', namespace: 'default' }, spec: { replicas: 5, selector: { matchLabels: { app: 'web' } }, template: template({ app: 'web' }) } } as ReplicaSet);
    await until('three slices', async () => {
      const s = (await store.list('EndpointSlice', { namespace: 'default' })).items as EndpointSlice[];
      return s.length === 3 && s.reduce((n, x) => n + x.endpoints.length, 0) === 5 && s.every((x) => x.endpoints.length <= 2);
    });
  });
});

describe('Job controller', () => {
  it('completes an Indexed Job of 5 with parallelism 2 despite one injected failure', async () => {
    let failedOnce = false;
    const { store } = await cluster('job', {
      fail: (p) => {
        if (!failedOnce && p.metadata.annotations?.['batch.kubernetes.io/job-completion-index'] === '2') {
          failedOnce = true;
          return 1;
        }
        return undefined;
      },
    }, { job: { backoffBaseMs: 20 } });
    const maxActive = { n: 0 };
    const w = await store.watch('Pod', { namespace: 'default' });
    const live = new Set<string>();
    const watching = (async () => {
      for await (const ev of w) {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') continue;
        const p = ev.object as Pod;
        const running = ev.type !== 'DELETED' && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
        if (running) live.add(p.metadata.name!);
        else live.delete(p.metadata.name!);
        maxActive.n = Math.max(maxActive.n, live.size);
      }
    })();
    await store.create({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'idx', namespace: 'default' },
      spec: { completions: 5, parallelism: 2, completionMode: 'Indexed', backoffLimit: 2, template: template({}, 'Never') },
    } as Job);
    const job = await until('complete', async () => {
      const j = await store.get('Job', 'default', 'idx');
      return j.status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True') && j;
    });
    w.stop();
    await watching;
    expect(job.status).toMatchObject({ succeeded: 5, failed: 1, completedIndexes: '0-4', active: 0 });
    expect(job.status?.conditions?.map((c) => c.type)).toEqual(['SuccessCriteriaMet', 'Complete']);
    expect(maxActive.n).toBeLessThanOrEqual(2);
    const pods = (await store.list('Pod', { namespace: 'default' })).items;
    expect(pods.every((p) => !p.metadata.finalizers?.includes('batch.kubernetes.io/job-tracking'))).toBe(true);
    const idx2 = pods.filter((p) => p.metadata.annotations?.['batch.kubernetes.io/job-completion-index'] === '2');
    expect(idx2).toHaveLength(2);
    expect(idx2.every((p) => p.spec.hostname === 'idx-2')).toBe(true);
    expect(idx2[0].spec.containers[0].env).toContainEqual({
      name: 'JOB_COMPLETION_INDEX',
      valueFrom: { fieldRef: { fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']" } },
    });
  });

  it('fails with BackoffLimitExceeded once failures pass backoffLimit', async () => {
    const { store } = await cluster('job', { fail: () => 1 }, { job: { backoffBaseMs: 10 } });
    await store.create({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'bad', namespace: 'default' }, spec: { backoffLimit: 1, template: template({}, 'Never') } } as Job);
    const j = await until('failed', async () => {
      const x = await store.get('Job', 'default', 'bad');
      return x.status?.conditions?.find((c) => c.type === 'Failed') && x;
    });
    expect(j.status?.failed).toBe(2);
    expect(j.status?.conditions?.find((c) => c.type === 'Failed')).toMatchObject({ status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' });
  });

  it('TTL-after-finished deletes a finished Job', async () => {
    const { store } = await cluster('job,ttl-after-finished');
    await store.create({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'once', namespace: 'default' }, spec: { ttlSecondsAfterFinished: 0, template: template({}, 'Never') } } as Job);
    await until('deleted', async () => !(await store.list('Job', { namespace: 'default' })).items.length);
  });
});

describe('CronJob controller', () => {
  it('creates exactly one Job per minute with Forbid under a sped-up clock', async () => {
    const clock = new ScaledClock(new Date(), 600);
    // Jobs never finish: Forbid must skip while one is active, so only the first minute starts a Job...
    const { store } = await cluster('cronjob', { hold: () => true }, { clock });
    await store.create({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick', namespace: 'default' },
      spec: { schedule: '*/1 * * * *', concurrencyPolicy: 'Forbid', jobTemplate: { spec: { template: template({}, 'OnFailure') } } },
    } as CronJob);
    await until('first job', async () => (await store.list('Job', { namespace: 'default' })).items.length >= 1, 10_000);
    await new Promise((r) => setTimeout(r, 400)); // four more minutes of cluster time
    const jobs = (await store.list('Job', { namespace: 'default' })).items as Job[];
    expect(jobs).toHaveLength(1);
    // ...and once it completes, the next minute starts the next one, named by its scheduled minute.
    const j = await store.get('Job', 'default', jobs[0].metadata.name!);
    j.status = { conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: new Date().toISOString().slice(0, 19) + 'Z' }], completionTime: new Date().toISOString().slice(0, 19) + 'Z', succeeded: 1 };
    await store.updateStatus(j);
    await until('second job', async () => (await store.list('Job', { namespace: 'default' })).items.length === 2, 10_000);
    const names = ((await store.list('Job', { namespace: 'default' })).items as Job[]).map((x) => x.metadata.name!);
    for (const n of names) {
      const minutes = Number(n.slice('tick-'.length));
      expect(Number.isInteger(minutes)).toBe(true);
    }
    const cj = await store.get('CronJob', 'default', 'tick');
    expect(cj.status?.active).toHaveLength(1);
    expect(cj.status?.lastScheduleTime).toBeDefined();
  });
});
