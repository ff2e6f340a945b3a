import type { KubeObject, Node, Pod } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KubectlServer, startKubectlServer } from '../openapi/testing-kubectl.js';
import { acceptsTable, buildTable, parseIncludeObject } from './index.js';

const MIN = 60_000;
const at = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().replace(/\.\d+Z$/, 'Z');

function pods(): Pod[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default', creationTimestamp: at(10 * MIN) },
      spec: { nodeName: 'node-1', containers: [{ name: 'a' }, { name: 'b' }] },
      status: {
        phase: 'Running',
        podIP: '10.0.0.7',
        conditions: [{ type: 'Ready', status: 'False' }],
        containerStatuses: [
          { name: 'a', ready: true, restartCount: 3, image: 'x', imageID: '', state: { running: {} }, lastState: { terminated: { exitCode: 1, finishedAt: at(5 * MIN) } } },
          { name: 'b', ready: false, restartCount: 0, image: 'y', imageID: '', state: { waiting: { reason: 'CrashLoopBackOff' } } },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'db', namespace: 'default', creationTimestamp: at(3 * MIN) },
      spec: { initContainers: [{ name: 'init' }], containers: [{ name: 'c' }] },
      status: { phase: 'Pending', initContainerStatuses: [{ name: 'init', ready: false, restartCount: 0, image: '', imageID: '', state: { running: {} } }] },
    },
  ];
}

const node: Node = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'node-1', creationTimestamp: at(2 * 60 * MIN), labels: { 'node-role.kubernetes.io/control-plane': '' } },
  spec: { unschedulable: true },
  status: {
    conditions: [{ type: 'Ready', status: 'True' }],
    addresses: [{ type: 'InternalIP', address: '192.168.0.2' }],
    nodeInfo: { kubeletVersion: 'v1.32.0', osImage: 'Debian GNU/Linux 12', kernelVersion: '6.1.0', containerRuntimeVersion: 'kemu://0.1.0' },
  },
};

describe('Table output', () => {
  it('computes the pod columns as the printers upstream do', () => {
    const t = buildTable('v1', 'Pod', pods());
    expect(t.columnDefinitions.map((c) => [c.name, c.priority])).toEqual([
      ['Name', 0],
      ['Ready', 0],
      ['Status', 0],
      ['Restarts', 0],
      ['Age', 0],
      ['IP', 1],
      ['Node', 1],
      ['Nominated Node', 1],
      ['Readiness Gates', 1],
    ]);
    expect(t.rows[0].cells).toEqual(['web', '1/2', 'CrashLoopBackOff', '3 (5m ago)', '10m', '10.0.0.7', 'node-1', '<none>', '<none>']);
    expect(t.rows[1].cells.slice(0, 4)).toEqual(['db', '0/1', 'Init:0/1', '0']);
    expect(t.rows[0].object).toEqual({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: pods()[0].metadata });
  });

  it('includeObject: None leaves the object out, Object carries it whole; other values are refused', () => {
    expect(buildTable('v1', 'Pod', pods(), { includeObject: parseIncludeObject('None') }).rows[0].object).toBeUndefined();
    expect(buildTable('v1', 'Pod', pods(), { includeObject: parseIncludeObject('Object') }).rows[0].object).toEqual(pods()[0]);
    expect(parseIncludeObject(null)).toBe('Metadata');
    expect(() => parseIncludeObject('All')).toThrow(/includeObject: unsupported value "All"/);
  });

  it('kinds without a printer get Name and Created At', () => {
    const obj: KubeObject = { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPPool', metadata: { name: 'p', creationTimestamp: '2026-01-01T00:00:00Z' } };
    const t = buildTable(obj.apiVersion, obj.kind, [obj]);
    expect(t.columnDefinitions.map((c) => [c.name, c.type])).toEqual([
      ['Name', 'string'],
      ['Created At', 'date'],
    ]);
    expect(t.rows[0].cells).toEqual(['p', '2026-01-01T00:00:00Z']);
  });

  it('recognises the Accept header kubectl sends for tables', () => {
    expect(acceptsTable('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json')).toBe('v1');
    expect(acceptsTable('application/json')).toBeUndefined();
  });
});

describe.runIf(requirePeers('kubectl get against server-side Tables', [peers.kubectl]))('kubectl get', () => {
  let srv: KubectlServer;
  beforeAll(async () => {
    srv = await startKubectlServer((req, _body, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const table = acceptsTable(req.headers.accept);
      const list: [string, string, KubeObject[]] | undefined =
        url.pathname === '/api/v1/namespaces/default/pods'
          ? ['v1', 'Pod', pods()]
          : url.pathname === '/api/v1/nodes'
            ? ['v1', 'Node', [node]]
            : undefined;
      if (!list || !table) return false;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(buildTable(list[0], list[1], list[2], { includeObject: parseIncludeObject(url.searchParams.get('includeObject')), listMeta: { resourceVersion: '7' } })));
      return true;
    });
  });
  afterAll(() => srv?.close());

  it('prints the pod columns kubectl shows from a real cluster', async () => {
    const r = await srv.kubectl(['get', 'pods']);
    expect(r.stderr).toBe('');
    const lines = r.stdout.trimEnd().split('\n').map((l) => l.split(/\s{2,}/));
    expect(lines).toEqual([
      ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE'],
      ['web', '1/2', 'CrashLoopBackOff', '3 (5m ago)', '10m'],
      ['db', '0/1', 'Init:0/1', '0', '3m'],
    ]);
    expect(srv.requests.some((q) => q.startsWith('GET /api/v1/namespaces/default/pods'))).toBe(true);
  });

  it('-o wide adds the priority-1 columns', async () => {
    const r = await srv.kubectl(['get', 'pods', '-o', 'wide']);
    expect(r.stdout.split('\n')[0].split(/\s{2,}/)).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
    expect(r.stdout.split('\n')[1].split(/\s{2,}/)).toEqual(['web', '1/2', 'CrashLoopBackOff', '3 (5m ago)', '10m', '10.0.0.7', 'node-1', '<none>', '<none>']);
  });

  it('prints nodes with STATUS, ROLES and VERSION', async () => {
    const r = await srv.kubectl(['get', 'nodes', '-o', 'wide']);
    const lines = r.stdout.trimEnd().split('\n').map((l) => l.split(/\s{2,}/));
    expect(lines).toEqual([
      ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION', 'INTERNAL-IP', 'EXTERNAL-IP', 'OS-IMAGE', 'KERNEL-VERSION', 'CONTAINER-RUNTIME'],
      ['node-1', 'Ready,SchedulingDisabled', 'control-plane', '120m', 'v1.32.0', '192.168.0.2', '<none>', 'Debian GNU/Linux 12', '6.1.0', 'kemu://0.1.0'],
    ]);
  });
});

describe('printers of the workload, network and policy kinds', () => {
  const now = Math.floor(Date.now() / 1000) * 1000;
  const ago = (ms: number) => new Date(now - ms).toISOString().replace(/\.\d+Z$/, 'Z');
  const meta = (name: string) => ({ name, namespace: 'default', creationTimestamp: ago(5 * MIN) });
  const cells = (apiVersion: string, kind: string, o: Record<string, unknown>) =>
    buildTable(apiVersion, kind, [{ apiVersion, kind, metadata: meta('x'), ...o } as KubeObject], { now }).rows[0].cells;
  const headers = (apiVersion: string, kind: string) => buildTable(apiVersion, kind, []).columnDefinitions.map((c) => c.name);

  it('Deployment: READY, UP-TO-DATE, AVAILABLE and the template in wide columns', () => {
    expect(headers('apps/v1', 'Deployment')).toEqual(['Name', 'Ready', 'Up-to-date', 'Available', 'Age', 'Containers', 'Images', 'Selector']);
    const spec = { replicas: 3, selector: { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['b', 'a'] }] }, template: { spec: { containers: [{ name: 'app', image: 'nginx' }, { name: 'log', image: 'busybox' }] } } };
    expect(cells('apps/v1', 'Deployment', { spec, status: { readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2 } })).toEqual([
      'x',
      '2/3',
      3,
      2,
      '5m',
      'app,log',
      'nginx,busybox',
      'app=web,tier in (a,b)',
    ]);
  });

  it('Job: STATUS, COMPLETIONS and DURATION', () => {
    const status = { succeeded: 1, startTime: ago(4 * MIN), completionTime: ago(3 * MIN), conditions: [{ type: 'Complete', status: 'True' }] };
    expect(cells('batch/v1', 'Job', { spec: { completions: 1, template: { spec: { containers: [] } } }, status }).slice(0, 4)).toEqual(['x', 'Complete', '1/1', '60s']);
    expect(cells('batch/v1', 'Job', { spec: { parallelism: 3 }, status: {} }).slice(1, 4)).toEqual(['Running', '0/1 of 3', '']);
  });

  it('Service: TYPE, CLUSTER-IP, EXTERNAL-IP and PORT(S)', () => {
    const spec = { type: 'NodePort', clusterIP: '10.96.0.10', ports: [{ port: 80, nodePort: 30080, protocol: 'TCP' }, { port: 53, protocol: 'UDP' }], selector: { app: 'web' } };
    expect(cells('v1', 'Service', { spec })).toEqual(['x', 'NodePort', '10.96.0.10', '<none>', '80:30080/TCP,53/UDP', '5m', 'app=web']);
    expect(cells('v1', 'Service', { spec: { type: 'LoadBalancer', clusterIP: '10.96.0.11', ports: [{ port: 443 }] } }).slice(3, 5)).toEqual(['<pending>', '443/TCP']);
  });

  it('Endpoints list the first three addresses', () => {
    const subsets = [{ addresses: ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'].map((ip) => ({ ip })), ports: [{ port: 8080 }] }];
    expect(cells('v1', 'Endpoints', { subsets })[1]).toBe('10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080 + 1 more...');
  });

  it('Secret, ServiceAccount, PodDisruptionBudget and RoleBinding', () => {
    expect(cells('v1', 'Secret', { type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' } })).toEqual(['x', 'kubernetes.io/tls', 2, '5m']);
    expect(cells('v1', 'ServiceAccount', {})).toEqual(['x', 0, '5m']);
    expect(cells('policy/v1', 'PodDisruptionBudget', { spec: { minAvailable: '50%' }, status: { disruptionsAllowed: 1 } })).toEqual(['x', '50%', 'N/A', 1, '5m']);
    const subjects = [{ kind: 'User', name: 'alice' }, { kind: 'ServiceAccount', name: 'builder', namespace: 'ci' }];
    expect(cells('admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', { webhooks: [{ name: 'a' }, { name: 'b' }] })).toEqual(['x', 2, '5m']);
    expect(headers('rbac.authorization.k8s.io/v1', 'Role')).toEqual(['Name', 'Created At']);
    expect(cells('rbac.authorization.k8s.io/v1', 'RoleBinding', { roleRef: { kind: 'ClusterRole', name: 'view' }, subjects })).toEqual(['x', 'ClusterRole/view', '5m', 'alice', '', 'ci:builder']);
  });
});
