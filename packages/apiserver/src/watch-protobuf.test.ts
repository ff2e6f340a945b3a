// Protobuf watch streams (Accept: application/vnd.kubernetes.protobuf, what client-go asks for built-in
// kinds). kubectl v1.32's `events --watch` watches through client-go's typed client, which asks for protobuf
// and decodes the frames itself; the frames are also read with protoc --decode_raw (the protobuf compiler's
// own reader), which shows the wire structure kube-apiserver writes, and the schema codec turns the embedded
// object back into the pod that was created.
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { MemoryStore } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeObjectBytes, isEnvelope } from './protobuf/index.js';
import { readFields, WIRE_BYTES } from './protobuf/wire.js';
import { startTestApiServer, type TestApiServer } from './testing.js';
import { PROTOBUF_WATCH_CONTENT_TYPE } from './watch-protobuf.js';

const ok = requirePeers('protobuf watch frames read by protoc', [peers.protoc]);
const okKubectl = requirePeers('protobuf watch read by kubectl events --watch', [peers.kubectl]);

/** Opens a watch; resolves with the response once headers arrived. */
function openWatch(t: TestApiServer, path: string, accept: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: t.api.socketPath, path, headers: { accept } }, resolve);
    req.on('error', reject);
    req.end();
  });
}

/** Reads `n` length-prefixed frames from a protobuf watch. */
function readFrames(res: http.IncomingMessage, n: number): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const frames: Buffer[] = [];
    const t = setTimeout(() => reject(new Error(`only ${frames.length} frames`)), 10_000);
    res.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 4 && buf.length >= 4 + buf.readUInt32BE(0)) {
        const len = buf.readUInt32BE(0);
        frames.push(buf.subarray(4, 4 + len));
        buf = buf.subarray(4 + len);
        if (frames.length === n) {
          clearTimeout(t);
          res.destroy();
          resolve(frames);
          return;
        }
      }
    });
  });
}

/** The WatchEvent's type and its RawExtension's raw bytes, read with the wire reader. */
function watchEvent(frame: Buffer): { type: string; raw: Buffer } {
  let type = '';
  let raw: Buffer = Buffer.alloc(0);
  for (const f of readFields(frame)) {
    if (f.wire !== WIRE_BYTES) continue;
    if (f.field === 1) type = (f.value as Buffer).toString();
    if (f.field === 2) for (const r of readFields(f.value as Buffer)) if (r.field === 1) raw = r.value as Buffer;
  }
  return { type, raw };
}

const decodeRaw = (b: Buffer) => spawnSync('protoc', ['--decode_raw'], { input: b }).stdout.toString();

describe.runIf(ok)('protobuf watch', () => {
  let t: TestApiServer;
  beforeAll(async () => {
    t = await startTestApiServer({ store: await MemoryStore.open({ historySize: 100 }) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('streams length-prefixed WatchEvent frames whose object is a k8s\\0 protobuf body, decodable by protoc', async () => {
    const res = await openWatch(t, '/api/v1/namespaces/default/pods?watch=true', 'application/vnd.kubernetes.protobuf;stream=watch, application/json');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe(PROTOBUF_WATCH_CONTENT_TYPE);
    const frames = readFrames(res, 2);
    await t.store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'pb', namespace: 'default', labels: { app: 'x' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    await t.store.delete('Pod', 'default', 'pb');
    const [added, deleted] = await frames;

    // protoc sees a WatchEvent: field 1 the type, field 2 a RawExtension whose field 1 starts with k8s\0.
    const text = decodeRaw(added);
    expect(text).toMatch(/^1: "ADDED"\n2 \{\n {2}1: "k8s\\000/);
    const ev = watchEvent(added);
    expect(ev.type).toBe('ADDED');
    expect(isEnvelope(ev.raw)).toBe(true);
    // Behind the prefix a runtime.Unknown: typeMeta {apiVersion, kind}, then the Pod's own message.
    const unknown = decodeRaw(ev.raw.subarray(4));
    expect(unknown).toMatch(/^1 \{\n {2}1: "v1"\n {2}2: "Pod"\n\}\n2 \{\n/);
    const pod = decodeObjectBytes(ev.raw) as unknown as { kind: string; metadata: { name: string; labels: Record<string, string> }; spec: { containers: { image: string }[] } };
    expect(pod.kind).toBe('Pod');
    expect(pod.metadata.name).toBe('pb');
    expect(pod.metadata.labels).toEqual({ app: 'x' });
    expect(pod.spec.containers[0].image).toBe('busybox');
    expect(watchEvent(deleted).type).toBe('DELETED');
  });

  it('a resourceVersion too old for the history: one ERROR frame with a 410 Expired Status', async () => {
    // The store keeps a bounded history (100 versions here): push the first versions out of it.
    for (let i = 0; i < 150; i++) await t.store.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c${i}`, namespace: 'default' } });
    const res = await openWatch(t, '/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=2&timeoutSeconds=5', 'application/vnd.kubernetes.protobuf');
    const gone = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve(Buffer.concat(chunks)));
    });
    expect(res.headers['content-type']).toBe(PROTOBUF_WATCH_CONTENT_TYPE);
    expect(gone.readUInt32BE(0)).toBe(gone.length - 4);
    const ev = watchEvent(gone.subarray(4));
    expect(ev.type).toBe('ERROR');
    const status = decodeObjectBytes(ev.raw) as unknown as { kind: string; code: number; reason: string };
    expect(status).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });

  it.runIf(okKubectl)('kubectl events --watch (client-go\'s typed watch) reads the protobuf stream', async () => {
    const child = spawn('kubectl', ['events', '--watch', '-v=8'], { env: { PATH: process.env.PATH ?? '', KUBECONFIG: t.kubeconfig, HOME: t.dir } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    try {
      const until = async (what: string, cond: () => boolean) => {
        for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
        expect(cond(), `${what}: ${out}${err.slice(-2000)}`).toBe(true);
      };
      await until('the watch is open', () => /Content-Type: application\/vnd\.kubernetes\.protobuf;stream=watch/.test(err));
      await t.store.create({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'web.pb', namespace: 'default' },
        involvedObject: { kind: 'Pod', name: 'web', namespace: 'default' },
        reason: 'Pulled',
        message: 'delivered in a protobuf frame',
        type: 'Normal',
        firstTimestamp: new Date(Date.now() - 5000).toISOString().replace(/\.\d+Z$/, 'Z'),
      } as never);
      await until('the event line', () => out.includes('delivered in a protobuf frame'));
      expect(out).toMatch(/^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE\n/);
      expect(out).toMatch(/\d+s\s+Normal\s+Pulled\s+Pod\/web\s+delivered in a protobuf frame\n/);
      expect(err).toMatch(/GET https:\/\/[^ ]+\/api\/v1\/namespaces\/default\/events\?[^ ]*watch=true/);
    } finally {
      child.kill();
    }
  });

  it('JSON still for JSON clients, and for kinds without a protobuf form', async () => {
    const res = await openWatch(t, '/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1', 'application/json');
    expect(res.headers['content-type']).toBe('application/json');
    res.destroy();
  });
});
