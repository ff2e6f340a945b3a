import { afterEach, describe, expect, it } from 'vitest';
import { type DaemonSet, MemoryStore, type Node, type Pod } from '@kemu/core';
import { ControllerManager } from './controller-manager.js';
import { targetNode } from './daemonset-controller.js';
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
});
