// Node resources on the composed cluster (`kemu up --kubelet-config F --device nvidia.com/gpu=8`): each
// node's kubelet reads the KubeletConfiguration, a device plugin beside it advertises eight GPUs, the
// scheduler places GPU pods by them and explains the one that does not fit, and a node under memory
// pressure is tainted so that the scheduler keeps new pods away.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Event, Node, Pod } from '@kemu/core';
import { Cluster, top } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from './util.js';

const gpuPod = (name: string, count: number, annotations: Record<string, string> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', annotations },
  spec: { containers: [{ name: 'cuda', image: 'busybox', resources: { limits: { 'nvidia.com/gpu': String(count) } } }] },
});

describe('node resources on the composed cluster', () => {
  let cluster: Cluster;
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-resources-'));
  const config = path.join(stateDir, 'kubelet.yaml');

  beforeAll(async () => {
    fs.writeFileSync(
      config,
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        'maxPods: 20',
        'kubeReserved: {cpu: 500m, memory: 1Gi}',
        'evictionHard: {memory.available: 31Gi}',
        'evictionPressureTransitionPeriod: 2s',
        '',
      ].join('\n'),
    );
    cluster = await Cluster.start({ stateDir, apiSocket: path.join(stateDir, 'kemu.sock'), nodes: 1, fast: true, kubeletConfigs: { '*': config }, devices: [{ resource: 'nvidia.com/gpu', count: 8 }] });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('publishes allocatable from the KubeletConfiguration and the plugin’s GPUs', async () => {
    const node = await until('8 GPUs on the node', async () => {
      const n = (await cluster.store.get('Node', '', 'kemu-node-1')) as Node;
      return n.status?.allocatable?.['nvidia.com/gpu'] === '8' ? n : undefined;
    });
    expect(node.status?.capacity?.pods).toBe('20');
    expect(node.status?.allocatable?.cpu).toBe('7500m');
    // 32Gi - 1Gi kubeReserved - 31Gi hard eviction threshold
    expect(node.status?.allocatable?.memory).toBe('0');
  });

  it('gives two pods two distinct GPUs each, and leaves a pod asking for 7 Pending with the scheduler’s reason', async () => {
    await cluster.store.create(gpuPod('a', 2));
    await cluster.store.create(gpuPod('b', 2));
    for (const n of ['a', 'b']) await until(`${n} running`, async () => (await cluster.store.get('Pod', 'default', n)).status?.phase === 'Running');
    const kubelet = cluster.nodes[0].kubelet;
    const ids = await Promise.all(
      ['a', 'b'].map(async (n) => kubelet.devices!.podDevices((await cluster.store.get('Pod', 'default', n)).metadata.uid!)[0].deviceIDs),
    );
    expect(new Set(ids.flat()).size).toBe(4);
    await cluster.store.create(gpuPod('c', 7));
    const ev = await until('FailedScheduling for c', async () => {
      const events = (await cluster.store.list('Event', { namespace: 'default' })).items as Event[];
      return events.find((e) => e.involvedObject?.name === 'c' && e.reason === 'FailedScheduling');
    });
    expect(ev.message).toContain('Insufficient nvidia.com/gpu');
    expect((await cluster.store.get('Pod', 'default', 'c')).status?.phase).toBe('Pending');
  }, 40_000);

  it('taints a node under memory pressure, and the scheduler keeps new pods off it', async () => {
    // 32Gi node, threshold 31Gi available: a pod using 2Gi puts it under pressure.
    await cluster.store.create({ ...gpuPod('hog', 0, { 'kemu.io/sim-memory-mib': '2048' }), spec: { containers: [{ name: 'app', image: 'busybox' }] } });
    await until('memory-pressure taint', async () => {
      const n = (await cluster.store.get('Node', '', 'kemu-node-1')) as Node;
      return n.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/memory-pressure' && t.effect === 'NoSchedule');
    }, 30_000);
    // The taint holds for the pressure transition period: a pod created now is not scheduled, and says why.
    await cluster.store.create({ ...gpuPod('late', 0), spec: { containers: [{ name: 'app', image: 'busybox' }] } });
    const refused = await until('FailedScheduling for late', async () => {
      const events = (await cluster.store.list('Event', { namespace: 'default' })).items as Event[];
      return events.find((e) => e.involvedObject?.name === 'late' && e.reason === 'FailedScheduling');
    });
    expect(refused.message).toContain('untolerated taint {node.kubernetes.io/memory-pressure: }');
    const hog = await until('hog evicted', async () => {
      const p = await cluster.store.get('Pod', 'default', 'hog');
      return p.status?.phase === 'Failed' ? p : undefined;
    }, 30_000);
    expect(hog.status?.reason).toBe('Evicted');
    expect(hog.status?.message).toMatch(/^The node was low on resource: memory\. /);
  }, 60_000);

  it('kemu top shows what the kubelet measures, as kubectl top lays it out', async () => {
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'busy', namespace: 'default', annotations: { 'kemu.io/sim-memory-mib': '100', 'kemu.io/sim-cpu-millicores': '300' } },
      spec: { containers: [{ name: 'app', image: 'busybox' }] },
    });
    await until('busy running', async () => (await cluster.store.get('Pod', 'default', 'busy')).status?.phase === 'Running');
    const lines: string[] = [];
    const out = { log: (l: string) => lines.push(...l.split('\n')), err: (l: string) => lines.push(l) };
    // Like metrics-server, a rate needs two samples: the first look primes them.
    await top('pods', { stateDir }, out);
    await new Promise((r) => setTimeout(r, 500));
    lines.length = 0;
    await top('pods', { stateDir }, out);
    expect(lines[0]).toBe('NAME   CPU(cores)   MEMORY(bytes)');
    const busy = lines.find((l) => l.startsWith('busy '))!;
    const [, cpu, memory] = busy.split(/\s+/);
    expect(memory).toBe('100Mi');
    expect(Number(cpu.replace(/m$/, ''))).toBeGreaterThanOrEqual(250);
    expect(Number(cpu.replace(/m$/, ''))).toBeLessThanOrEqual(350);
    lines.length = 0;
    await top('nodes', { stateDir }, out);
    expect(lines[0]).toBe('NAME          CPU(cores)   CPU(%)   MEMORY(bytes)   MEMORY(%)');
    expect(lines[1]).toMatch(/^kemu-node-1 {3}\d+m +\d+% +\d+Mi +(\d+%|<unknown>)$/);
    await expect(top('deployments', { stateDir }, out)).rejects.toThrow(/kemu top takes nodes or pods/);
  }, 30_000);
});
