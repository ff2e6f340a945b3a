// kubectl v1.32 top against a composed cluster's API server (the kubeconfig `kemu up` writes): the API server
// serves metrics.k8s.io/v1beta1 from the kubelets' summaries, as kube-apiserver serves metrics-server's, and
// nodes/proxy reaches the kubelet's own endpoints (kubectl get --raw .../proxy/stats/summary).
import { peers, requirePeers } from '@kemu/test-peers';
import type { Cluster } from 'kemu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../cluster/util.js';
import { type HttpsCluster, startHttpsCluster } from './https-cluster.js';

const ok = requirePeers('kubectl top through a composed cluster', [peers.kubectl]);

describe.runIf(ok)('kubectl top through the API server', () => {
  let h: HttpsCluster;
  let cluster: Cluster;
  const kubectl: HttpsCluster['kubectl'] = (args, opts) => h.kubectl(args, opts);

  beforeAll(async () => {
    h = await startHttpsCluster('top');
    cluster = h.cluster;
    await cluster.store.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'busy', namespace: 'default', labels: { app: 'busy' }, annotations: { 'kemu.io/sim-memory-mib': '100', 'kemu.io/sim-cpu-millicores': '300' } },
      spec: { containers: [{ name: 'app', image: 'busybox' }] },
    });
    await cluster.store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'idle', namespace: 'default', labels: { app: 'idle' } }, spec: { containers: [{ name: 'app', image: 'busybox' }] } });
    await until('pods running', async () => (await cluster.store.list('Pod', { namespace: 'default' })).items.every((p) => p.status?.phase === 'Running'));
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
  });

  it('top pods and top nodes show what the kubelet measures', async () => {
    // Like metrics-server, a CPU rate needs two samples, and the first window spans the pod's start: ask until
    // the rate settles near the 300m the pod burns.
    let pods = { code: 1, stdout: '', stderr: '' };
    await until('a settled CPU rate for busy', async () => {
      pods = await kubectl(['top', 'pods']);
      const m = /^busy\s+(\d+)m\s/m.exec(pods.stdout);
      return Boolean(m && Number(m[1]) >= 250);
    });
    expect(pods.code, pods.stderr).toBe(0);
    const lines = pods.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\s*$/);
    const [, cpu, memory] = lines.find((l) => l.startsWith('busy '))!.split(/\s+/);
    expect(memory).toBe('100Mi');
    expect(Number(cpu.replace(/m$/, ''))).toBeGreaterThanOrEqual(250);
    expect(Number(cpu.replace(/m$/, ''))).toBeLessThanOrEqual(350);
    expect(lines.some((l) => l.startsWith('idle '))).toBe(true);
    const selected = await kubectl(['top', 'pods', '-l', 'app=busy', '--no-headers']);
    expect(selected.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0])).toEqual(['busy']);
    const nodes = await kubectl(['top', 'nodes']);
    expect(nodes.code, nodes.stderr).toBe(0);
    expect(nodes.stdout).toMatch(/^NAME\s+CPU\(cores\)\s+CPU\(%\)\s+MEMORY\(bytes\)\s+MEMORY\(%\)\s*\nkemu-node-1\s+\d+m\s+\d+%\s+\d+Mi\s+\d+%\s*\n$/);
  }, 60_000);

  it('nodes/proxy reaches the kubelet: its summary and resource metrics', async () => {
    const summary = await kubectl(['get', '--raw', '/api/v1/nodes/kemu-node-1/proxy/stats/summary']);
    expect(summary.code, summary.stderr).toBe(0);
    const s = JSON.parse(summary.stdout);
    expect(s.node.nodeName).toBe('kemu-node-1');
    expect(s.pods.map((p: { podRef: { name: string } }) => p.podRef.name)).toEqual(expect.arrayContaining(['busy', 'idle']));
    const metrics = await kubectl(['get', '--raw', '/api/v1/nodes/kemu-node-1/proxy/metrics/resource']);
    expect(metrics.code, metrics.stderr).toBe(0);
    expect(metrics.stdout).toMatch(/^node_cpu_usage_seconds_total /m);
  });
});
