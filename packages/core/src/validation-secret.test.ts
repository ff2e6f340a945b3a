import { describe, expect, it } from 'vitest';
import type { ConfigMap } from './api-core.js';
import { MAX_SECRET_SIZE, type Secret } from './api-secret.js';
import { InvalidError } from './errors.js';
import { SECRET_KIND } from './kinds-secret.js';
import { createMemoryStore } from './store-memory.js';
import { validationErrors } from './validation.js';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const secret = (extra: Partial<Secret> = {}): Secret => ({
  apiVersion: 'v1',
  kind: SECRET_KIND,
  metadata: { name: 's', namespace: 'default' },
  ...extra,
});
const messages = (obj: Secret | ConfigMap) => validationErrors(obj).map((c) => `${c.field}: ${c.message}`);

describe('Secret on write', () => {
  it('merges stringData into data (overwriting), drops it, defaults type to Opaque', async () => {
    const store = await createMemoryStore();
    const s = await store.create(secret({ data: { a: b64('old'), b: b64('kept') }, stringData: { a: 'new', c: 'ünï' } }));
    expect(s.stringData).toBeUndefined();
    expect(s.type).toBe('Opaque');
    expect(Buffer.from(s.data!.a, 'base64').toString()).toBe('new');
    expect(Buffer.from(s.data!.b, 'base64').toString()).toBe('kept');
    expect(Buffer.from(s.data!.c, 'base64').toString('utf8')).toBe('ünï');
    const updated = await store.update({ ...s, stringData: { b: 'changed' } });
    expect(updated.stringData).toBeUndefined();
    expect(Buffer.from(updated.data!.b, 'base64').toString()).toBe('changed');
  });

  it('keeps binary data byte for byte', async () => {
    const store = await createMemoryStore();
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await store.create(secret({ data: { bin: b64(bytes) } }));
    const got = await store.get('Secret', 'default', 's');
    expect(Buffer.from(got.data!.bin, 'base64').equals(bytes)).toBe(true);
  });

  it('forbids changing data or immutable of an immutable Secret, and changing type', async () => {
    const store = await createMemoryStore();
    const s = await store.create(secret({ stringData: { a: '1' }, immutable: true }));
    const e1 = await store.update({ ...s, stringData: { a: '2' } }).catch((e) => e);
    expect(e1).toBeInstanceOf(InvalidError);
    expect(e1.message).toContain('data: Forbidden: field is immutable when `immutable` is set');
    const e2 = await store.update({ ...s, immutable: false }).catch((e) => e);
    expect(e2.message).toContain('immutable: Forbidden: field is immutable when `immutable` is set');
    const e3 = await store.update({ ...s, type: 'kubernetes.io/basic-auth', stringData: { username: 'u' } }).catch((e) => e);
    expect(e3.message).toContain('type: Invalid value: "kubernetes.io/basic-auth": field is immutable');
    // Metadata may still change.
    const relabelled = await store.update({ ...s, metadata: { ...s.metadata, labels: { a: 'b' } } });
    expect(relabelled.metadata.labels).toEqual({ a: 'b' });
  });
});

describe('Secret validation', () => {
  it('requires the keys of each typed secret', () => {
    expect(messages(secret({ type: 'kubernetes.io/tls', data: {} }))).toEqual(['data[tls.key]: Required value', 'data[tls.crt]: Required value']);
    expect(messages(secret({ type: 'kubernetes.io/basic-auth' }))).toEqual(['data[username]: Required value', 'data[password]: Required value']);
    expect(messages(secret({ type: 'kubernetes.io/basic-auth', data: { password: '' } }))).toEqual([]);
    expect(messages(secret({ type: 'kubernetes.io/ssh-auth', data: {} }))).toEqual(['data[ssh-privatekey]: Required value']);
    expect(messages(secret({ type: 'kubernetes.io/service-account-token' }))).toEqual([
      'metadata.annotations[kubernetes.io/service-account.name]: Required value',
    ]);
    expect(messages(secret({ type: 'kubernetes.io/dockerconfigjson', data: {} }))).toEqual(['data[.dockerconfigjson]: Required value']);
    const bad = messages(secret({ type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{nope') } }));
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatch(/^data\[\.dockerconfigjson\]: Invalid value: "<secret contents redacted>": /);
    expect(messages(secret({ type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64('{"auths":{}}') } }))).toEqual([]);
    expect(messages(secret({ type: 'example.com/custom', data: { x: b64('y') } }))).toEqual([]);
  });

  it('rejects bad keys, non-base64 values and more than 1 MiB', () => {
    expect(messages(secret({ data: { 'a/b': b64('x'), '..x': b64('x') } }))).toEqual([
      `data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
      `data[..x]: Invalid value: "..x": must not start with '..'`,
    ]);
    expect(messages(secret({ data: { a: 'not base64!' } }))).toEqual([
      'data[a]: Invalid value: "<secret contents redacted>": must be base64-encoded (RFC 4648 §4)',
    ]);
    expect(messages(secret({ data: { a: b64(Buffer.alloc(MAX_SECRET_SIZE)) } }))).toEqual([]);
    expect(messages(secret({ data: { a: b64(Buffer.alloc(MAX_SECRET_SIZE)), b: b64('x') } }))).toEqual([
      'data: Too long: may not be more than 1048576 bytes',
    ]);
  });
});

describe('ConfigMap validation', () => {
  const cm = (extra: Partial<ConfigMap>): ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, ...extra });

  it('refuses a 4 MiB ConfigMap, as the API server does, and stores nothing', async () => {
    const store = await createMemoryStore();
    const err = await store.create(cm({ data: { big: 'x'.repeat(4 * 1024 * 1024) } })).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidError);
    expect(err.message).toContain('Too long: may not be more than 1048576 bytes');
    expect((await store.list('ConfigMap', { namespace: 'default' })).items).toHaveLength(0);
  });

  it('counts binaryData by its decoded size and refuses a key in both maps', () => {
    expect(messages(cm({ data: { a: 'x' }, binaryData: { a: b64('y') } }))).toEqual([
      'binaryData[a]: Invalid value: "a": duplicate of key present in data',
    ]);
    expect(messages(cm({ binaryData: { a: b64(Buffer.alloc(MAX_SECRET_SIZE)) } }))).toEqual([]);
    expect(messages(cm({ binaryData: { a: b64(Buffer.alloc(MAX_SECRET_SIZE)) }, data: { b: 'z' } }))).toEqual([
      ': Too long: may not be more than 1048576 bytes',
    ]);
    expect(messages(cm({ data: { 'bad key': 'v' } }))[0]).toMatch(/^data\[bad key\]: Invalid value: "bad key": a valid config key/);
  });
});
