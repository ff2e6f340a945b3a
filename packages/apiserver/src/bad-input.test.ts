// Bad input gets the Status, HTTP code and reason kube-apiserver gives, and changes nothing: malformed and
// oversized bodies, wrong JSON types, malformed percent-encoding, invalid names, unknown resources, stale and
// future resourceVersions (for list and watch), conflicting updates, unsupported and unacceptable media types.
import http from 'node:http';
import { MemoryStore } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApiServer, type TestApiServer } from './testing.js';

let t: TestApiServer;
beforeAll(async () => {
  // A short watch history, so a test can outrun it.
  t = await startTestApiServer({ store: await MemoryStore.open({ historySize: 100 }) });
});
afterAll(async () => {
  await t?.close();
  await t?.store.close();
});

interface Reply {
  code: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

function request(method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: t.api.socketPath, path, method, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {}
        resolve({ code: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

const CMS = '/api/v1/namespaces/default/configmaps';
const cm = (name: string, extra: Record<string, unknown> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: 'b' }, ...extra });

async function names(): Promise<string[]> {
  return (await request('GET', CMS)).json.items.map((i: { metadata: { name: string } }) => i.metadata.name);
}

describe('bad input', () => {
  it('a malformed JSON body is a 400 BadRequest and stores nothing', async () => {
    const r = await request('POST', CMS, '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {');
    expect(r.code).toBe(400);
    expect(r.json).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'BadRequest', code: 400 });
    expect(await names()).toEqual([]);
  });

  it('an oversized body is a 413 Status (not a reset connection), under the 3 MiB limit of kube-apiserver', async () => {
    const big = cm('big', { data: { a: 'x'.repeat(20 * 1024 * 1024) } });
    const r = await request('POST', CMS, big);
    expect(r.code).toBe(413);
    expect(r.json).toMatchObject({ kind: 'Status', reason: 'RequestEntityTooLarge', code: 413, message: 'Request entity too large: limit is 3145728' });
    // Chunked, with no Content-Length to refuse it early.
    const chunked = await new Promise<Reply>((resolve, reject) => {
      const req = http.request({ socketPath: t.api.socketPath, path: CMS, method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      for (let i = 0; i < 5; i++) req.write(Buffer.alloc(1024 * 1024, 'a'));
      req.end();
    });
    expect(chunked.code).toBe(413);
    expect(await names()).toEqual([]);
  });

  it('fields of the wrong JSON type are a 400 naming the field', async () => {
    const r1 = await request('POST', CMS, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 5 } }));
    expect(r1.code).toBe(400);
    expect(r1.json.message).toBe('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string');
    const r2 = await request('POST', '/api/v1/namespaces/default/pods', JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: 'x' }));
    expect(r2.code).toBe(400);
    expect(r2.json.message).toMatch(/cannot unmarshal string into Go struct field Pod\.spec of type v1\.PodSpec/);
    const r3 = await request(
      'POST',
      '/api/v1/namespaces/default/pods',
      JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: '80' }] }] } }),
    );
    expect(r3.code).toBe(400);
    expect(r3.json.message).toMatch(/cannot unmarshal string into Go struct field ContainerPort\.spec\.containers\[0\]\.ports\[0\]\.containerPort of type int32/);
    expect((await request('GET', '/api/v1/namespaces/default/pods')).json.items).toEqual([]);
  });

  it('malformed percent-encoding in the path is a 400, not a 500', async () => {
    const r = await request('GET', `${CMS}/%zz`);
    expect(r.code).toBe(400);
    expect(r.json).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
  });

  it('an invalid name is a 422 Invalid with the field cause', async () => {
    const r = await request('POST', CMS, cm('Not_A_Name'));
    expect(r.code).toBe(422);
    expect(r.json).toMatchObject({ reason: 'Invalid', details: { name: 'Not_A_Name', kind: 'ConfigMap' } });
    expect(r.json.details.causes[0].field).toBe('metadata.name');
  });

  it('unknown resources and kinds that do not match the URL', async () => {
    const r = await request('GET', '/api/v1/namespaces/default/widgets');
    expect(r.code).toBe(404);
    expect(r.json).toMatchObject({ reason: 'NotFound', message: 'the server could not find the requested resource' });
    const g = await request('GET', '/apis/nope.example.com/v1/things');
    expect(g.code).toBe(404);
    const k = await request('POST', CMS, JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x' } }));
    expect(k.code).toBe(400);
    expect(k.json.message).toBe('the kind in the data (Secret) does not match the expected kind (ConfigMap)');
  });

  it('creates without apiVersion and kind take them from the URL (as the Python client sends them)', async () => {
    const r = await request('POST', CMS, JSON.stringify({ metadata: { name: 'bare' }, data: { k: 'v' } }));
    expect(r.code).toBe(201);
    expect(r.json).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bare', namespace: 'default' } });
  });

  it('a stale resourceVersion: the watch ends with a 410 Expired event, an exact list is 410', async () => {
    // The memory store keeps a bounded history: push the first versions out of it.
    for (let i = 0; i < 150; i++) await request('POST', CMS, cm(`h${i}`));
    const w = await request('GET', `${CMS}?watch=true&resourceVersion=2&timeoutSeconds=5`);
    expect(w.code).toBe(200);
    const ev = JSON.parse(w.text.trim().split('\n')[0]);
    expect(ev).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
    const l = await request('GET', `${CMS}?resourceVersion=2&resourceVersionMatch=Exact`);
    expect(l.code).toBe(410);
    expect(l.json.reason).toBe('Expired');
  }, 60_000);

  it('a future resourceVersion is answered within seconds with 504 Too large resource version (list and watch)', async () => {
    const rv = Number((await request('GET', CMS)).json.metadata.resourceVersion);
    const started = Date.now();
    const w = await request('GET', `${CMS}?watch=1&resourceVersion=${rv + 1000}`);
    expect(Date.now() - started).toBeLessThan(8000);
    expect(w.code).toBe(504);
    expect(w.json).toMatchObject({ reason: 'Timeout', code: 504 });
    expect(w.json.message).toMatch(/^Too large resource version: \d+, current: \d+$/);
    const l = await request('GET', `${CMS}?resourceVersion=${rv + 1000}`);
    expect(l.code).toBe(504);
    const bad = await request('GET', `${CMS}?watch=1&resourceVersion=abc`);
    expect(bad.code).toBe(400);
  });

  it('watch=true is a watch (the Python client spells it so), and timeoutSeconds ends it', async () => {
    const started = Date.now();
    const w = await request('GET', `${CMS}?watch=True&timeoutSeconds=1&fieldSelector=metadata.name%3Dbare`);
    expect(w.code).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const events = w.text.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED bare']);
  });

  it('a conflicting update is a 409 Conflict and keeps the newer write', async () => {
    const cur = (await request('GET', `${CMS}/bare`)).json;
    const first = await request('PUT', `${CMS}/bare`, JSON.stringify({ ...cur, data: { k: 'first' } }));
    expect(first.code).toBe(200);
    const second = await request('PUT', `${CMS}/bare`, JSON.stringify({ ...cur, data: { k: 'second' } }));
    expect(second.code).toBe(409);
    expect(second.json).toMatchObject({ reason: 'Conflict', details: { name: 'bare', kind: 'configmaps' } });
    expect((await request('GET', `${CMS}/bare`)).json.data).toEqual({ k: 'first' });
  });

  it('unsupported body and unacceptable response media types are 415 and 406 with Status bodies', async () => {
    const u = await request('POST', CMS, cm('x'), { 'content-type': 'text/plain' });
    expect(u.code).toBe(415);
    expect(u.json.reason).toBe('UnsupportedMediaType');
    const p = await request('PATCH', `${CMS}/bare`, '{}', { 'content-type': 'application/xml' });
    expect(p.code).toBe(415);
    const n = await request('GET', CMS, undefined, { accept: 'text/html' });
    expect(n.code).toBe(406);
    expect(n.json.reason).toBe('NotAcceptable');
  });

  it('without credentials on TCP the answer is 401 Unauthorized', async () => {
    const https = await import('node:https');
    const r = await new Promise<Reply>((resolve, reject) => {
      const req = https.request(`${t.api.url}/api/v1/namespaces`, { ca: t.ca.certPem }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(r.code).toBe(401);
    expect(r.json).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
  });
});
