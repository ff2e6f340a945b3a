// The server's own endpoints and transport: HTTP/2 and HTTP/1.1 on one TLS port, client-certificate users,
// discovery (legacy and aggregated v2), health, version and metrics; and the pure pieces they rest on
// (RequestInfo, Accept negotiation, kubeconfig merging).
import http2 from 'node:http2';
import https from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from './auth-seams.js';
import { negotiate } from './content-negotiation.js';
import { buildKubeconfig, mergeKubeconfig, removeFromKubeconfig } from './kubeconfig.js';
import { requestInfo } from './request-info.js';
import { startTestApiServer, type TestApiServer } from './testing.js';
import YAML from 'yaml';

let t: TestApiServer;
let client: { cert: string; key: string };
const audit: AuditEvent[] = [];
beforeAll(async () => {
  t = await startTestApiServer({ options: { audit: { record: (e) => void audit.push(e) } } });
  client = await t.ca.issueClient({ user: 'alice', groups: ['dev'] });
});
afterAll(async () => {
  await t?.close();
});

function h1(path: string, headers: Record<string, string> = {}): Promise<{ code: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${t.api.url}${path}`, { ca: t.ca.certPem, ...client, headers }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ code: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('transport and endpoints', () => {
  it('speaks HTTP/2 (ALPN h2) and HTTP/1.1 on the same port, with the client certificate as the user', async () => {
    const session = http2.connect(t.api.url!, { ca: t.ca.certPem, ...client });
    try {
      const { status, body, alpn } = await new Promise<{ status: number; body: string; alpn: string }>((resolve, reject) => {
        const st = session.request({ ':path': '/api/v1/namespaces' });
        let body = '';
        let status = 0;
        st.on('response', (h) => (status = Number(h[':status'])));
        st.on('data', (d) => (body += d));
        st.on('end', () => resolve({ status, body, alpn: String(session.alpnProtocol) }));
        st.on('error', reject);
      });
      expect(alpn).toBe('h2');
      expect(status).toBe(200);
      expect(JSON.parse(body).kind).toBe('NamespaceList');
    } finally {
      session.close();
    }
    const r = await h1('/api/v1/namespaces/default');
    expect(r.code).toBe(200);
    const seen = audit.filter((e) => e.stage === 'ResponseComplete' && e.requestURI === '/api/v1/namespaces/default');
    expect(seen.at(-1)).toMatchObject({ user: { name: 'alice', groups: ['dev', 'system:authenticated'] }, verb: 'get', responseStatus: { code: 200 } });
  });

  it('serves legacy discovery and aggregated discovery v2 by Accept header', async () => {
    const legacy = JSON.parse((await h1('/api/v1')).text);
    const pods = legacy.resources.find((r: { name: string }) => r.name === 'pods');
    expect(pods).toMatchObject({ kind: 'Pod', namespaced: true, shortNames: ['po'], categories: ['all'] });
    expect(legacy.resources.map((r: { name: string }) => r.name)).toEqual(expect.arrayContaining(['pods/status', 'pods/log', 'pods/exec', 'pods/eviction', 'pods/binding']));
    const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';
    const agg = await h1('/apis', { accept });
    expect(agg.headers['content-type']).toBe('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
    const doc = JSON.parse(agg.text);
    expect(doc).toMatchObject({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2' });
    const storage = doc.items.find((g: { metadata: { name: string } }) => g.metadata.name === 'storage.k8s.io');
    const sc = storage.versions[0].resources.find((r: { resource: string }) => r.resource === 'storageclasses');
    expect(sc).toMatchObject({ scope: 'Cluster', shortNames: ['sc'], responseKind: { group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass' } });
    const core = JSON.parse((await h1('/api', { accept })).text);
    expect(core.items[0].versions[0].version).toBe('v1');
  });

  it('answers /version, /healthz, /livez, /readyz (verbose too) and /metrics', async () => {
    expect(JSON.parse((await h1('/version')).text)).toMatchObject({ major: '1', minor: '32', gitVersion: 'v1.32.0-kemu' });
    for (const p of ['/healthz', '/livez', '/readyz']) expect(await h1(p)).toMatchObject({ code: 200, text: 'ok' });
    expect((await h1('/readyz?verbose')).text).toMatch(/\[\+\]ping ok\n[\s\S]*readyz check passed\n$/);
    const m = await h1('/metrics');
    expect(m.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(m.text).toMatch(/^apiserver_request_total\{verb="LIST",group="",version="v1",resource="namespaces",subresource="",scope="cluster",component="apiserver",code="200"\} \d+$/m);
    expect(m.text).toMatch(/^apiserver_request_duration_seconds_bucket\{.*le="\+Inf"\} \d+$/m);
  });
});

describe('RequestInfo as upstream resolves it', () => {
  const q = (s = '') => new URLSearchParams(s);
  it.each([
    ['GET', '/api/v1/namespaces/default/pods', '', { verb: 'list', resource: 'pods', namespace: 'default', name: '' }],
    ['GET', '/api/v1/namespaces/default/pods', 'watch=true', { verb: 'watch' }],
    ['GET', '/api/v1/namespaces/default/pods', 'watch=0', { verb: 'list' }],
    ['GET', '/api/v1/namespaces/default/pods', 'watch=', { verb: 'watch' }],
    ['GET', '/api/v1/watch/namespaces/default/pods/web', '', { verb: 'watch', name: 'web' }],
    ['GET', '/api/v1/namespaces/default/pods/web/log', '', { verb: 'get', subresource: 'log', name: 'web' }],
    ['DELETE', '/apis/apps/v1/namespaces/ns/deployments', '', { verb: 'deletecollection', apiGroup: 'apps' }],
    ['PUT', '/api/v1/namespaces/ns/finalize', '', { resource: 'namespaces', name: 'ns', subresource: 'finalize' }],
    ['GET', '/api/v1/nodes', 'fieldSelector=metadata.name%3Dn1', { verb: 'list', name: 'n1' }],
    ['GET', '/apis/apps', '', { isResourceRequest: false, verb: 'get' }],
  ] as const)('%s %s?%s', (method, path, query, want) => {
    expect(requestInfo(method, path, q(query))).toMatchObject(want);
  });
});

describe('Accept negotiation', () => {
  const caps = { tables: true, protobuf: false, resource: true };
  it('picks Tables, partial metadata and plain objects, and refuses what it cannot produce', () => {
    expect(negotiate('application/json;as=Table;v=v1;g=meta.k8s.io,application/json', caps)).toEqual({ kind: 'table', version: 'v1', media: 'json' });
    expect(negotiate('application/vnd.kubernetes.protobuf,application/json', caps)).toEqual({ kind: 'object', media: 'json' });
    expect(negotiate('application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io', caps)).toMatchObject({ kind: 'partial' });
    expect(negotiate(undefined, caps)).toEqual({ kind: 'object', media: 'json' });
    expect(() => negotiate('text/html', caps)).toThrow(/only the following media types are accepted/);
  });
});

describe('kubeconfig merging', () => {
  it('adds kemu-<name> entries beside the existing ones, makes them current, and removes them again', () => {
    const existing = YAML.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'prod', cluster: { server: 'https://prod' } }],
      users: [{ name: 'prod', user: { token: 't' } }],
      contexts: [{ name: 'prod', context: { cluster: 'prod', user: 'prod' } }],
      'current-context': 'prod',
    });
    const cfg = buildKubeconfig({ name: 'dev', server: 'https://127.0.0.1:1', caPem: 'CA', clientCertPem: 'C', clientKeyPem: 'K' });
    const merged = YAML.parse(mergeKubeconfig(existing, cfg));
    expect(merged.contexts.map((c: { name: string }) => c.name)).toEqual(['prod', 'kemu-dev']);
    expect(merged['current-context']).toBe('kemu-dev');
    expect(merged.users.find((u: { name: string }) => u.name === 'kemu-dev').user['client-key-data']).toBe(Buffer.from('K').toString('base64'));
    const again = YAML.parse(mergeKubeconfig(YAML.stringify(merged), cfg));
    expect(again.clusters).toHaveLength(2);
    const removed = YAML.parse(removeFromKubeconfig(YAML.stringify(merged), 'dev'));
    expect(removed.contexts.map((c: { name: string }) => c.name)).toEqual(['prod']);
    expect(removed['current-context']).toBe('');
  });
});
