// One set of gRPC-over-HTTP/2 assertions run against both server engines: grpc-js (the reference) and
// the node:http2 engine. Clients: grpc-js, a raw node:http2 client for what a well-behaved client never
// sends (bad framing, compression, bad headers), and Python's grpcio (gRPC C core, an independent
// implementation) when installed.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import {
  collectStream,
  createGrpcServer,
  cri,
  type GrpcEngine,
  type GrpcServer,
  implementService,
  RpcError,
  serveUnix,
  shutdownServer,
  unaryCall,
} from '../index';

const here = path.dirname(fileURLToPath(import.meta.url));
const PYTHON = '/usr/bin/python3';
const canPython = requirePeers('the Python grpcio checks of the engines', [peers.pythonGrpc]);

const MAX_RECEIVE = 64 * 1024;
const MAX_SEND = 32 * 1024;
const UNICODE_DETAILS = 'sandbox “web” is 100% broken: é';
const Version = cri.RuntimeServiceService.Version;
const VERSION_PATH = '/runtime.v1.RuntimeService/Version';
const STREAM_ITEMS = 2000;

interface RawResponse {
  status: number;
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  data: Buffer;
}

function grpcFrame(body: Buffer, compressed = false): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out[0] = compressed ? 1 : 0;
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

/** The gRPC status of a raw response: from trailers, or from the headers of a trailers-only response. */
function statusOf(r: RawResponse): { code: number; message: string; trailersOnly: boolean } {
  const trailersOnly = r.headers['grpc-status'] !== undefined;
  const src = trailersOnly ? r.headers : r.trailers;
  return {
    code: Number(src['grpc-status']),
    message: decodeURIComponent(String(src['grpc-message'] ?? '')),
    trailersOnly,
  };
}

for (const engine of ['grpc-js', 'http2'] as GrpcEngine[]) {
  describe(`gRPC server engine ${engine}`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-engine-${engine}-`));
    const sock = path.join(dir, 'rt.sock');
    let server: GrpcServer;
    let client: cri.RuntimeServiceClient;
    let session: http2.ClientHttp2Session;
    // What the server-side handlers observed, for the cancellation and metadata checks.
    const seen: { slowCancelled?: Promise<boolean>; streamClosed?: Promise<void>; metadata?: string } = {};

    beforeAll(async () => {
      server = await serveUnix(
        [
          [
            cri.RuntimeServiceService,
            implementService(cri.RuntimeServiceService, {
              Version: (req, call) => {
                seen.metadata = String(call.metadata.get('x-kemu-test')[0] ?? '');
                return { version: req.version, runtimeName: 'kemu', runtimeApiVersion: 'v1' };
              },
              RunPodSandbox() {
                const md = new grpc.Metadata();
                md.set('x-kemu-reason', 'conflict');
                throw new RpcError(grpc.status.FAILED_PRECONDITION, UNICODE_DETAILS, md);
              },
              StopPodSandbox(_req, call) {
                // Never answers by itself: ends only when the call is cancelled or its deadline passes.
                seen.slowCancelled = new Promise((resolve) => {
                  call.on('cancelled', () => resolve(call.cancelled));
                });
                return new Promise(() => {});
              },
              ListContainers(req) {
                // A response as large as the request asks for, to cross the send limit.
                const n = Number(req.filter?.id ?? 0);
                return { containers: Array.from({ length: n }, (_, i) => ({ id: `c${i}`.padEnd(64, 'x') })) };
              },
              async *GetContainerEvents() {
                for (let i = 0; i < 3; i++) yield { containerId: `c${i}`, containerEventType: i };
              },
              async *StreamContainers(_req, call) {
                let closed!: () => void;
                seen.streamClosed = new Promise((resolve) => {
                  closed = resolve;
                });
                try {
                  yield { containers: [{ id: 'first' }] };
                  await new Promise<void>((resolve) => call.on('cancelled', () => resolve()));
                } finally {
                  closed();
                }
              },
              async *StreamContainerStats() {
                // Far more than one flow-control window: the writer has to wait for 'drain'.
                for (let i = 0; i < STREAM_ITEMS; i++)
                  yield { containerStats: [{ attributes: { id: `${i}`.padStart(1024, '0') } }] };
              },
              async *StreamPodSandboxes() {
                yield { podSandboxes: [{ id: 'one' }] };
                throw new RpcError(grpc.status.ABORTED, 'stream interrupted');
              },
            }),
          ],
        ],
        sock,
        {
          engine,
          serverOptions: { 'grpc.max_receive_message_length': MAX_RECEIVE, 'grpc.max_send_message_length': MAX_SEND },
        },
      );
      client = new cri.RuntimeServiceClient(`unix://${sock}`, grpc.credentials.createInsecure());
      session = http2.connect('http://localhost', { createConnection: () => net.connect(sock) });
      session.on('error', () => {});
    });

    afterAll(async () => {
      client?.close();
      session?.close();
      if (server) await shutdownServer(server, 1000);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    function raw(
      pathName: string,
      body: Buffer[],
      headers: http2.OutgoingHttpHeaders = {},
      end = true,
    ): Promise<RawResponse> {
      return new Promise((resolve, reject) => {
        const req = session.request({
          ':method': 'POST',
          ':path': pathName,
          'content-type': 'application/grpc',
          te: 'trailers',
          ...headers,
        });
        const chunks: Buffer[] = [];
        let responseHeaders: http2.IncomingHttpHeaders = {};
        let trailers: http2.IncomingHttpHeaders = {};
        req.on('response', (h) => {
          responseHeaders = h;
        });
        req.on('trailers', (t) => {
          trailers = t;
        });
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('error', reject);
        req.on('close', () => resolve({ status: Number(responseHeaders[':status']), headers: responseHeaders, trailers, data: Buffer.concat(chunks) }));
        // The response is complete at 'end' even while the request side is still open.
        req.on('end', () =>
          resolve({
            status: Number(responseHeaders[':status']),
            headers: responseHeaders,
            trailers,
            data: Buffer.concat(chunks),
          }),
        );
        for (const b of body) req.write(b);
        if (end) req.end();
      });
    }

    it('serves a unary call over a socket of mode 0660', async () => {
      expect(fs.statSync(sock).mode & 0o777).toBe(0o660);
      const md = new grpc.Metadata();
      md.set('x-kemu-test', 'hello');
      await expect(unaryCall(client, 'Version', { version: 'v9' }, { metadata: md })).resolves.toEqual({
        version: 'v9',
        runtimeName: 'kemu',
        runtimeVersion: '',
        runtimeApiVersion: 'v1',
      });
      expect(seen.metadata).toBe('hello');
    });

    it('frames a response as headers, one length-prefixed message and OK trailers', async () => {
      const r = await raw(VERSION_PATH, [grpcFrame(Version.requestSerialize({ version: 'raw' }))]);
      expect(r.status).toBe(200);
      expect(String(r.headers['content-type'])).toMatch(/^application\/grpc/);
      expect(r.headers['grpc-status']).toBeUndefined();
      expect(r.data[0]).toBe(0);
      expect(r.data.readUInt32BE(1)).toBe(r.data.length - 5);
      expect(Version.responseDeserialize(r.data.subarray(5))).toMatchObject({ version: 'raw', runtimeName: 'kemu' });
      expect(statusOf(r)).toMatchObject({ code: grpc.status.OK, trailersOnly: false });
    });

    it('sends errors as a trailers-only response with a percent-encoded message and trailing metadata', async () => {
      const err = await unaryCall(client, 'RunPodSandbox', { config: {} }).catch((e) => e);
      expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
      expect(err.details).toBe(UNICODE_DETAILS);
      expect(err.metadata.get('x-kemu-reason')).toEqual(['conflict']);

      const r = await raw('/runtime.v1.RuntimeService/RunPodSandbox', [grpcFrame(Buffer.alloc(0))]);
      expect(r.status).toBe(200);
      expect(r.data.length).toBe(0);
      expect(statusOf(r)).toEqual({ code: grpc.status.FAILED_PRECONDITION, message: UNICODE_DETAILS, trailersOnly: true });
      // Only printable ASCII goes on the wire.
      expect(String(r.headers['grpc-message'])).toMatch(/^[\x20-\x7e]*$/);
    });

    it('answers UNIMPLEMENTED for an unknown method and for a method without a handler', async () => {
      const r = await raw('/runtime.v1.RuntimeService/NoSuchMethod', [grpcFrame(Buffer.alloc(0))]);
      expect(statusOf(r)).toMatchObject({ code: grpc.status.UNIMPLEMENTED, trailersOnly: true });
      expect(statusOf(r).message).toContain('/runtime.v1.RuntimeService/NoSuchMethod');
      const err = await unaryCall(client, 'CheckpointContainer', { containerId: 'x' }).catch((e) => e);
      expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
      expect(err.details).toContain('CheckpointContainer');
    });

    it('refuses a request that is not gRPC with HTTP 415', async () => {
      const r = await raw(VERSION_PATH, [Buffer.from('{}')], { 'content-type': 'application/json' });
      expect(r.status).toBe(415);
    });

    it('refuses a request message over the receive limit with RESOURCE_EXHAUSTED', async () => {
      const err = await unaryCall(client, 'Version', { version: 'x'.repeat(MAX_RECEIVE + 10) }).catch((e) => e);
      expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      // The limit holds even when the length prefix arrives before (or without) the body.
      const header = Buffer.alloc(5);
      header.writeUInt32BE(10 * MAX_RECEIVE, 1);
      const r = await raw(VERSION_PATH, [header]);
      expect(statusOf(r).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      // A client still sending the oversized body gets its answer too.
      const open = await raw(VERSION_PATH, [header, Buffer.alloc(1024)], {}, false);
      expect(statusOf(open).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      await expect(unaryCall(client, 'Version', { version: 'still serving' })).resolves.toMatchObject({ version: 'still serving' });
    });

    it('refuses a response over the send limit with RESOURCE_EXHAUSTED', async () => {
      const err = await unaryCall(client, 'ListContainers', { filter: { id: String(MAX_SEND / 32) } }).catch((e) => e);
      expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      await expect(unaryCall(client, 'ListContainers', { filter: { id: '2' } })).resolves.toMatchObject({
        containers: [{ id: expect.stringMatching(/^c0x+/) }, { id: expect.stringMatching(/^c1x+/) }],
      });
    });

    it('reads gzip- and deflate-compressed requests and refuses unknown or inconsistent compression', async () => {
      const body = Version.requestSerialize({ version: 'zipped' });
      for (const [encoding, packed] of [
        ['gzip', zlib.gzipSync(body)],
        ['deflate', zlib.deflateSync(body)],
      ] as const) {
        const r = await raw(VERSION_PATH, [grpcFrame(packed, true)], { 'grpc-encoding': encoding });
        expect(statusOf(r).code).toBe(grpc.status.OK);
        expect(Version.responseDeserialize(r.data.subarray(5))).toMatchObject({ version: 'zipped' });
      }
      const unknown = await raw(VERSION_PATH, [grpcFrame(Buffer.from('??'), true)], { 'grpc-encoding': 'snappy' });
      expect(statusOf(unknown).code).toBe(grpc.status.UNIMPLEMENTED);
      // Compressed flag without an encoding: the bytes must not be taken as a plain message.
      const noEncoding = await raw(VERSION_PATH, [grpcFrame(zlib.gzipSync(body), true)]);
      expect(statusOf(noEncoding).code).toBe(grpc.status.INTERNAL);
      const corrupt = await raw(VERSION_PATH, [grpcFrame(Buffer.from('not gzip'), true)], { 'grpc-encoding': 'gzip' });
      expect(statusOf(corrupt).code).toBe(grpc.status.INTERNAL);
    });

    it('refuses a unary call with no request message or with two', async () => {
      const none = await raw(VERSION_PATH, []);
      expect(statusOf(none).code).toBe(grpc.status.UNIMPLEMENTED);
      const one = grpcFrame(Version.requestSerialize({ version: 'a' }));
      const two = await raw(VERSION_PATH, [Buffer.concat([one, one])]);
      expect(statusOf(two).code).toBe(grpc.status.UNIMPLEMENTED);
    });

    it('refuses a message that does not decode with INTERNAL', async () => {
      const r = await raw(VERSION_PATH, [grpcFrame(Buffer.from([0x0a, 0xff]))]);
      expect(statusOf(r).code).toBe(grpc.status.INTERNAL);
    });

    it('ends a call at its grpc-timeout deadline and tells the handler it was cancelled', async () => {
      const t0 = Date.now();
      const err = await unaryCall(client, 'StopPodSandbox', { podSandboxId: 'slow' }, { timeoutMs: 150 }).catch((e) => e);
      expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
      await expect(seen.slowCancelled).resolves.toBe(true);
      const bad = await raw('/runtime.v1.RuntimeService/StopPodSandbox', [grpcFrame(Buffer.alloc(0))], {
        'grpc-timeout': 'soon',
      });
      expect(statusOf(bad).code).toBe(grpc.status.INTERNAL);
    });

    it('tells the handler when the client cancels a unary call', async () => {
      const call = client.StopPodSandbox({ podSandboxId: 'slow' }, () => {});
      await new Promise((r) => setTimeout(r, 100));
      call.cancel();
      await expect(seen.slowCancelled).resolves.toBe(true);
    });

    it('streams every item of a server-streaming call, then OK', async () => {
      const items = await collectStream(client.GetContainerEvents({}));
      expect(items.map((i) => [i.containerId, i.containerEventType])).toEqual([
        ['c0', 0],
        ['c1', 1],
        ['c2', 2],
      ]);
    });

    it('streams more than a flow-control window, in order, honouring back-pressure', async () => {
      const items = await collectStream(client.StreamContainerStats({}));
      expect(items).toHaveLength(STREAM_ITEMS);
      expect(items.every((item, i) => Number(item.containerStats?.[0]?.attributes?.id) === i)).toBe(true);
    });

    it('ends a stream with the handler error status after the items already sent', async () => {
      const stream = client.StreamPodSandboxes({});
      const items: unknown[] = [];
      stream.on('data', (i) => items.push(i));
      const err = await new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
      expect(items).toHaveLength(1);
      expect(err.code).toBe(grpc.status.ABORTED);
      expect(err.details).toBe('stream interrupted');
    });

    it('stops a server stream when the client cancels it', async () => {
      const stream = client.StreamContainers({});
      stream.on('error', () => {});
      await new Promise((resolve) => stream.once('data', resolve));
      stream.cancel();
      await expect(seen.streamClosed).resolves.toBeUndefined();
      await expect(unaryCall(client, 'Version', { version: 'after' })).resolves.toMatchObject({ version: 'after' });
    });

    it.runIf(canPython)('is driven by Python grpcio: unary, errors, deadline, stream', async () => {
      const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(PYTHON, [path.join(here, 'engine_peer.py'), sock]);
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d));
        child.stderr.on('data', (d: Buffer) => (stderr += d));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
      expect(out.code, out.stderr).toBe(0);
      const report = JSON.parse(out.stdout);
      expect(Version.responseDeserialize(Buffer.from(report.version, 'base64'))).toMatchObject({
        version: 'py',
        runtimeName: 'kemu',
      });
      expect(report.error).toEqual({ code: 'FAILED_PRECONDITION', details: UNICODE_DETAILS, reason: 'conflict' });
      expect(report.unimplemented).toBe('UNIMPLEMENTED');
      expect(report.deadline).toBe('DEADLINE_EXCEEDED');
      expect(report.stream).toBe(3);
    });
  });
}

for (const engine of ['grpc-js', 'http2'] as GrpcEngine[]) {
  describe(`shutting down the ${engine} engine`, () => {
    async function start(handler: (release: Promise<void>) => Promise<object>) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-engine-stop-${engine}-`));
      const sock = path.join(dir, 's.sock');
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let entered!: () => void;
      const inHandler = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const server = await serveUnix(
        [
          [
            cri.RuntimeServiceService,
            implementService(cri.RuntimeServiceService, {
              Version: () => {
                entered();
                return handler(released) as never;
              },
            }),
          ],
        ],
        sock,
        { engine },
      );
      const client = new cri.RuntimeServiceClient(`unix://${sock}`, grpc.credentials.createInsecure());
      return { dir, sock, server, client, release, inHandler };
    }

    it('tryShutdown lets an in-flight call finish, then stops serving', async () => {
      const s = await start(async (released) => {
        await released;
        return { version: 'finished' };
      });
      try {
        const inflight = unaryCall(s.client, 'Version', {});
        await s.inHandler;
        const stopped = new Promise<void>((resolve) => s.server.tryShutdown(() => resolve()));
        s.release();
        await expect(inflight).resolves.toMatchObject({ version: 'finished' });
        await stopped;
        const other = new cri.RuntimeServiceClient(`unix://${s.sock}`, grpc.credentials.createInsecure());
        const err = await unaryCall(other, 'Version', {}, { timeoutMs: 2000 }).catch((e) => e);
        other.close();
        expect([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]).toContain(err.code);
      } finally {
        s.client.close();
        s.server.forceShutdown();
        fs.rmSync(s.dir, { recursive: true, force: true });
      }
    });

    it('forceShutdown fails in-flight calls', async () => {
      const s = await start(() => new Promise(() => {}));
      try {
        // grpc-js's client retries a call whose connection dropped before any response, so with the grpc-js
        // server the call ends at its deadline; the http2 engine's reset reaches the caller as UNAVAILABLE.
        const inflight = unaryCall(s.client, 'Version', {}, { timeoutMs: 2000 }).catch((e) => e);
        await s.inHandler;
        s.server.forceShutdown();
        const err = await inflight;
        expect([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]).toContain(err.code);
      } finally {
        s.client.close();
        fs.rmSync(s.dir, { recursive: true, force: true });
      }
    });
  });
}

describe('createGrpcServer', () => {
  it('builds either engine', () => {
    expect(createGrpcServer('grpc-js')).toBeInstanceOf(grpc.Server);
    expect(createGrpcServer('http2')).not.toBeInstanceOf(grpc.Server);
  });

  it.each(['grpc-js', 'http2'] as GrpcEngine[])('%s: reports a failed bind to the caller', async (engine) => {
    const server = createGrpcServer(engine);
    const err = await new Promise<Error | null>((resolve) =>
      server.bindAsync('unix:///proc/kemu-cannot-exist/x.sock', grpc.ServerCredentials.createInsecure(), (e) => resolve(e)),
    );
    expect(err).toBeInstanceOf(Error);
    server.forceShutdown();
  });
});
