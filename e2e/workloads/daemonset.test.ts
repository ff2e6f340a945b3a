// A DaemonSet on the composed cluster: the controller makes one pod per eligible node, the scheduler binds
// each to its node through the node-name affinity, the kubelets run them; a node tainted NoSchedule gets
// none until the taint goes.
import type { DaemonSet, Pod } from '@kemu/core';
import { Cluster } from 'kemu';
import { describe, expect, it } from 'vitest';
import { composedCluster } from '../cluster/composed-cluster.js';
import { until } from '../cluster/util.js';

describe('a DaemonSet on the composed cluster', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-ds-', { nodes: 3, fast: true }, (c) => (cluster = c));

  it('runs on every node but the tainted one, and covers it once the taint is removed', async () => {
    await cluster.store.patch('Node', undefined, 'kemu-node-3', { spec: { taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] } }, 'merge');
    await cluster.store.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: 'kube-system' },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'agent', image: 'busybox:1.36', command: ['sleep', '3600'] }] } },
      },
    } as DaemonSet);
    const running = async () =>
      ((await cluster.store.list('Pod', { namespace: 'kube-system', labelSelector: 'app=agent' })).items as Pod[])
        .filter((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp)
        .map((p) => p.spec.nodeName)
        .sort();
    await until('two daemon pods running', async () => (await running()).join() === 'kemu-node-1,kemu-node-2', 60_000);
    const ds = await until('status', async () => {
      const d = await cluster.store.get('DaemonSet', 'kube-system', 'agent');
      return d.status?.numberReady === 2 && d;
    });
    expect(ds.status).toMatchObject({ desiredNumberScheduled: 2, currentNumberScheduled: 2, numberAvailable: 2, numberMisscheduled: 0 });
    await cluster.store.patch('Node', undefined, 'kemu-node-3', { spec: { taints: null } }, 'merge');
    await until('third node covered', async () => (await running()).join() === 'kemu-node-1,kemu-node-2,kemu-node-3', 60_000);
  }, 90_000);

  it('covers nodes added to the running cluster, skips the tainted one until a toleration lets it on', async () => {
    await cluster.store.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'logger', namespace: 'kube-system' },
      spec: {
        selector: { matchLabels: { app: 'logger' } },
        template: { metadata: { labels: { app: 'logger' } }, spec: { containers: [{ name: 'logger', image: 'busybox:1.36', command: ['sleep', '3600'] }] } },
      },
    } as DaemonSet);
    const pods = async () =>
      ((await cluster.store.list('Pod', { namespace: 'kube-system', labelSelector: 'app=logger' })).items as Pod[]).filter((p) => !p.metadata.deletionTimestamp);
    const runningOn = async () =>
      (await pods())
        .filter((p) => p.status?.phase === 'Running')
        .map((p) => p.spec.nodeName)
        .sort();
    await until('logger on the first three nodes', async () => (await runningOn()).join() === 'kemu-node-1,kemu-node-2,kemu-node-3', 60_000);

    expect(await cluster.addNodes(1)).toEqual(['kemu-node-4']);
    expect(await cluster.addNodes(1, { name: 'gpu-1', taints: [{ key: 'gpu', value: 'h200', effect: 'NoSchedule' }] })).toEqual(['gpu-1']);
    // The kubelet registered the Node with its taint, so no daemon pod was ever made for it.
    expect((await cluster.store.get('Node', undefined, 'gpu-1')).spec?.taints).toEqual([{ key: 'gpu', value: 'h200', effect: 'NoSchedule' }]);
    await until('logger on the new untainted node', async () => (await runningOn()).join() === 'kemu-node-1,kemu-node-2,kemu-node-3,kemu-node-4', 60_000);
    const ds = await until('status counts five nodes, four scheduled', async () => {
      const d = await cluster.store.get('DaemonSet', 'kube-system', 'logger');
      return d.status?.numberReady === 4 && d;
    });
    expect(ds.status).toMatchObject({ desiredNumberScheduled: 4, currentNumberScheduled: 4, numberMisscheduled: 0 });
    // Exactly one pod per node, and none for the tainted node at any point.
    const all = await pods();
    expect(all.map((p) => p.spec.nodeName).sort()).toEqual(['kemu-node-1', 'kemu-node-2', 'kemu-node-3', 'kemu-node-4']);

    await cluster.store.patch(
      'DaemonSet',
      'kube-system',
      'logger',
      { spec: { template: { spec: { tolerations: [{ key: 'gpu', operator: 'Exists', effect: 'NoSchedule' }] } } } },
      'merge',
    );
    await until(
      'logger on every node, the tainted one included',
      async () => (await runningOn()).join() === 'gpu-1,kemu-node-1,kemu-node-2,kemu-node-3,kemu-node-4',
      90_000,
    );
    expect((await pods()).filter((p) => p.spec.nodeName === 'gpu-1')).toHaveLength(1);

    await cluster.removeNode('kemu-node-4');
    await until('the removed node and its daemon pod are gone', async () => {
      const nodes = (await cluster.store.list('Node')).items.map((n) => n.metadata.name);
      return !nodes.includes('kemu-node-4') && (await pods()).every((p) => p.spec.nodeName !== 'kemu-node-4');
    });
    await expect(cluster.removeNode('kemu-node-4')).rejects.toThrow('nodes "kemu-node-4" not found');
    await expect(cluster.addNodes(1, { name: 'gpu-1' })).rejects.toThrow('nodes "gpu-1" already exists');
    await expect(cluster.addNodes(1, { name: 'Bad_Name' })).rejects.toThrow('invalid node name "Bad_Name"');
  }, 240_000);
});

/** The node a daemon pod is for: bound, or pinned by its node affinity until the scheduler binds it. */
const targetNode = (p: Pod) =>
  p.spec.nodeName ?? p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]?.matchFields?.[0]?.values?.[0];

describe('a DaemonSet rolling out with maxSurge on the composed cluster', () => {
  let cluster: Cluster;
  composedCluster('kemu-e2e-ds-surge-', { nodes: 2, fast: true }, (c) => (cluster = c));

  it('starts each new pod beside the old one, so no node is ever without a ready daemon pod', async () => {
    await cluster.store.create({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'proxy', namespace: 'kube-system' },
      spec: {
        selector: { matchLabels: { app: 'proxy' } },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        template: { metadata: { labels: { app: 'proxy' } }, spec: { containers: [{ name: 'proxy', image: 'proxy:1' }] } },
      },
    } as DaemonSet);
    const ready = (p: Pod) => !p.metadata.deletionTimestamp && !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    const pods = async () => (await cluster.store.list('Pod', { namespace: 'kube-system', labelSelector: 'app=proxy' })).items as Pod[];
    await until('one ready pod per node', async () => (await pods()).filter(ready).length === 2, 60_000);
    const state = new Map<string, Pod>((await pods()).map((p) => [p.metadata.uid!, p]));
    const w = await cluster.store.watch('Pod', { namespace: 'kube-system', labelSelector: 'app=proxy' });
    const gaps: string[] = [];
    let surged = 0;
    const watching = (async () => {
      for await (const ev of w) {
        const p = ev.object as Pod;
        if (ev.type === 'DELETED') state.delete(p.metadata.uid!);
        else state.set(p.metadata.uid!, p);
        const live = [...state.values()].filter((x) => !x.metadata.deletionTimestamp);
        for (const n of ['kemu-node-1', 'kemu-node-2']) {
          const on = live.filter((x) => targetNode(x) === n);
          if (!on.some(ready)) gaps.push(n);
          surged = Math.max(surged, on.length);
        }
      }
    })();
    await cluster.store.patch('DaemonSet', 'kube-system', 'proxy', { spec: { template: { spec: { containers: [{ name: 'proxy', image: 'proxy:2' }] } } } }, 'strategic');
    await until('rolled out', async () => {
      const all = (await pods()).filter((p) => !p.metadata.deletionTimestamp);
      return all.length === 2 && all.every((p) => p.spec.containers[0]!.image === 'proxy:2' && ready(p));
    }, 90_000);
    w.stop();
    await watching;
    expect(gaps).toEqual([]);
    expect(surged).toBe(2);
  }, 150_000);
});
