import { afterEach, describe, expect, it } from 'vitest';
import { type DaemonSet, MemoryStore, type Node, type Pod } from '@kemu/core';
import { ControllerContext } from './controller-context.js';
import { ControllerManager } from './controller-manager.js';
import { DaemonSetController, targetNode } from './daemonset-controller.js';
import { fakeKubelet, until } from './test-helpers.js';

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const node = (name: string, taints?: NonNullable<Node['spec']>['taints']): Node => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } }, spec: taints ? { taints } : {} }) as Node;

describe('DaemonSet controller', () => {
  it('runs one pod per eligible node, skips a tainted one, covers nodes added later and rolls out updates', async () => {
    const store = await MemoryStore.open();
    const stop = await fakeKubelet(store);
    const cm = new ControllerManager({ store, controllers: 'daemonset', leaderElect: false });
    await cm.start();
    cleanup.push(() => store.close(), stop, () => cm.stop());
    await store.create(node('n1'));
    await store.create(node('n2'));
    await store.create(node('n3', [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]));
    // Taints the controller tolerates on its own do not keep a daemon pod away.
    await store.create(node('n4', [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]));
    await store.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: 'default' },
      spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'a', image: 'agent:1' }] } } },
    } as DaemonSet);
    const nodesOf = async () => ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).filter((p) => !p.metadata.deletionTimestamp).map(targetNode).sort();
    await until('three daemon pods', async () => (await nodesOf()).join() === 'n1,n2,n4');
    const ds = await until('status', async () => {
      const d = await store.get('DaemonSet', 'default', 'agent');
      return d.status?.numberReady === 3 && d;
    });
    expect(ds.status).toMatchObject({ desiredNumberScheduled: 3, currentNumberScheduled: 3, numberMisscheduled: 0, updatedNumberScheduled: 3, numberAvailable: 3 });
    const pod = ((await store.list('Pod', { namespace: 'default' })).items as Pod[])[0];
    expect(pod.spec.tolerations).toContainEqual({ key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' });
    expect(pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0].matchFields?.[0]).toMatchObject({ key: 'metadata.name', operator: 'In' });
    await store.create(node('n5'));
    await until('new node covered', async () => (await nodesOf()).join() === 'n1,n2,n4,n5');
    // A NoSchedule taint added later keeps the running pod (misscheduled); NoExecute evicts it.
    await store.patch('Node', undefined, 'n5', { spec: { taints: [{ key: 'dedicated', value: 'x', effect: 'NoSchedule' }] } }, 'merge');
    await until('misscheduled', async () => (await store.get('DaemonSet', 'default', 'agent')).status?.numberMisscheduled === 1);
    expect(await nodesOf()).toEqual(['n1', 'n2', 'n4', 'n5']);
    await store.patch('Node', undefined, 'n5', { spec: { taints: [{ key: 'dedicated', value: 'x', effect: 'NoExecute' }] } }, 'merge');
    await until('evicted', async () => (await nodesOf()).join() === 'n1,n2,n4');
    await store.patch('Node', undefined, 'n5', { spec: { taints: null } }, 'merge');
    await until('back', async () => (await nodesOf()).join() === 'n1,n2,n4,n5');
    await store.patch('DaemonSet', 'default', 'agent', { spec: { template: { spec: { containers: [{ name: 'a', image: 'agent:2' }] } } } }, 'strategic');
    await until('rolled out', async () => {
      const d = await store.get('DaemonSet', 'default', 'agent');
      const pods = ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).filter((p) => !p.metadata.deletionTimestamp);
      return d.status?.updatedNumberScheduled === 4 && d.status.numberAvailable === 4 && pods.length === 4 && pods.every((p) => p.spec.containers[0].image === 'agent:2');
    });
    const revisions = (await store.list('ControllerRevision', { namespace: 'default' })).items.map((r) => r.revision).sort();
    expect(revisions).toEqual([1, 2]);
  });

  it('with maxSurge starts the new pod beside the old one and deletes the old once the new is available', async () => {
    const store = await MemoryStore.open();
    // New pods take a while to turn ready, so the surge is visible: old and new side by side on a node.
    const stop = await fakeKubelet(store, { readyAfterMs: 60 });
    const cm = new ControllerManager({ store, controllers: 'daemonset', leaderElect: false });
    await cm.start();
    cleanup.push(() => store.close(), stop, () => cm.stop());
    for (const n of ['n1', 'n2', 'n3']) await store.create(node(n));
    await store.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: 'default' },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'a', image: 'agent:1' }] } },
      },
    } as DaemonSet);
    const live = async () => ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).filter((p) => !p.metadata.deletionTimestamp);
    const ready = (p: Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    await until('three ready daemon pods', async () => (await live()).filter(ready).length === 3);

    // Every change to a pod is checked: no node is ever without a ready pod, at most one node (maxSurge)
    // holds two pods, and an old pod goes only once its node's new pod is ready.
    const w = await store.watch('Pod', { namespace: 'default' });
    const state = new Map<string, Pod>();
    for (const p of await live()) state.set(p.metadata.uid!, p);
    const violations: string[] = [];
    let maxSurged = 0;
    const watching = (async () => {
      for await (const ev of w) {
        const p = ev.object as Pod;
        const was = state.get(p.metadata.uid!);
        if (ev.type === 'DELETED' || p.metadata.deletionTimestamp) {
          state.delete(p.metadata.uid!);
          if (was?.spec.containers[0].image === 'agent:1') {
            const fresh = [...state.values()].find((x) => targetNode(x) === targetNode(p) && x.spec.containers[0].image === 'agent:2');
            if (!fresh || !ready(fresh)) violations.push(`old pod on ${targetNode(p)} went before its replacement was ready`);
          }
        } else state.set(p.metadata.uid!, p);
        const byNode = new Map<string, Pod[]>();
        for (const x of state.values()) byNode.set(targetNode(x)!, [...(byNode.get(targetNode(x)!) ?? []), x]);
        for (const n of ['n1', 'n2', 'n3']) if (!(byNode.get(n) ?? []).some(ready)) violations.push(`${n} had no ready pod`);
        maxSurged = Math.max(maxSurged, [...byNode.values()].filter((ps) => ps.length > 1).length);
      }
    })();
    await store.patch('DaemonSet', 'default', 'agent', { spec: { template: { spec: { containers: [{ name: 'a', image: 'agent:2' }] } } } }, 'strategic');
    await until('rolled out', async () => {
      const d = await store.get('DaemonSet', 'default', 'agent');
      const pods = await live();
      return d.status?.updatedNumberScheduled === 3 && d.status.numberAvailable === 3 && pods.length === 3 && pods.every((p) => p.spec.containers[0].image === 'agent:2' && ready(p));
    });
    w.stop();
    await watching;
    expect(violations).toEqual([]);
    expect(maxSurged).toBe(1);
    expect((await live()).map(targetNode).sort()).toEqual(['n1', 'n2', 'n3']);
  });

  it('refuses rolling-update budgets as kube-apiserver does: exactly one of maxSurge and maxUnavailable non-zero', async () => {
    const store = await MemoryStore.open();
    cleanup.push(() => store.close());
    const ds = (name: string, rollingUpdate: object) =>
      ({
        apiVersion: 'apps/v1',
        kind: 'DaemonSet',
        metadata: { name, namespace: 'default' },
        spec: {
          selector: { matchLabels: { app: 'a' } },
          updateStrategy: { type: 'RollingUpdate', rollingUpdate },
          template: { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'a', image: 'a' }] } },
        },
      }) as DaemonSet;
    // maxUnavailable defaults to 1, so a surge alone must say maxUnavailable: 0.
    await expect(store.create(ds('both', { maxSurge: 1 }))).rejects.toThrow(
      'DaemonSet.apps "both" is invalid: spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero',
    );
    await expect(store.create(ds('none', { maxSurge: '0%', maxUnavailable: 0 }))).rejects.toThrow(
      'DaemonSet.apps "none" is invalid: spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0',
    );
    await expect(store.create(ds('big', { maxSurge: '150%', maxUnavailable: 0 }))).rejects.toThrow(
      'DaemonSet.apps "big" is invalid: spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "150%": must not be greater than 100%',
    );
    expect((await store.create(ds('ok', { maxSurge: '10%', maxUnavailable: 0 }))).spec.updateStrategy?.rollingUpdate).toEqual({ maxSurge: '10%', maxUnavailable: 0 });
  });

  /** `n` nodes, a fake kubelet, the controller, and the DaemonSet `agent` (app=agent) created on them. */
  async function agentOnNodes(n: number): Promise<{ store: MemoryStore; dsc: DaemonSetController }> {
    const store = await MemoryStore.open();
    const stop = await fakeKubelet(store);
    const ctx = new ControllerContext({ store, disableEvents: true });
    const dsc = new DaemonSetController(ctx);
    ctx.informers.start();
    await dsc.start();
    cleanup.push(() => store.close(), stop, () => dsc.stop());
    for (let i = 0; i < n; i++) await store.create(node(`n${i}`));
    await store.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: 'default' },
      spec: { selector: { matchLabels: { app: 'agent' } }, template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'a', image: 'agent:1' }] } } },
    } as DaemonSet);
    return { store, dsc };
  }

  it('looks again only at the nodes whose pods or taints changed, and keeps the status right', async () => {
    const N = 200;
    const { store, dsc } = await agentOnNodes(N);
    await until('all ready', async () => (await store.get('DaemonSet', 'default', 'agent')).status?.numberReady === N);
    const pods = ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).sort((a, b) => targetNode(a)!.localeCompare(targetNode(b)!));
    const before = dsc.stats.nodesVisited;
    // Ten pods turn unready one after another, each a separate event and sync.
    for (const p of pods.slice(0, 10)) {
      const cur = await store.get('Pod', 'default', p.metadata.name!);
      cur.status!.conditions = cur.status!.conditions!.map((c) => (c.type === 'Ready' ? { ...c, status: 'False' } : c));
      await store.updateStatus(cur);
      await new Promise((r) => setTimeout(r, 5));
    }
    const st = await until('ten unready', async () => {
      const d = await store.get('DaemonSet', 'default', 'agent');
      return d.status?.numberReady === N - 10 && d.status;
    });
    expect(st).toMatchObject({ desiredNumberScheduled: N, currentNumberScheduled: N, numberAvailable: N - 10, numberUnavailable: 10 });
    // A full pass per event would visit 200 nodes per sync; incremental syncs visit about one node per event.
    expect(dsc.stats.nodesVisited - before).toBeLessThanOrEqual(30);
    // A taint on one node evicts its pod and is counted there alone; the other nodes keep theirs.
    const visited = dsc.stats.nodesVisited;
    await store.patch('Node', undefined, 'n150', { spec: { taints: [{ key: 'dedicated', value: 'x', effect: 'NoExecute' }] } }, 'merge');
    await until('evicted', async () => (await store.get('DaemonSet', 'default', 'agent')).status?.desiredNumberScheduled === N - 1);
    await until('gone', async () => ((await store.list('Pod', { namespace: 'default' })).items as Pod[]).filter((p) => !p.metadata.deletionTimestamp).length === N - 1);
    expect(dsc.stats.nodesVisited - visited).toBeLessThanOrEqual(10);
    expect(((await store.list('Pod', { namespace: 'default' })).items as Pod[]).map(targetNode)).not.toContain('n150');
  });

  it('covers 600 nodes with at most 250 creates in flight, in slow-start batches', async () => {
    const N = 600;
    const { store, dsc } = await agentOnNodes(N);
    const st = await until('all ready', async () => {
      const d = await store.get('DaemonSet', 'default', 'agent');
      return d.status?.numberReady === N && d.status;
    });
    expect(st).toMatchObject({ desiredNumberScheduled: N, currentNumberScheduled: N, numberMisscheduled: 0 });
    const pods = (await store.list('Pod', { namespace: 'default' })).items as Pod[];
    expect(new Set(pods.map(targetNode)).size).toBe(N);
    expect(pods.length).toBe(N);
    expect(dsc.stats.largestBurst).toBe(250);
  });
});

