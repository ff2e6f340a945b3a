import { execFileSync } from 'node:child_process';
import { parseQuantity } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterEach, describe, expect, it } from 'vitest';
import { KUBELET_ENDPOINT_ANNOTATION } from './labels.js';
import { nodeMetrics, podMetrics } from './metrics-api.js';
import type { Summary } from './stats-summary.js';
import { startTestKubelet, type TestKubelet, testPod, until } from './testing.js';

const MiB = 2 ** 20;
const running: TestKubelet[] = [];
afterEach(async () => {
  for (const k of running.splice(0)) await k.stop();
});

/** A kubelet serving its endpoints, with one pod using 64Mi and 250m in the sim runtime's usage model. */
async function busyKubelet() {
  const k = await startTestKubelet({ serverAddress: '127.0.0.1:0' });
  running.push(k);
  await k.store.create(testPod('web', {}, { 'kemu.io/sim-memory-mib': '64', 'kemu.io/sim-cpu-millicores': '250' }));
  await until('web running', async () => (await k.store.get('Pod', 'default', 'web')).status?.phase === 'Running');
  const url = (await k.store.get('Node', '', 'node-a')).metadata.annotations?.[KUBELET_ENDPOINT_ANNOTATION];
  expect(url).toBe(k.kubelet.serverUrl);
  return { k, url: url! };
}

describe('the kubelet’s stats and metrics endpoints', () => {
  it('serves /stats/summary with the pod’s working set and CPU rate', async () => {
    const { url } = await busyKubelet();
    await fetch(`${url}/stats/summary`);
    await new Promise((r) => setTimeout(r, 300));
    const s = (await (await fetch(`${url}/stats/summary`)).json()) as Summary;
    expect(s.node.nodeName).toBe('node-a');
    const web = s.pods.find((p) => p.podRef.name === 'web')!;
    expect(web.memory?.workingSetBytes).toBe(64 * MiB);
    expect(web.containers[0].memory?.workingSetBytes).toBe(64 * MiB);
    // Two samples of cumulative CPU time apart: the rate the usage model burns, 0.25 cores.
    expect(web.cpu?.usageNanoCores).toBeGreaterThan(0.24e9);
    expect(web.cpu?.usageNanoCores).toBeLessThan(0.26e9);
    expect(s.node.memory?.workingSetBytes).toBe(64 * MiB);
    expect(s.node.memory?.availableBytes).toBe(32 * 1024 * MiB - 64 * MiB);
    expect((await fetch(`${url}/nope`)).status).toBe(404);
  });

  it('builds metrics.k8s.io NodeMetrics and PodMetrics as metrics-server does', async () => {
    const { k } = await busyKubelet();
    await k.kubelet.summary.summary();
    await new Promise((r) => setTimeout(r, 300));
    const s = await k.kubelet.summary.summary();
    const node = nodeMetrics(s);
    expect(node).toMatchObject({ apiVersion: 'metrics.k8s.io/v1beta1', kind: 'NodeMetrics', metadata: { name: 'node-a' }, usage: { memory: '64Mi' } });
    const pods = podMetrics(s);
    expect(pods.map((p) => [p.metadata.namespace, p.metadata.name, p.containers.map((c) => c.name)])).toEqual([['default', 'web', ['app']]]);
    expect(pods[0].containers[0].usage.cpu).toMatch(/^\d+n$/);
    expect(parseQuantity(pods[0].containers[0].usage.cpu).milliValue()).toBeGreaterThanOrEqual(240);
    expect(parseQuantity(pods[0].containers[0].usage.cpu).milliValue()).toBeLessThanOrEqual(260);
  });
});

const promOk = requirePeers('kubelet /metrics parsed by the Prometheus client', [peers.pythonPrometheusClient]);

describe.runIf(promOk)('/metrics/resource and /metrics/cadvisor read by the Prometheus client', () => {
  const parse = (text: string) =>
    JSON.parse(
      execFileSync(
        '/usr/bin/python3',
        [
          '-c',
          'import sys, json\nfrom prometheus_client.parser import text_string_to_metric_families as p\nprint(json.dumps([[f.name, f.type, [[s.name, s.labels, s.value, s.timestamp] for s in f.samples]] for f in p(sys.stdin.read())]))',
        ],
        { input: text, encoding: 'utf8' },
      ),
    ) as [string, string, [string, Record<string, string>, number, number | null][]][];

  it('has the families and samples metrics-server reads', async () => {
    const { url } = await busyKubelet();
    const families = parse(await (await fetch(`${url}/metrics/resource`)).text());
    const byName = new Map(families.map((f) => [f[0], f]));
    // The parser drops the _total suffix of counters from the family name, as Prometheus does.
    expect([...byName.keys()].sort()).toEqual([
      'container_cpu_usage_seconds',
      'container_memory_working_set_bytes',
      'container_start_time_seconds',
      'node_cpu_usage_seconds',
      'node_memory_working_set_bytes',
      'pod_cpu_usage_seconds',
      'pod_memory_working_set_bytes',
      'resource_scrape_error',
    ]);
    expect(byName.get('container_cpu_usage_seconds')![1]).toBe('counter');
    const ws = byName.get('container_memory_working_set_bytes')![2];
    expect(ws.map(([name, labels, value]) => [name, labels, value])).toEqual([
      ['container_memory_working_set_bytes', { container: 'app', namespace: 'default', pod: 'web' }, 64 * MiB],
    ]);
    expect(ws[0][3]).toBeGreaterThan(1e9); // a timestamp in seconds
    expect(byName.get('resource_scrape_error')![2][0][2]).toBe(0);
    const cadvisor = parse(await (await fetch(`${url}/metrics/cadvisor`)).text());
    const rss = cadvisor.find((f) => f[0] === 'container_memory_rss')![2];
    expect(rss[0][1]).toMatchObject({ container: 'app', namespace: 'default', pod: 'web', image: 'busybox' });
    expect(rss[0][2]).toBe(64 * MiB);
  });
});
