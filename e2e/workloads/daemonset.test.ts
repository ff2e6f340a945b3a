// A DaemonSet on the composed cluster: the controller makes one pod per eligible node, the scheduler binds
// each to its node through the node-name affinity, the kubelets run them; a node tainted NoSchedule gets
// none until the taint goes.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DaemonSet, Pod } from '@kemu/core';
import { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../cluster/util.js';

describe('a DaemonSet on the composed cluster', () => {
  let cluster: Cluster;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-ds-'));

  beforeAll(async () => {
    cluster = await Cluster.start({ stateDir, nodes: 3, fast: true });
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

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
});
