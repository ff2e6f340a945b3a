import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createMemoryStore, isAlreadyExists, isNotFound, type Store } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, ClusterUnreachableError } from './api-client.js';
import { type ApiServer, startApiServer } from '@kemu/apiserver';

let store: Store;
let server: ApiServer;
let api: ApiClient;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-api-'));

beforeAll(async () => {
  store = await createMemoryStore();
  server = await startApiServer(store, path.join(dir, 'kemu.sock'), {
    trace: async (from, to) => ({ from, to, reachable: true }),
  });
  api = new ApiClient(server.socketPath);
});
afterAll(async () => {
  await server.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const cm = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data });

describe('the API server over a unix socket', () => {
  it('creates the socket owner-only', () => {
    expect(fs.statSync(server.socketPath).mode & 0o777).toBe(0o600);
  });

  it('creates, gets, lists, patches and deletes at Kubernetes paths', async () => {
    await api.create(cm('a', { k: 'v' }));
    expect((await api.get('ConfigMap', 'default', 'a')).data).toEqual({ k: 'v' });
    expect((await api.list('ConfigMap', { namespace: 'default' })).items.map((x) => x.metadata.name)).toEqual(['a']);
    await api.patch('ConfigMap', 'default', 'a', { data: { k2: 'v2' } });
    expect((await api.get('ConfigMap', 'default', 'a')).data).toEqual({ k: 'v', k2: 'v2' });
    await api.delete('ConfigMap', 'default', 'a');
    await expect(api.get('ConfigMap', 'default', 'a')).rejects.toSatisfy(isNotFound);
  });

  it('returns Status errors that map back to typed errors', async () => {
    await api.create(cm('dup', {}));
    const err = await api.create(cm('dup', {})).catch((e) => e);
    expect(isAlreadyExists(err)).toBe(true);
    expect(err.message).toBe('configmaps "dup" already exists');
    const raw = await api.request('GET', '/api/v1/namespaces/default/widgets');
    expect(raw.code).toBe(404);
    expect(JSON.parse(raw.text)).toMatchObject({ kind: 'Status', reason: 'NotFound', code: 404 });
    const notObject = await api.request('POST', '/api/v1/namespaces/default/configmaps', 'just a string' as unknown as object);
    expect(notObject.code).toBe(400);
    expect(JSON.parse(notObject.text).message).toMatch(/must be a Kubernetes object/);
    const malformed = await new Promise<number>((resolve, reject) => {
      const req = http.request({ socketPath: server.socketPath, path: '/api/v1/namespaces/default/configmaps', method: 'POST' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('{not json');
    });
    expect(malformed).toBe(400);
    expect((await api.list('ConfigMap', { namespace: 'default' })).items.map((x) => x.metadata.name)).toEqual(['dup']);
  });

  it('streams watch events as newline-delimited JSON', async () => {
    const events: string[] = [];
    const done = new Promise<void>((resolve) => {
      const req = http.get({ socketPath: server.socketPath, path: '/api/v1/namespaces/default/configmaps?watch=1' }, (res) => {
        let buf = '';
        res.on('data', (c) => {
          buf += c;
          for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
            const ev = JSON.parse(buf.slice(0, i));
            buf = buf.slice(i + 1);
            events.push(`${ev.type} ${ev.object.metadata.name}`);
            if (ev.object.metadata.name === 'w') {
              req.destroy();
              resolve();
            }
          }
        });
      });
    });
    await new Promise((r) => setTimeout(r, 50));
    await api.create(cm('w', {}));
    await done;
    expect(events).toContain('ADDED w');
  });

  it('serves the extension endpoints', async () => {
    expect(await api.trace('default/a', '10.0.0.1')).toEqual({ from: 'default/a', to: '10.0.0.1', reachable: true });
  });

  it('tells the user how to start a cluster when none is running', async () => {
    const none = new ApiClient(path.join(dir, 'absent.sock'));
    const err = (await none.info().catch((e: Error) => e)) as Error;
    expect(err).toBeInstanceOf(ClusterUnreachableError);
    expect(err.message).toMatch(/start one with `kemu up`/);
  });
});
