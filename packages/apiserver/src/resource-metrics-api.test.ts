// metrics.k8s.io/v1beta1 through the API server: discovery lists the group once a metrics source is given,
// get/list of NodeMetrics and PodMetrics (namespaced, label-selected by the Pod's labels), NotFound and 405
// as kube-apiserver answers them, and real kubectl top nodes|pods (v1.32 and the old v1.20) reading it.
import http from 'node:http';
import { KUBECTL_OLD, peers, requirePeers } from '@kemu/test-peers';
import type { KubeObject } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runClient, startTestApiServer, type TestApiServer } from './testing.js';

const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const nodeMetric = (name: string, cpu: string, memory: string) =>
  ({ apiVersion: 'metrics.k8s.io/v1beta1', kind: 'NodeMetrics', metadata: { name, creationTimestamp: now }, timestamp: now, window: '10s', usage: { cpu, memory } }) as unknown as KubeObject;
const podMetric = (namespace: string, name: string, cpu: string, memory: string) =>
  ({
    apiVersion: 'metrics.k8s.io/v1beta1',
    kind: 'PodMetrics',
    metadata: { name, namespace, creationTimestamp: now },
    timestamp: now,
    window: '10s',
    containers: [{ name: 'c', usage: { cpu, memory } }],
  }) as unknown as KubeObject;

let t: TestApiServer;
let bare: TestApiServer;
beforeAll(async () => {
  t = await startTestApiServer({
    ext: {
      resourceMetrics: async () => ({
        nodes: [nodeMetric('node-a', '250000000n', `${512 * 2 ** 20}`)],
        pods: [podMetric('default', 'web', '100000000n', `${64 * 2 ** 20}`), podMetric('default', 'db', '5000000n', `${32 * 2 ** 20}`), podMetric('other', 'x', '1n', '1')],
      }),
    },
  });
  bare = await startTestApiServer();
  const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a', labels: { zone: 'a' } }, status: { allocatable: { cpu: '2', memory: '2Gi' }, capacity: { cpu: '2', memory: '2Gi' } } };
  await t.store.create(node as unknown as KubeObject);
  for (const [name, app] of [['web', 'web'], ['db', 'db']])
    await t.store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default', labels: { app } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } as unknown as KubeObject);
});
afterAll(async () => {
  await t?.close();
  await bare?.close();
});

function call(server: TestApiServer, method: string, path: string): Promise<{ code: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: server.api.socketPath, path, method }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

const BASE = '/apis/metrics.k8s.io/v1beta1';

describe('metrics.k8s.io', () => {
  it('is in discovery only when a metrics source is given', async () => {
    const groups = (s: TestApiServer) => call(s, 'GET', '/apis').then((r) => r.json.groups.map((g: { name: string }) => g.name));
    expect(await groups(t)).toContain('metrics.k8s.io');
    expect(await groups(bare)).not.toContain('metrics.k8s.io');
    const list = await call(t, 'GET', BASE);
    expect(list.json.resources.map((r: { name: string; kind: string; namespaced: boolean; verbs: string[] }) => [r.name, r.kind, r.namespaced, r.verbs])).toEqual([
      ['nodes', 'NodeMetrics', false, ['get', 'list']],
      ['pods', 'PodMetrics', true, ['get', 'list']],
    ]);
    expect((await call(bare, 'GET', `${BASE}/nodes`)).code).toBe(404);
  });

  it('gets and lists NodeMetrics and PodMetrics, namespaced and by the pods\' labels', async () => {
    const nodes = await call(t, 'GET', `${BASE}/nodes`);
    expect(nodes.json).toMatchObject({ kind: 'NodeMetricsList', apiVersion: 'metrics.k8s.io/v1beta1', items: [{ metadata: { name: 'node-a' }, usage: { cpu: '250000000n' } }] });
    expect((await call(t, 'GET', `${BASE}/nodes/node-a`)).json).toMatchObject({ kind: 'NodeMetrics', metadata: { name: 'node-a' } });
    const pods = await call(t, 'GET', `${BASE}/namespaces/default/pods`);
    expect(pods.json.kind).toBe('PodMetricsList');
    expect(pods.json.items.map((p: KubeObject) => p.metadata.name)).toEqual(['db', 'web']);
    expect((await call(t, 'GET', `${BASE}/pods`)).json.items).toHaveLength(3);
    const selected = await call(t, 'GET', `${BASE}/namespaces/default/pods?labelSelector=app%3Dweb`);
    expect(selected.json.items.map((p: KubeObject) => p.metadata.name)).toEqual(['web']);
    const missing = await call(t, 'GET', `${BASE}/namespaces/default/pods/nope`);
    expect(missing).toMatchObject({ code: 404, json: { reason: 'NotFound', message: 'pods.metrics.k8s.io "nope" not found' } });
    expect((await call(t, 'DELETE', `${BASE}/nodes/node-a`)).code).toBe(405);
    expect((await call(t, 'GET', `${BASE}/namespaces/default/nodes`)).code).toBe(404);
  });

  it.runIf(requirePeers('kubectl top', [peers.kubectl]))('kubectl top nodes and pods read it', async () => {
    const n = await runClient('kubectl', ['top', 'nodes'], { kubeconfig: t.kubeconfig });
    expect(n.code, n.stderr).toBe(0);
    expect(n.stdout).toMatch(/^NAME\s+CPU\(cores\)\s+CPU\(%\)\s+MEMORY\(bytes\)\s+MEMORY\(%\)\s*\nnode-a\s+250m\s+12%\s+512Mi\s+25%\s*\n$/);
    const p = await runClient('kubectl', ['top', 'pods'], { kubeconfig: t.kubeconfig });
    expect(p.code, p.stderr).toBe(0);
    expect(p.stdout).toMatch(/^NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)\s*\ndb\s+5m\s+32Mi\s*\nweb\s+100m\s+64Mi\s*\n$/);
    const l = await runClient('kubectl', ['top', 'pods', '-l', 'app=web'], { kubeconfig: t.kubeconfig });
    expect(l.stdout).toMatch(/^NAME.*\nweb\s+100m\s+64Mi\s*\n$/);
  });

  it.runIf(requirePeers('kubectl v1.20 top', [peers.kubectlOld]))('the old kubectl v1.20 top reads it too', async () => {
    const n = await runClient(KUBECTL_OLD, ['top', 'nodes', '--no-headers'], { kubeconfig: t.kubeconfig });
    expect(n.code, n.stderr).toBe(0);
    expect(n.stdout).toMatch(/^node-a\s+250m\s+12%\s+512Mi\s+25%\s*\n$/);
    const p = await runClient(KUBECTL_OLD, ['top', 'pods', '--no-headers'], { kubeconfig: t.kubeconfig });
    expect(p.code, p.stderr).toBe(0);
    expect(p.stdout).toMatch(/^db\s+5m\s+32Mi\s*\nweb\s+100m\s+64Mi\s*\n$/);
  });
});
