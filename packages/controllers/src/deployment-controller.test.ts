import { afterEach, describe, expect, it } from 'vitest';
import { type Deployment, MemoryStore, type Pod, type ReplicaSet } from '@kemu/core';
import { ControllerManager } from './controller-manager.js';
import { fakeKubelet, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function cluster(opts: { hold?: (p: Pod) => boolean; readyAfterMs?: number } = {}) {
  const store = await MemoryStore.open();
  const stopKubelet = await fakeKubelet(store, opts);
  const cm = new ControllerManager({ store, controllers: 'deployment,replicaset', leaderElect: false });
  await cm.start();
  cleanup.push(() => store.close(), stopKubelet, () => cm.stop());
  return store;
}

const deployment = (image: string, strategy: Deployment['spec']['strategy'] = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } }): Deployment => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'default' },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: 'web' } },
    template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'nginx', image }] } },
    strategy,
  },
});

const complete = (d: Deployment | undefined) =>
  d &&
  d.status?.observedGeneration === d.metadata.generation &&
  d.status?.updatedReplicas === 3 &&
  d.status?.replicas === 3 &&
  d.status?.availableReplicas === 3 &&
  d.status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'NewReplicaSetAvailable';

describe('Deployment controller', () => {
  it('rolls out a ReplicaSet with the pod-template-hash, the revision and the status kubectl reads', async () => {
    const store = await cluster();
    await store.create(deployment('nginx:1.26'));
    const d = await until('available', async () => {
      const x = await store.get('Deployment', 'default', 'web');
      return complete(x) && x;
    });
    expect(d.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Available', 'True', 'MinimumReplicasAvailable'],
      ['Progressing', 'True', 'NewReplicaSetAvailable'],
    ]);
    expect(d.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('1');
    const sets = (await store.list('ReplicaSet', { namespace: 'default' })).items;
    expect(sets).toHaveLength(1);
    const hash = sets[0].metadata.labels?.['pod-template-hash'];
    expect(sets[0].metadata.name).toBe(`web-${hash}`);
    expect(sets[0].spec.selector.matchLabels).toEqual({ app: 'web', 'pod-template-hash': hash });
    expect(sets[0].metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Deployment', name: 'web', controller: true, blockOwnerDeletion: true });
    const pods = (await store.list('Pod', { namespace: 'default' })).items;
    expect(pods).toHaveLength(3);
    expect(pods.every((p) => p.metadata.name!.startsWith(`web-${hash}-`) && p.metadata.labels?.['pod-template-hash'] === hash)).toBe(true);
    const events = (await store.list('Event', { namespace: 'default' })).items.map((e) => `${e.reason}: ${e.message}`);
    expect(events).toContain(`ScalingReplicaSet: Scaled up replica set web-${hash} from 0 to 3`);
  });

  it('with maxSurge 1 and maxUnavailable 0 never drops below 3 available nor exceeds 4 pods, then undo restores revision 1 as 3', async () => {
    const store = await cluster({ readyAfterMs: 20 });
    await store.create(deployment('nginx:1.26'));
    await until('first rollout', async () => complete(await store.get('Deployment', 'default', 'web')));
    // Watch every ReplicaSet change during the rollout.
    let minAvailable = Infinity;
    let maxPods = 0;
    const w = await store.watch('ReplicaSet', { namespace: 'default' });
    const seen = new Map<string, ReplicaSet>();
    const watching = (async () => {
      for await (const ev of w) {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') continue;
        const rs = ev.object as ReplicaSet;
        if (ev.type === 'DELETED') seen.delete(rs.metadata.name!);
        else seen.set(rs.metadata.name!, rs);
        const all = [...seen.values()];
        minAvailable = Math.min(minAvailable, all.reduce((n, x) => n + (x.status?.availableReplicas ?? 0), 0));
        maxPods = Math.max(maxPods, all.reduce((n, x) => n + (x.spec.replicas ?? 0), 0));
      }
    })();
    const cur = await store.get('Deployment', 'default', 'web');
    cur.spec.template.spec.containers[0].image = 'nginx:1.27';
    await store.update(cur);
    const d2 = await until('second rollout', async () => {
      const x = await store.get('Deployment', 'default', 'web');
      return complete(x) && x.metadata.annotations?.['deployment.kubernetes.io/revision'] === '2' && x;
    });
    w.stop();
    await watching;
    expect(minAvailable).toBeGreaterThanOrEqual(3);
    expect(maxPods).toBeLessThanOrEqual(4);
    const sets = (await store.list('ReplicaSet', { namespace: 'default' })).items;
    expect(sets.map((s) => [s.metadata.annotations?.['deployment.kubernetes.io/revision'], s.spec.replicas]).sort()).toEqual([
      ['1', 0],
      ['2', 3],
    ]);
    // rollout undo: the template of revision 1 comes back; its ReplicaSet becomes revision 3.
    const rev1 = sets.find((s) => s.metadata.annotations?.['deployment.kubernetes.io/revision'] === '1')!;
    const back = await store.get('Deployment', 'default', 'web');
    const { 'pod-template-hash': _h, ...labels } = rev1.spec.template!.metadata!.labels!;
    back.spec.template = { ...rev1.spec.template!, metadata: { ...rev1.spec.template!.metadata, labels } };
    await store.update(back);
    await until('rollback', async () => {
      const x = await store.get('Deployment', 'default', 'web');
      return complete(x) && x.metadata.annotations?.['deployment.kubernetes.io/revision'] === '3';
    });
    const after = await store.get('ReplicaSet', 'default', rev1.metadata.name!);
    expect(after.metadata.annotations?.['deployment.kubernetes.io/revision']).toBe('3');
    expect(after.metadata.annotations?.['deployment.kubernetes.io/revision-history']).toBe('1');
    expect(after.spec.replicas).toBe(3);
    expect(d2.status?.updatedReplicas).toBe(3);
  });

  it('Recreate scales the old ReplicaSet to zero before the new one starts', async () => {
    const store = await cluster();
    await store.create(deployment('nginx:1.26', { type: 'Recreate' }));
    await until('first rollout', async () => complete(await store.get('Deployment', 'default', 'web')));
    const w = await store.watch('Pod', { namespace: 'default' });
    const live = new Map<string, string>();
    let overlap = false;
    const watching = (async () => {
      for await (const ev of w) {
        if (ev.type === 'BOOKMARK' || ev.type === 'ERROR') continue;
        const p = ev.object as Pod;
        if (ev.type === 'DELETED') live.delete(p.metadata.name!);
        else live.set(p.metadata.name!, p.metadata.labels?.['pod-template-hash'] ?? '');
        if (new Set(live.values()).size > 1) overlap = true;
      }
    })();
    const cur = await store.get('Deployment', 'default', 'web');
    cur.spec.template.spec.containers[0].image = 'nginx:1.27';
    await store.update(cur);
    await until('recreated', async () => {
      const x = await store.get('Deployment', 'default', 'web');
      return complete(x) && x.metadata.annotations?.['deployment.kubernetes.io/revision'] === '2';
    });
    w.stop();
    await watching;
    expect(overlap).toBe(false);
  });

  it('reports ProgressDeadlineExceeded when pods never become ready', async () => {
    const store = await cluster({ hold: () => true });
    const d = deployment('nginx:1.26');
    d.spec.progressDeadlineSeconds = 1;
    await store.create(d);
    const x = await until('deadline', async () => {
      const y = await store.get('Deployment', 'default', 'web');
      return y.status?.conditions?.find((c) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded') && y;
    }, 10_000);
    const prog = x.status!.conditions!.find((c) => c.type === 'Progressing')!;
    expect(prog.status).toBe('False');
    expect(prog.message).toMatch(/^ReplicaSet "web-[a-z0-9]+" has timed out progressing\.$/);
    expect(x.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('False');
  });

  it('paused deployments scale but do not roll out', async () => {
    const store = await cluster();
    await store.create(deployment('nginx:1.26'));
    await until('first rollout', async () => complete(await store.get('Deployment', 'default', 'web')));
    await store.patch('Deployment', 'default', 'web', { spec: { paused: true, replicas: 5, template: { spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }] } } } }, 'strategic');
    await until('scaled while paused', async () => {
      const sets = (await store.list('ReplicaSet', { namespace: 'default' })).items;
      return sets.length === 1 && sets[0].spec.replicas === 5;
    });
    const x = await until('paused condition', async () => {
      const y = await store.get('Deployment', 'default', 'web');
      return y.status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'DeploymentPaused' && y;
    });
    expect(x.status?.conditions?.find((c) => c.type === 'Progressing')?.status).toBe('Unknown');
    await store.patch('Deployment', 'default', 'web', { spec: { paused: false } }, 'merge');
    await until('resumed rollout', async () => (await store.list('ReplicaSet', { namespace: 'default' })).items.length === 2);
  });
});

describe('Deployment scaling during a rollout', () => {
  it('shares a new replica count between the old and new ReplicaSets in proportion, as upstream', async () => {
    // New pods never become ready, so the rollout stays half-way while the Deployment is scaled.
    const store = await cluster({ hold: (p) => p.spec.containers[0].image === 'nginx:1.27' });
    const d = deployment('nginx:1.26', { type: 'RollingUpdate', rollingUpdate: { maxSurge: 3, maxUnavailable: 0 } });
    d.spec.replicas = 10;
    await store.create(d);
    await until('first rollout', async () => {
      const x = await store.get('Deployment', 'default', 'web');
      return x.status?.availableReplicas === 10 && x.status.updatedReplicas === 10;
    });
    await store.patch('Deployment', 'default', 'web', { spec: { template: { spec: { containers: [{ name: 'nginx', image: 'nginx:1.27' }] } } } }, 'strategic');
    const sizes = async () => {
      const sets = (await store.list('ReplicaSet', { namespace: 'default' })).items as ReplicaSet[];
      return Object.fromEntries(sets.map((s) => [s.spec.template!.spec.containers[0].image, s.spec.replicas]));
    };
    await until('surged', async () => JSON.stringify(await sizes()) === JSON.stringify({ 'nginx:1.26': 10, 'nginx:1.27': 3 }) || JSON.stringify(await sizes()) === JSON.stringify({ 'nginx:1.27': 3, 'nginx:1.26': 10 }));
    // 20 replicas + 3 surge = 23 allowed, 13 running: 10 more, shared 10:3 (old 8, new 2).
    await store.patch('Deployment', 'default', 'web', { spec: { replicas: 20 } }, 'merge');
    await until('scaled proportionally', async () => {
      const s = await sizes();
      return s['nginx:1.26'] === 18 && s['nginx:1.27'] === 5;
    });
  });
});
