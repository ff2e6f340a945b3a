// The lean node:http2 client against three servers: a stock grpc-js server, our Http2GrpcServer, and
// Python's grpcio (gRPC C core, an independent implementation). The grpc-js client runs the same
// assertions as the reference. A raw node:http2 server covers what a well-behaved server never sends.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import {
  defaultGrpcClient,
  type GrpcClientEngine,
  type GrpcServer,
  Http2GrpcChannel,
  openChannel,
  parseGrpcClient,
  promiseClient,
  serveUnix,
  shutdownServer,
  type UnaryCallOptions,
} from '../index';

const here = path.dirname(fileURLToPath(import.meta.url));
const PYTHON = '/usr/bin/python3';
const canPython = requirePeers('the Python grpcio server checks of the client', [peers.pythonGrpc]);

const UNICODE = 'sandbox “web” is 100% broken: é';
const id = (b: Buffer) => b;
const method = (name: string) => ({
  path: `/kemu.test.Peer/${name}`,
  requestStream: false,
  responseStream: false,
  requestSerialize: id,
  requestDeserialize: id,
  responseSerialize: id,
  responseDeserialize: id,
  originalName: name.toLowerCase(),
});
const PEER = { Echo: method('Echo'), Fail: method('Fail'), Hang: method('Hang'), Big: method('Big'), Nope: method('Nope') };
type PeerApi = Record<keyof typeof PEER, (req: Buffer, opts?: UnaryCallOptions) => Promise<Buffer>>;

/** What the node servers' handlers observed. */
const seen: { hangCancelled?: Promise<boolean> } = {};

/** The Peer service in grpc-js handler shape (runs on both node engines). */
const peerImpl: grpc.UntypedServiceImplementation = {
  Echo(call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) {
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries(call.metadata.getMap())) if (k.startsWith('x-kemu-')) md.set(k, v);
    call.sendMetadata(md);
    cb(null, call.request, md.clone());
  },
  Fail(call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) {
    const { code, details } = JSON.parse(call.request.toString());
    const md = new grpc.Metadata();
    md.set('x-kemu-reason', 'why');
    md.set('x-kemu-blob-bin', Buffer.from([0, 255, 1]));
    cb({ code, details, metadata: md });
  },
  Hang(call: grpc.ServerUnaryCall<Buffer, Buffer>) {
    seen.hangCancelled = new Promise((resolve) => call.on('cancelled', () => resolve(true)));
  },
  Big(call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) {
    cb(null, Buffer.alloc(Number(call.request.toString()), 'x'));
  },
};

function tmpdir(tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kemu-client-${tag}-`));
}

async function startPython(sock: string): Promise<ChildProcess> {
  const child = spawn(PYTHON, [path.join(here, 'client_peer_server.py'), sock], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`python peer server exited with ${code}`)));
  });
  return child;
}

async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await exited;
}

function api(target: string, client: GrpcClientEngine, channelOptions: grpc.ChannelOptions = {}) {
  const ch = openChannel(target, { client, channelOptions });
  return { ch, peer: ch.service(PEER as never) as unknown as PeerApi };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('the call succeeded');
    },
    (e: grpc.ServiceError) => e,
  );

type ServerKind = 'grpc-js' | 'http2' | 'python';
const servers: ServerKind[] = ['grpc-js', 'http2', 'python'];

for (const serverKind of servers) {
  for (const client of ['http2', 'grpc-js'] as GrpcClientEngine[]) {
    describe.runIf(serverKind !== 'python' || canPython)(`${client} client against a ${serverKind} server`, () => {
      const dir = tmpdir(`${serverKind}-${client}`);
      const sock = path.join(dir, 'peer.sock');
      let server: GrpcServer | undefined;
      let child: ChildProcess | undefined;
      let peer: PeerApi;
      let ch: ReturnType<typeof openChannel>;

      beforeAll(async () => {
        if (serverKind === 'python') child = await startPython(sock);
        else server = await serveUnix([[PEER as never, peerImpl]], sock, { engine: serverKind });
        ({ ch, peer } = api(`unix://${sock}`, client));
      });

      afterAll(async () => {
        ch?.close();
        if (server) await shutdownServer(server, 500);
        await stopChild(child);
        fs.rmSync(dir, { recursive: true, force: true });
      });

      it('echoes a message, with ASCII and binary metadata both ways', async () => {
        const md = new grpc.Metadata();
        md.set('x-kemu-text', 'hello');
        md.set('x-kemu-raw-bin', Buffer.from([0, 1, 2, 255]));
        let headers: grpc.Metadata | undefined;
        let final: grpc.StatusObject | undefined;
        const reply = await peer.Echo(Buffer.from('ping'), {
          metadata: md,
          onMetadata: (m) => (headers = m),
          onStatus: (s) => (final = s),
        });
        expect(reply.toString()).toBe('ping');
        expect(headers?.get('x-kemu-text')).toEqual(['hello']);
        expect(headers?.get('x-kemu-raw-bin')).toEqual([Buffer.from([0, 1, 2, 255])]);
        expect(final?.code).toBe(grpc.status.OK);
        expect(final?.metadata.get('x-kemu-text')).toEqual(['hello']);
        expect(final?.metadata.get('x-kemu-raw-bin')).toEqual([Buffer.from([0, 1, 2, 255])]);
      });

      it('reports every status code with its non-ASCII details and trailing metadata, as grpc-js does', async () => {
        for (let code = 1; code <= 16; code++) {
          const details = `${UNICODE} #${code}`;
          const err = await failure(peer.Fail(Buffer.from(JSON.stringify({ code, details }))));
          expect(err).toBeInstanceOf(Error);
          expect(err.code).toBe(code);
          expect(err.details).toBe(details);
          expect(err.message).toBe(`${code} ${grpc.status[code]}: ${details}`);
          expect(err.metadata.get('x-kemu-reason')).toEqual(['why']);
          expect(err.metadata.get('x-kemu-blob-bin')).toEqual([Buffer.from([0, 255, 1])]);
        }
      });

      it('answers UNIMPLEMENTED for a method the server lacks', async () => {
        expect((await failure(peer.Nope(Buffer.from('')))).code).toBe(grpc.status.UNIMPLEMENTED);
      });

      it('ends a call at its deadline with DEADLINE_EXCEEDED, and the server sees it cancelled', async () => {
        seen.hangCancelled = undefined;
        const t0 = Date.now();
        const err = await failure(peer.Hang(Buffer.from(''), { timeoutMs: 200 }));
        expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
        expect(Date.now() - t0).toBeLessThan(5000);
        if (serverKind !== 'python') await expect(seen.hangCancelled).resolves.toBe(true);
        expect((await peer.Echo(Buffer.from('after'))).toString()).toBe('after');
      });

      it('carries big messages and refuses those over the limits with RESOURCE_EXHAUSTED', async () => {
        expect((await peer.Big(Buffer.from(String(3 * 1024 * 1024)))).length).toBe(3 * 1024 * 1024);
        expect((await peer.Echo(Buffer.alloc(1024 * 1024, 'y'))).length).toBe(1024 * 1024);
        // grpc-js's default receive limit is 4 MiB, and so is ours.
        expect((await failure(peer.Big(Buffer.from(String(5 * 1024 * 1024))))).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
        // A request over the server's 4 MiB limit: the server's answer, while the request is still being sent.
        expect((await failure(peer.Echo(Buffer.alloc(5 * 1024 * 1024)))).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
        expect((await peer.Echo(Buffer.from('still there'))).toString()).toBe('still there');
        const small = api(`unix://${sock}`, client, {
          'grpc.max_receive_message_length': 64 * 1024,
          'grpc.max_send_message_length': 32 * 1024,
        });
        try {
          const recv = await failure(small.peer.Big(Buffer.from(String(100 * 1024))));
          expect(recv.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
          expect(recv.details).toMatch(/larger than max/);
          const send = await failure(small.peer.Echo(Buffer.alloc(40 * 1024)));
          expect(send.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
          expect((await small.peer.Big(Buffer.from('1000'))).length).toBe(1000);
        } finally {
          small.ch.close();
        }
      });

      it('runs many calls in flight on one channel', async () => {
        const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => peer.Echo(Buffer.from(`m${i}`))));
        expect(replies.map(String)).toEqual(Array.from({ length: 200 }, (_, i) => `m${i}`));
      });
    });
  }
}

describe('http2 client connection handling', () => {
  const dir = tmpdir('conn');
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('fails UNAVAILABLE while the socket is absent and works once it appears', async () => {
    const sock = path.join(dir, 'late.sock');
    const { ch, peer } = api(`unix:${sock}`, 'http2', {
      'grpc.initial_reconnect_backoff_ms': 50,
      'grpc.max_reconnect_backoff_ms': 200,
    });
    let server: GrpcServer | undefined;
    try {
      const err = await failure(peer.Echo(Buffer.from('early')));
      expect(err.code).toBe(grpc.status.UNAVAILABLE);
      expect(err.details).toMatch(/ENOENT/);
      // Calls during the backoff fail at once rather than hang.
      expect((await failure(peer.Echo(Buffer.from('early')))).code).toBe(grpc.status.UNAVAILABLE);
      server = await serveUnix([[PEER as never, peerImpl]], sock, { engine: 'http2' });
      const deadline = Date.now() + 5000;
      for (;;) {
        const r = await peer.Echo(Buffer.from('late')).catch((e: grpc.ServiceError) => e);
        if (Buffer.isBuffer(r)) {
          expect(r.toString()).toBe('late');
          break;
        }
        expect(r.code).toBe(grpc.status.UNAVAILABLE);
        if (Date.now() > deadline) throw new Error('the channel never connected');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      ch.close();
      if (server) await shutdownServer(server, 500);
    }
  });

  it.runIf(canPython)('fails a call UNAVAILABLE when the server is killed mid-call, and reconnects to its successor', async () => {
    const sock = path.join(dir, 'killed.sock');
    let child = await startPython(sock);
    const { ch, peer } = api(`unix://${sock}`, 'http2', { 'grpc.initial_reconnect_backoff_ms': 50 });
    try {
      expect((await peer.Echo(Buffer.from('before'))).toString()).toBe('before');
      const inflight = failure(peer.Hang(Buffer.from('')));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await stopChild(child, 'SIGKILL');
      const err = await inflight;
      expect(err.code).toBe(grpc.status.UNAVAILABLE);
      fs.rmSync(sock, { force: true });
      child = await startPython(sock);
      expect((await peer.Echo(Buffer.from('after'))).toString()).toBe('after');
    } finally {
      ch.close();
      await stopChild(child);
    }
  });

  it('close() cancels calls in flight and refuses later ones', async () => {
    const sock = path.join(dir, 'close.sock');
    const server = await serveUnix([[PEER as never, peerImpl]], sock, { engine: 'http2' });
    const { ch, peer } = api(`unix://${sock}`, 'http2');
    try {
      expect((await peer.Echo(Buffer.from('x'))).toString()).toBe('x');
      const inflight = failure(peer.Hang(Buffer.from('')));
      await new Promise((resolve) => setTimeout(resolve, 50));
      ch.close();
      expect((await inflight).code).toBe(grpc.status.CANCELLED);
      const later = await failure(peer.Echo(Buffer.from('y')));
      expect(later.code).toBe(grpc.status.UNAVAILABLE);
      expect(later.details).toBe('Channel has been shut down');
    } finally {
      await shutdownServer(server, 500);
    }
  });

  it('an aborted signal cancels the call (CANCELLED) and the server sees it', async () => {
    const sock = path.join(dir, 'abort.sock');
    const server = await serveUnix([[PEER as never, peerImpl]], sock, { engine: 'http2' });
    const { ch, peer } = api(`unix://${sock}`, 'http2');
    try {
      seen.hangCancelled = undefined;
      const ac = new AbortController();
      const inflight = failure(peer.Hang(Buffer.from(''), { signal: ac.signal }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      ac.abort();
      expect((await inflight).code).toBe(grpc.status.CANCELLED);
      await expect(seen.hangCancelled).resolves.toBe(true);
      // Already aborted: the call never starts.
      expect((await failure(peer.Echo(Buffer.from('x'), { signal: ac.signal }))).code).toBe(grpc.status.CANCELLED);
    } finally {
      ch.close();
      await shutdownServer(server, 500);
    }
  });

  it('rejects an endpoint that is not a unix socket', () => {
    expect(() => openChannel('dns:///example.org:443')).toThrow(/not a unix socket/);
    expect(() => new Http2GrpcChannel('unix://')).toThrow(/no usable socket path/);
  });
});

describe('client selection', () => {
  it('parses KEMU_GRPC_CLIENT and defaults to the http2 client', () => {
    expect(parseGrpcClient(undefined)).toBeUndefined();
    expect(parseGrpcClient('grpc-js')).toBe('grpc-js');
    expect(() => parseGrpcClient('grpc-go')).toThrow(/unknown gRPC client "grpc-go": use grpc-js or http2/);
    expect(defaultGrpcClient({})).toBe('http2');
    expect(defaultGrpcClient({ KEMU_GRPC_CLIENT: 'grpc-js' })).toBe('grpc-js');
    expect(openChannel('unix:///tmp/x.sock', { client: 'grpc-js' }).client).toBe('grpc-js');
  });
});

/**
 * A raw node:http2 server: each test says how to answer the next call. Records the request headers
 * and body, and the number of sessions opened.
 */
describe('http2 client against a misbehaving server', () => {
  const dir = tmpdir('raw');
  const sock = path.join(dir, 'raw.sock');
  const raw = http2.createServer();
  let answer: (stream: http2.ServerHttp2Stream) => void = () => {};
  let lastHeaders: http2.IncomingHttpHeaders = {};
  let lastBody = Buffer.alloc(0);
  let sessions = 0;
  const live = new Set<http2.ServerHttp2Session>();
  raw.on('session', (s) => {
    sessions++;
    live.add(s);
    s.on('close', () => live.delete(s));
    s.on('error', () => {});
  });
  raw.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    lastHeaders = headers;
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      lastBody = Buffer.concat(chunks);
      answer(stream);
    });
  });
  let ch: Http2GrpcChannel;
  let peer: PeerApi;
  const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };
  const framed = (body: Buffer, compressed = false) => {
    const out = Buffer.alloc(5 + body.length);
    out[0] = compressed ? 1 : 0;
    out.writeUInt32BE(body.length, 1);
    body.copy(out, 5);
    return out;
  };
  const respondWith = (data: Buffer[], trailers: http2.OutgoingHttpHeaders, headers: http2.OutgoingHttpHeaders = OK_HEADERS) => {
    answer = (stream) => {
      stream.respond(headers, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers(trailers));
      for (const d of data) stream.write(d);
      stream.end();
    };
  };

  beforeAll(async () => {
    await new Promise<void>((resolve) => raw.listen(sock, resolve));
    ch = new Http2GrpcChannel(`unix://${sock}`, { 'grpc.initial_reconnect_backoff_ms': 50 });
    peer = promiseClient(PEER as never, ch) as unknown as PeerApi;
  });

  afterAll(async () => {
    ch.close();
    for (const s of live) s.destroy();
    await new Promise((resolve) => raw.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('sends the headers and framing gRPC requires; metadata cannot override them', async () => {
    respondWith([framed(Buffer.from('ok'))], { 'grpc-status': '0' });
    const md = new grpc.Metadata();
    md.set('x-kemu-a', 'b');
    // A reserved header smuggled in as metadata must not replace the real one.
    (md as unknown as { internalRepr: Map<string, unknown[]> }).internalRepr.set('content-type', ['text/plain']);
    expect((await peer.Echo(Buffer.from('hello'), { metadata: md, timeoutMs: 5000 })).toString()).toBe('ok');
    expect(lastHeaders[':method']).toBe('POST');
    expect(lastHeaders[':path']).toBe('/kemu.test.Peer/Echo');
    expect(lastHeaders['content-type']).toBe('application/grpc');
    expect(lastHeaders.te).toBe('trailers');
    expect(lastHeaders['user-agent']).toMatch(/^grpc-node-kemu\/\d/);
    expect(lastHeaders['x-kemu-a']).toBe('b');
    expect(lastHeaders['grpc-timeout']).toMatch(/^\d{1,8}m$/);
    expect(Number(String(lastHeaders['grpc-timeout']).slice(0, -1))).toBeLessThanOrEqual(5000);
    expect(lastBody).toEqual(framed(Buffer.from('hello')));
    // Calls without metadata or deadline share their headers; nothing of an earlier call leaks in.
    for (const text of ['plain1', 'plain2']) {
      expect((await peer.Echo(Buffer.from(text))).toString()).toBe('ok');
      expect(lastHeaders[':path']).toBe('/kemu.test.Peer/Echo');
      expect(lastHeaders['content-type']).toBe('application/grpc');
      expect(lastHeaders['x-kemu-a']).toBeUndefined();
      expect(lastHeaders['grpc-timeout']).toBeUndefined();
      expect(lastBody).toEqual(framed(Buffer.from(text)));
    }
    await peer.Big(Buffer.from('1'));
    expect(lastHeaders[':path']).toBe('/kemu.test.Peer/Big');
  });

  it('maps HTTP statuses without a gRPC status as the spec says', async () => {
    const table: [number, grpc.status][] = [
      [400, grpc.status.INTERNAL],
      [401, grpc.status.UNAUTHENTICATED],
      [403, grpc.status.PERMISSION_DENIED],
      [404, grpc.status.UNIMPLEMENTED],
      [429, grpc.status.UNAVAILABLE],
      [502, grpc.status.UNAVAILABLE],
      [503, grpc.status.UNAVAILABLE],
      [504, grpc.status.UNAVAILABLE],
      [500, grpc.status.UNKNOWN],
    ];
    for (const [http, code] of table) {
      answer = (stream) => stream.respond({ ':status': http, 'content-type': 'text/html' }, { endStream: true });
      const err = await failure(peer.Echo(Buffer.from('x')));
      expect([http, err.code, err.details]).toEqual([http, code, `Received HTTP status code ${http}`]);
    }
    // An error page in the body is not read as an oversized gRPC message.
    answer = (stream) => {
      stream.respond({ ':status': 502, 'content-type': 'text/html' });
      stream.end('<html>bad gateway</html>'.repeat(10));
    };
    expect((await failure(peer.Echo(Buffer.from('x')))).code).toBe(grpc.status.UNAVAILABLE);
  });

  it('takes the status from a trailers-only response and percent-decodes grpc-message', async () => {
    answer = (stream) =>
      stream.respond({ ...OK_HEADERS, 'grpc-status': '9', 'grpc-message': 'caf%C3%A9 100%25 %ZZ' }, { endStream: true });
    const err = await failure(peer.Echo(Buffer.from('x')));
    expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    // Not valid percent-encoding as a whole: shown as received rather than dropped.
    expect(err.details).toBe('caf%C3%A9 100%25 %ZZ');
    answer = (stream) =>
      stream.respond({ ...OK_HEADERS, 'grpc-status': '9', 'grpc-message': 'caf%C3%A9 100%25' }, { endStream: true });
    expect((await failure(peer.Echo(Buffer.from('x')))).details).toBe('café 100%');
  });

  it('refuses a compressed message without a negotiated encoding (INTERNAL), and decodes gzip', async () => {
    respondWith([framed(Buffer.from('zzz'), true)], { 'grpc-status': '0' });
    const err = await failure(peer.Echo(Buffer.from('x')));
    expect(err.code).toBe(grpc.status.INTERNAL);
    expect(err.details).toBe('Received compressed message but "grpc-encoding" header was identity');
    respondWith([framed(zlib.gzipSync(Buffer.from('unzipped')), true)], { 'grpc-status': '0' }, { ...OK_HEADERS, 'grpc-encoding': 'gzip' });
    expect((await peer.Echo(Buffer.from('x'))).toString()).toBe('unzipped');
    respondWith([framed(Buffer.from('zzz'), true)], { 'grpc-status': '0' }, { ...OK_HEADERS, 'grpc-encoding': 'snappy' });
    expect((await failure(peer.Echo(Buffer.from('x')))).code).toBe(grpc.status.INTERNAL);
  });

  it('requires exactly one response message on OK (UNIMPLEMENTED otherwise, as grpc-js)', async () => {
    respondWith([], { 'grpc-status': '0' });
    expect(await failure(peer.Echo(Buffer.from('x')))).toMatchObject({ code: grpc.status.UNIMPLEMENTED, details: 'No message received' });
    respondWith([framed(Buffer.from('a')), framed(Buffer.from('b'))], { 'grpc-status': '0' });
    expect(await failure(peer.Echo(Buffer.from('x')))).toMatchObject({
      code: grpc.status.UNIMPLEMENTED,
      details: 'Too many responses received',
    });
    // A message split across DATA frames is reassembled.
    const whole = framed(Buffer.from('split message'));
    respondWith([whole.subarray(0, 3), whole.subarray(3, 9), whole.subarray(9)], { 'grpc-status': '0' });
    expect((await peer.Echo(Buffer.from('x'))).toString()).toBe('split message');
  });

  it('maps RST_STREAM codes the way grpc-js does', async () => {
    const table: [number, grpc.status][] = [
      [http2.constants.NGHTTP2_REFUSED_STREAM, grpc.status.UNAVAILABLE],
      [http2.constants.NGHTTP2_CANCEL, grpc.status.CANCELLED],
      [http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, grpc.status.RESOURCE_EXHAUSTED],
      [http2.constants.NGHTTP2_INTERNAL_ERROR, grpc.status.INTERNAL],
      [http2.constants.NGHTTP2_NO_ERROR, grpc.status.INTERNAL],
      [http2.constants.NGHTTP2_PROTOCOL_ERROR, grpc.status.INTERNAL],
    ];
    for (const [rst, code] of table) {
      answer = (stream) => stream.close(rst);
      const err = await failure(peer.Echo(Buffer.from('x')));
      expect([rst, err.code]).toEqual([rst, code]);
    }
    // The channel survives resets of single streams.
    respondWith([framed(Buffer.from('fine'))], { 'grpc-status': '0' });
    expect((await peer.Echo(Buffer.from('x'))).toString()).toBe('fine');
  });

  it('after a GOAWAY the call in flight completes and the next call opens a new session', async () => {
    answer = (stream) => {
      stream.session!.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id);
      stream.respond(OK_HEADERS, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(framed(Buffer.from('last')));
    };
    const before = sessions;
    expect((await peer.Echo(Buffer.from('x'))).toString()).toBe('last');
    respondWith([framed(Buffer.from('again'))], { 'grpc-status': '0' });
    expect((await peer.Echo(Buffer.from('x'))).toString()).toBe('again');
    expect(sessions).toBe(before + 1);
  });

  it('a connection dropped mid-call fails the call UNAVAILABLE, and the next call reconnects', async () => {
    answer = (stream) => stream.session!.destroy();
    const before = sessions;
    const err = await failure(peer.Echo(Buffer.from('x')));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    respondWith([framed(Buffer.from('back'))], { 'grpc-status': '0' });
    expect((await peer.Echo(Buffer.from('x'))).toString()).toBe('back');
    expect(sessions).toBe(before + 1);
  });

  it('shares one session between services and calls', async () => {
    respondWith([framed(Buffer.from('s'))], { 'grpc-status': '0' });
    const before = sessions;
    const other = promiseClient({ Other: { ...method('Echo'), path: '/kemu.test.Other/Echo' } } as never, ch) as unknown as {
      Other: (b: Buffer) => Promise<Buffer>;
    };
    await Promise.all([peer.Echo(Buffer.from('1')), other.Other(Buffer.from('2')), peer.Big(Buffer.from('3'))]);
    expect(sessions).toBe(before);
  });

  it('a deadline that passes before the response arrives cancels the stream', async () => {
    let reset: Promise<number> | undefined;
    answer = (stream) => {
      reset = new Promise((resolve) => stream.on('close', () => resolve(stream.rstCode)));
    };
    const err = await failure(peer.Echo(Buffer.from('x'), { timeoutMs: 100 }));
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(err.message).toMatch(/^4 DEADLINE_EXCEEDED: Deadline exceeded/);
    await expect(reset).resolves.toBe(http2.constants.NGHTTP2_CANCEL);
  });
});
