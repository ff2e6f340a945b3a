// Watch delivery over HTTP/2 with flow control, as client-go reads it: a watcher that stops reading (its
// stream window exhausted, the server's response buffer full) holds up no other watcher and, past the
// store's queue limit, ends with a 410 it reads once it reads again; a watch whose initial state is larger
// than any buffer streams it all in order as the client reads.
import http2 from 'node:http2';
import { createMemoryStore, type KubeObject, type Store } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApiServer, type TestApiServer } from './testing.js';
import { encodeEvent } from './watch.js';
import { watchEventFrame } from './watch-protobuf.js';
import { readFields, WIRE_BYTES } from './protobuf/wire.js';

/** Queued events a watcher may hold before it is ended (small here so a test can outrun it). */
const QUEUE_LIMIT = 40;
const CMS = '/api/v1/namespaces/default/configmaps';

interface Reader {
  stream: http2.ClientHttp2Stream;
  events: { type: string; object: KubeObject & { code?: number } }[];
  ended: Promise<void>;
  /** Resolves once `n` events arrived. */
  waitFor(n: number, ms?: number): Promise<void>;
}

function openWatch(session: http2.ClientHttp2Session, path: string): Promise<Reader> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    const events: Reader['events'] = [];
    let buf = '';
    const waiters: { n: number; done: () => void }[] = [];
    stream.setEncoding('utf8');
    stream.on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        events.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
      }
      for (const w of waiters.filter((x) => events.length >= x.n)) w.done();
    });
    const ended = new Promise<void>((r) => stream.on('end', r));
    stream.on('error', reject);
    stream.on('response', (h) => {
      if (h[':status'] !== 200) return reject(new Error(`watch: HTTP ${h[':status']}`));
      resolve({
        stream,
        events,
        ended,
        waitFor: (n, ms = 10_000) =>
          new Promise((res, rej) => {
            if (events.length >= n) return res();
            const t = setTimeout(() => rej(new Error(`${events.length}/${n} events after ${ms} ms`)), ms);
            waiters.push({ n, done: () => (clearTimeout(t), res()) });
          }),
      });
    });
  });
}

/** A ConfigMap of about `kib` KiB, so a few dozen fill a stream's flow-control window. */
const bigConfigMap = (name: string, kib = 4) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { blob: 'x'.repeat(kib * 1024) } });

describe('watch delivery and backpressure over HTTP/2', () => {
  let t: TestApiServer;
  let store: Store;
  let session: http2.ClientHttp2Session;
  let slowSession: http2.ClientHttp2Session;
  beforeAll(async () => {
    store = await createMemoryStore({ watchQueueLimit: QUEUE_LIMIT });
    t = await startTestApiServer({ store });
    const admin = await t.ca.issueClient({ user: 'watcher', groups: ['system:masters'] });
    // The protocol's default 64 KiB windows: a stream that is not read stops the server's sends on it (and,
    // once the connection's window is spent, on its connection: the slow watcher is a client of its own).
    const connect = () => http2.connect(t.api.url!, { ca: t.ca.certPem, cert: admin.cert, key: admin.key });
    session = connect();
    slowSession = connect();
  });
  afterAll(async () => {
    session?.destroy();
    slowSession?.destroy();
    await t?.close();
    await store?.close();
  });

  it('a watcher that stops reading holds up no other; past the queue limit it ends with a 410 once it reads', async () => {
    const rv = await store.resourceVersion();
    const path = `${CMS}?watch=1&resourceVersion=${rv}&labelSelector=`;
    const slow = await openWatch(slowSession, path);
    const fast = await openWatch(session, path);
    slow.stream.pause();
    const n = 120;
    for (let i = 0; i < n; i++) {
      await store.create(bigConfigMap(`slow-${i}`));
      // A writer's pace (the store is in this process: without a turn of the event loop nothing is sent).
      await new Promise((r) => setTimeout(r, 1));
    }
    // Every event reaches the watcher that reads, in order, while the other is stuck.
    await fast.waitFor(n);
    expect(fast.events.map((e) => e.object.metadata.name)).toEqual(Array.from({ length: n }, (_, i) => `slow-${i}`));
    const stuckAt = slow.events.length;
    expect(stuckAt).toBeLessThan(n - QUEUE_LIMIT);
    // Reading again, it gets what was sent or buffered before its queue overflowed, then the 410.
    slow.stream.resume();
    await slow.ended;
    const last = slow.events.at(-1)!;
    expect(last.type).toBe('ERROR');
    expect(last.object.code).toBe(410);
    expect(last.object.reason).toBe('Expired');
    const added = slow.events.slice(0, -1);
    expect(added.every((e) => e.type === 'ADDED')).toBe(true);
    expect(added.map((e) => e.object.metadata.name)).toEqual(Array.from({ length: added.length }, (_, i) => `slow-${i}`));
    // What it got is what the server had written or queued before the overflow: less than all the events.
    expect(added.length).toBeLessThan(n);
    fast.stream.close();
  });

  it('an initial state larger than every buffer streams in order as the client reads, then live events follow', async () => {
    const ns = 'initial';
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    // 1.2 MiB of initial state: many times the stream window and the response buffer.
    const n = 30;
    for (let i = 0; i < n; i++) await store.create({ ...bigConfigMap('', 40), metadata: { name: `init-${String(i).padStart(3, '0')}`, namespace: ns } });
    const rv = await store.resourceVersion();
    const w = await openWatch(
      session,
      `/api/v1/namespaces/${ns}/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${rv}`,
    );
    await w.waitFor(n + 1);
    expect(w.events.slice(0, n).every((e) => e.type === 'ADDED')).toBe(true);
    expect(w.events.slice(0, n).map((e) => e.object.metadata.name)).toEqual(Array.from({ length: n }, (_, i) => `init-${String(i).padStart(3, '0')}`));
    expect(w.events[n].type).toBe('BOOKMARK');
    expect(w.events[n].object.metadata.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    await store.create({ ...bigConfigMap('live'), metadata: { name: 'live', namespace: ns } });
    await w.waitFor(n + 2);
    expect(`${w.events[n + 1].type}:${w.events[n + 1].object.metadata.name}`).toBe('ADDED:live');
    w.stream.close();
  });
});

describe('watch event encoding', () => {
  it("one change's watchers share its bytes, per event type, whatever order the types come in", () => {
    const object = Object.freeze({ apiVersion: 'v1', kind: 'ConfigMap', metadata: Object.freeze({ name: 'a', resourceVersion: '7' }) }) as KubeObject;
    const modified = encodeEvent({ type: 'MODIFIED', object });
    // A watcher whose selector the change entered gets it as ADDED; the others keep the shared MODIFIED bytes.
    const added = encodeEvent({ type: 'ADDED', object });
    expect(encodeEvent({ type: 'MODIFIED', object })).toBe(modified);
    expect(encodeEvent({ type: 'ADDED', object })).toBe(added);
    expect(JSON.parse(added.toString())).toEqual({ type: 'ADDED', object });
    expect(JSON.parse(modified.toString())).toEqual({ type: 'MODIFIED', object });
    // An object that is not frozen (an ERROR's Status) is encoded afresh each time.
    const status = { kind: 'Status', code: 410 } as unknown as KubeObject;
    expect(encodeEvent({ type: 'ERROR', object: status } as never)).not.toBe(encodeEvent({ type: 'ERROR', object: status } as never));
  });

  it('a protobuf frame is its length, then WatchEvent{type, RawExtension{raw}}, for objects of any size', () => {
    for (const size of [0, 5, 127, 128, 300, 20_000, 70_000]) {
      const raw = Buffer.alloc(size, 7);
      const frame = watchEventFrame('MODIFIED', raw);
      expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
      const fields = [...readFields(frame.subarray(4))];
      expect(fields.map((f) => [f.field, f.wire])).toEqual([
        [1, WIRE_BYTES],
        [2, WIRE_BYTES],
      ]);
      expect((fields[0].value as Buffer).toString()).toBe('MODIFIED');
      const inner = [...readFields(fields[1].value as Buffer)];
      expect(inner).toHaveLength(1);
      expect(Buffer.compare(inner[0].value as Buffer, raw)).toBe(0);
    }
  });
});
