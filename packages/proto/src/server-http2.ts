// A lean gRPC server engine on node:http2: unary and server-streaming calls, served with the handler
// shape grpc-js uses (so `implementService` output runs unchanged on either engine). It exists because
// grpc-js spends most of a small unary call's server CPU in its per-call interceptor, listener and
// metadata machinery; this engine does only what the gRPC-over-HTTP/2 protocol needs.
import { EventEmitter } from 'node:events';
import http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { AuthorityRewriter } from './server-authority';

const { status } = grpc;

/** The subset of grpc-js channel options this engine honours (same keys, so callers can switch engines). */
export type Http2GrpcServerOptions = Pick<
  grpc.ServerOptions,
  | 'grpc.max_receive_message_length'
  | 'grpc.max_send_message_length'
  | 'grpc.max_concurrent_streams'
  | 'grpc-node.max_session_memory'
>;

const DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024;
const TIMEOUT_RE = /^(\d{1,8})\s*([HMSmun])$/;
const TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };
// Request headers that are transport, not metadata a handler should see (as grpc-js strips them).
const NOT_METADATA = new Set(['grpc-timeout', 'grpc-encoding', 'grpc-accept-encoding', 'accept-encoding', 'te', 'content-type']);

const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = { ':status': 200, 'content-type': 'application/grpc+proto' };
const WAIT_FOR_TRAILERS: http2.ServerStreamResponseOptions = { waitForTrailers: true };
const END_STREAM: http2.ServerStreamResponseOptions = { endStream: true };
// grpc-message is optional and empty on success; leaving it out saves both peers a header.
const OK_TRAILERS: http2.OutgoingHttpHeaders = { 'grpc-status': '0' };

interface StatusLike {
  code: number;
  details: string;
  metadata?: grpc.Metadata | null;
}

/**
 * grpc-message is percent-encoded: every byte outside printable ASCII, and `%` itself (gRPC over HTTP/2,
 * "Responses"). Plain ASCII — the common case — passes through untouched.
 */
export function encodeGrpcMessage(message: string): string {
  if (!/[^\x20-\x24\x26-\x7e]/.test(message)) return message;
  let out = '';
  for (const byte of Buffer.from(message, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** What anything passed to a callback or emitted as 'error' means as a status (grpc-js's rules). */
function toStatus(err: unknown, trailer?: grpc.Metadata): StatusLike {
  const e = err as { code?: unknown; details?: unknown; message?: unknown; metadata?: grpc.Metadata };
  const result: StatusLike = {
    code: status.UNKNOWN,
    details: typeof e?.message === 'string' ? e.message : 'Unknown Error',
    metadata: trailer ?? e?.metadata ?? null,
  };
  if (typeof e?.code === 'number' && Number.isInteger(e.code)) {
    result.code = e.code;
    if (typeof e.details === 'string') result.details = e.details;
  }
  return result;
}

/** A gRPC length-prefixed message (uncompressed): flag byte, 4-byte big-endian length, bytes. */
export function frame(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(message.length + 5);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  message.copy(out, 5);
  return out;
}

interface Method {
  path: string;
  responseStream: boolean;
  requestStream: boolean;
  serialize: (value: unknown) => Buffer;
  deserialize: (bytes: Buffer) => unknown;
  fn: (...args: any[]) => unknown;
}

/**
 * Incremental reader of length-prefixed messages. Sizes are checked from the 5-byte prefix, before any
 * body is buffered, so an oversized message is refused without being held in memory.
 */
export class MessageReader {
  private pending: Buffer | null = null;
  readonly messages: { compressed: boolean; body: Buffer }[] = [];
  constructor(private readonly max: number) {}

  /** Returns an error text when the stream carries something this reader refuses. */
  push(chunk: Buffer): string | undefined {
    let buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = null;
    for (;;) {
      if (buf.length < 5) break;
      const length = buf.readUInt32BE(1);
      if (this.max !== -1 && length > this.max) return `Received message larger than max (${length} vs ${this.max})`;
      if (buf.length < 5 + length) break;
      this.messages.push({ compressed: buf[0] === 1, body: buf.subarray(5, 5 + length) });
      buf = buf.subarray(5 + length);
    }
    if (buf.length > 0) this.pending = buf;
    return undefined;
  }

  get incomplete(): boolean {
    return this.pending !== null;
  }
}

/** The call object handlers receive: grpc-js's ServerUnaryCall / ServerWritableStream surface. */
class Http2ServerCall extends EventEmitter {
  cancelled = false;
  request: unknown = undefined;
  private finished = false;
  private headersSent = false;
  private metadataCache: grpc.Metadata | undefined;
  private deadline = Infinity;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly headers: http2.IncomingHttpHeaders,
    private readonly method: Method,
    private readonly maxSend: number,
    private readonly rewriter: AuthorityRewriter | undefined,
  ) {
    super();
  }

  get metadata(): grpc.Metadata {
    if (!this.metadataCache) {
      const md = grpc.Metadata.fromHttp2Headers(this.headers);
      for (const key of NOT_METADATA) md.remove(key);
      this.metadataCache = md;
    }
    return this.metadataCache;
  }

  /** Arms the grpc-timeout deadline; returns false (after answering) when the header is malformed. */
  armDeadline(value: string): boolean {
    const m = TIMEOUT_RE.exec(value);
    if (!m) {
      this.sendStatus({ code: status.INTERNAL, details: `Invalid grpc-timeout value "${value}"` });
      return false;
    }
    const ms = Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!;
    this.deadline = Date.now() + ms;
    this.timer = setTimeout(() => {
      this.sendStatus({ code: status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' });
      this.cancel();
    }, ms);
    this.timer.unref?.();
    return true;
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    this.emit('cancelled', 'cancelled');
  }

  getPeer(): string {
    const socket = this.stream.session?.socket;
    return socket?.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : 'unknown';
  }

  getDeadline(): number {
    return this.deadline;
  }

  getPath(): string {
    return this.method.path;
  }

  /** The authority the client sent, also where the unix-socket front end had to replace it. */
  getHost(): string {
    return this.rewriter?.originalAuthority ?? (this.headers[':authority'] as string | undefined) ?? 'localhost';
  }

  sendMetadata(md: grpc.Metadata): void {
    if (this.headersSent || this.finished || this.stream.destroyed) return;
    this.headersSent = true;
    this.stream.respond({ ...RESPONSE_HEADERS, ...md.toHttp2Headers() }, WAIT_FOR_TRAILERS);
  }

  /** Serializes and frames a response; on failure answers the call and returns undefined. */
  private encodeMessage(value: unknown): Buffer | undefined {
    let body: Buffer;
    try {
      body = this.method.serialize(value);
    } catch (err) {
      this.sendStatus({ code: status.INTERNAL, details: `Error serializing response: ${(err as Error)?.message ?? err}` });
      return undefined;
    }
    if (this.maxSend !== -1 && body.length > this.maxSend) {
      this.sendStatus({
        code: status.RESOURCE_EXHAUSTED,
        details: `Sent message larger than max (${body.length} vs. ${this.maxSend})`,
      });
      return undefined;
    }
    return frame(body);
  }

  /** Unary answer: headers, the one message and OK trailers, handed to nghttp2 in one go. */
  sendUnary(value: unknown, trailer?: grpc.Metadata): void {
    if (this.finished || this.stream.destroyed) return;
    const data = this.encodeMessage(value);
    if (!data) return;
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    if (!this.headersSent) {
      this.headersSent = true;
      this.stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
    }
    const trailers = trailer ? { ...OK_TRAILERS, ...trailer.toHttp2Headers() } : OK_TRAILERS;
    this.stream.once('wantTrailers', () => this.stream.sendTrailers(trailers));
    this.stream.end(data);
  }

  /** Server-streaming write, with the stream's back-pressure signal (wait for 'drain' on false). */
  write(value: unknown): boolean {
    if (this.finished || this.stream.destroyed) return false;
    const data = this.encodeMessage(value);
    if (!data) return false;
    if (!this.headersSent) {
      this.headersSent = true;
      this.stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
    }
    return this.stream.write(data);
  }

  /** Ends a server-streaming call with OK (grpc-js: `call.end()`). */
  end(trailer?: grpc.Metadata): void {
    this.sendStatus({ code: status.OK, details: '', metadata: trailer ?? null });
  }

  sendStatus(st: StatusLike): void {
    if (this.finished || this.stream.destroyed || this.stream.closed) {
      this.finished = true;
      return;
    }
    this.finished = true;
    if (this.timer) clearTimeout(this.timer);
    const trailers: http2.OutgoingHttpHeaders = { 'grpc-status': String(st.code) };
    if (st.details) trailers['grpc-message'] = encodeGrpcMessage(st.details);
    if (st.metadata) Object.assign(trailers, st.metadata.toHttp2Headers());
    if (this.headersSent) {
      this.stream.once('wantTrailers', () => this.stream.sendTrailers(trailers));
      this.stream.end();
    } else {
      // Trailers-only response: status in the one HEADERS frame, which ends the stream.
      this.headersSent = true;
      this.stream.respond({ ...RESPONSE_HEADERS, ...trailers }, END_STREAM);
    }
  }

  get done(): boolean {
    return this.finished;
  }
}

// grpc-js streams report failure by emitting 'error'; the engine's call turns that into the status.
class Http2ServerWritableCall extends Http2ServerCall {
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'error') {
      this.sendStatus(toStatus(args[0]));
      return true;
    }
    return super.emit(event, ...args);
  }
}

function trailersOnly(stream: http2.ServerHttp2Stream, code: number, details: string): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ...RESPONSE_HEADERS, 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) }, END_STREAM);
}

/**
 * gRPC server on node:http2 with grpc-js's registration and lifecycle API (`addService`, `bindAsync`,
 * `tryShutdown`, `forceShutdown`), for unix sockets and TCP without TLS.
 */
export class Http2GrpcServer {
  private readonly methods = new Map<string, Method>();
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  /** Sessions whose connection runs through an authority rewriter (see server-front-end). */
  private readonly rewriters = new WeakMap<http2.Http2Session, AuthorityRewriter>();
  private injecting: Duplex | undefined;
  private readonly maxReceive: number;
  private readonly maxSend: number;
  private readonly server: http2.Http2Server;
  private bound = false;
  private shuttingDown = false;

  constructor(options: Http2GrpcServerOptions = {}) {
    this.maxReceive = options['grpc.max_receive_message_length'] ?? DEFAULT_MAX_RECEIVE;
    this.maxSend = options['grpc.max_send_message_length'] ?? -1;
    this.server = http2.createServer({
      // node:http2 counts a response's queued bytes against the session's memory and, when the client
      // resets the stream before they are sent (a reply over its receive limit, a cancelled call), drops
      // them without taking them off the count: a few such replies and the session refuses every later
      // stream with ENHANCE_YOUR_CALM. grpc-js turns the limit off for the same reason; so does this engine.
      maxSessionMemory: options['grpc-node.max_session_memory'] ?? Number.MAX_SAFE_INTEGER,
      settings: {
        maxConcurrentStreams: options['grpc.max_concurrent_streams'] ?? 2 ** 31 - 1,
        // Small RPCs never wait on flow control; a larger window avoids WINDOW_UPDATE chatter on big ones.
        initialWindowSize: 1024 * 1024,
      },
    });
    this.server.on('session', (session) => {
      this.sessions.add(session);
      if (this.injecting instanceof AuthorityRewriter) this.rewriters.set(session, this.injecting);
      session.on('close', () => this.sessions.delete(session));
      session.on('error', () => {});
      if (this.shuttingDown) session.close();
    });
    this.server.on('stream', (stream, headers) => this.onStream(stream, headers));
    // After binding, a failed accept (EMFILE, say) costs that one connection, not the process.
    this.server.on('error', () => {});
  }

  addService(definition: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation): void {
    if (this.bound) throw new Error('addService must be called before the server is bound');
    for (const [name, def] of Object.entries(definition)) {
      const fn = implementation[name] ?? implementation[def.originalName ?? ''];
      if (typeof fn !== 'function') continue;
      if (this.methods.has(def.path)) throw new Error(`method ${def.path} is already registered`);
      this.methods.set(def.path, {
        path: def.path,
        requestStream: def.requestStream,
        responseStream: def.responseStream,
        serialize: def.responseSerialize as (value: unknown) => Buffer,
        deserialize: def.requestDeserialize as (bytes: Buffer) => unknown,
        fn: fn as (...args: any[]) => unknown,
      });
    }
  }

  /** grpc-js compatible bind: `unix:///path`, `unix:path` or `host:port` (plaintext only). */
  bindAsync(address: string, _credentials: grpc.ServerCredentials, callback: (err: Error | null, port: number) => void): void {
    const onError = (err: Error) => callback(err, 0);
    this.server.once('error', onError);
    const done = () => {
      this.server.off('error', onError);
      this.bound = true;
      const a = this.server.address();
      callback(null, typeof a === 'object' && a ? a.port : 0);
    };
    if (address.startsWith('unix:')) {
      this.server.listen(address.startsWith('unix://') ? address.slice(7) : address.slice(5), done);
    } else {
      const i = address.lastIndexOf(':');
      this.server.listen(Number(address.slice(i + 1)), address.slice(0, i).replace(/^\[|\]$/g, ''), done);
    }
  }

  /**
   * grpc-js's connection injector: serves connections accepted elsewhere (the unix-socket front end) as if
   * this server had accepted them.
   */
  createConnectionInjector(_credentials: grpc.ServerCredentials): { injectConnection(connection: Duplex): void } {
    this.bound = true;
    return {
      injectConnection: (connection) => {
        if (this.shuttingDown) {
          connection.destroy();
          return;
        }
        // node:http2 creates the session (and emits 'session') synchronously.
        this.injecting = connection;
        try {
          this.server.emit('connection', connection);
        } finally {
          this.injecting = undefined;
        }
      },
    };
  }

  /** Stops accepting connections and streams, lets in-flight calls finish, then calls back. */
  tryShutdown(callback: (err?: Error) => void): void {
    this.shuttingDown = true;
    let pending = this.sessions.size + 1;
    const step = () => {
      if (--pending === 0) callback();
    };
    for (const session of this.sessions) {
      if (session.closed || session.destroyed) step();
      else session.close(step);
    }
    if (this.server.listening) this.server.close(() => step());
    else step();
  }

  /** Drops every connection at once (in-flight calls are cancelled). */
  forceShutdown(): void {
    this.shuttingDown = true;
    for (const session of this.sessions) session.destroy();
    if (this.server.listening) this.server.close();
  }

  private onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    stream.on('error', () => {});
    const contentType = headers['content-type'];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      stream.respond({ ':status': 415 }, END_STREAM);
      stream.resume();
      return;
    }
    const path = headers[':path'] as string;
    const method = this.methods.get(path);
    if (!method) {
      trailersOnly(stream, status.UNIMPLEMENTED, `The server does not implement the method ${path}`);
      stream.resume();
      return;
    }
    if (method.requestStream) {
      trailersOnly(stream, status.UNIMPLEMENTED, `${path}: client-streaming calls are not supported by this server`);
      stream.resume();
      return;
    }
    const rewriter = this.rewriters.get(stream.session!);
    const call = method.responseStream
      ? new Http2ServerWritableCall(stream, headers, method, this.maxSend, rewriter)
      : new Http2ServerCall(stream, headers, method, this.maxSend, rewriter);
    // Closed before the call was answered: the client went away or reset it.
    stream.on('close', () => {
      if (!call.done) call.cancel();
    });
    if (method.responseStream) stream.on('drain', () => call.emit('drain'));
    const timeout = headers['grpc-timeout'];
    if (typeof timeout === 'string' && !call.armDeadline(timeout)) {
      stream.resume();
      return;
    }
    const encoding = headers['grpc-encoding'];
    const reader = new MessageReader(this.maxReceive);
    let failed = false;
    stream.on('data', (chunk: Buffer) => {
      if (failed) return;
      const err = reader.push(chunk);
      if (!err && reader.messages.length <= 1) return;
      failed = true;
      call.sendStatus(
        err
          ? { code: status.RESOURCE_EXHAUSTED, details: err }
          : {
              code: status.UNIMPLEMENTED,
              details: `Received a second request message for ${method.responseStream ? 'server streaming' : 'unary'} method ${path}`,
            },
      );
      // The answer is complete: ask the client to stop sending the rest of the request (RFC 9113 8.1),
      // rather than reading, say, the remainder of an oversized message. Sent after the status.
      stream.close(http2.constants.NGHTTP2_NO_ERROR);
    });
    stream.on('end', () => {
      if (failed || call.done) return;
      const first = reader.messages[0];
      if (!first || reader.incomplete) {
        call.sendStatus({
          code: status.UNIMPLEMENTED,
          details: `Received no request message for ${method.responseStream ? 'server streaming' : 'unary'} method ${path}`,
        });
        return;
      }
      if (first.compressed) {
        this.decompress(first.body, typeof encoding === 'string' ? encoding : 'identity', (err, body) => {
          if (err) call.sendStatus(err);
          else this.dispatch(call, method, body!);
        });
        return;
      }
      this.dispatch(call, method, first.body);
    });
  }

  private decompress(body: Buffer, encoding: string, done: (err: StatusLike | null, body?: Buffer) => void): void {
    if (encoding !== 'gzip' && encoding !== 'deflate') {
      done({
        code: encoding === 'identity' ? status.INTERNAL : status.UNIMPLEMENTED,
        details:
          encoding === 'identity'
            ? 'Received compressed message but "grpc-encoding" header was identity'
            : `Received message compressed with unsupported encoding "${encoding}"`,
      });
      return;
    }
    const opts: zlib.ZlibOptions = this.maxReceive === -1 ? {} : { maxOutputLength: this.maxReceive };
    const cb = (err: Error | null, out: Buffer) => {
      if (!err) done(null, out);
      else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        done({ code: status.RESOURCE_EXHAUSTED, details: `Received message that decompresses to a size larger than ${this.maxReceive}` });
      else done({ code: status.INTERNAL, details: 'Failed to decompress message' });
    };
    if (encoding === 'gzip') zlib.gunzip(body, opts, cb);
    else zlib.inflate(body, opts, cb);
  }

  private dispatch(call: Http2ServerCall, method: Method, body: Buffer): void {
    try {
      call.request = method.deserialize(body);
    } catch (err) {
      call.sendStatus({ code: status.INTERNAL, details: `Error deserializing request: ${(err as Error)?.message ?? err}` });
      return;
    }
    try {
      if (method.responseStream) {
        method.fn(call);
      } else {
        method.fn(call, (err: unknown, value?: unknown, trailer?: grpc.Metadata) => {
          if (err) call.sendStatus(toStatus(err, trailer));
          else call.sendUnary(value, trailer);
        });
      }
    } catch {
      call.sendStatus({ code: status.UNKNOWN, details: 'Unknown error' });
    }
  }
}
