// A lean unary gRPC client on node:http2, the counterpart of Http2GrpcServer. grpc-js spends most of a
// small unary call's client CPU in its call, interceptor, filter and resolver layers (and a captured
// stack per call); over a unix socket to one server none of that is needed, so this channel speaks gRPC
// over HTTP/2 directly: one session per channel, connected lazily, reconnected with backoff.
// Streaming RPCs are not offered here: callers that need them keep a grpc-js client.
import http2 from 'node:http2';
import net from 'node:net';
import zlib from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { socketPathFromEndpoint } from './server';
import { frame, MessageReader } from './server-http2';

const { status } = grpc;
const C = http2.constants;

/** The grpc-js channel options this client honours (same keys, so callers can switch clients). */
export type Http2ChannelOptions = Pick<
  grpc.ChannelOptions,
  | 'grpc.max_receive_message_length'
  | 'grpc.max_send_message_length'
  | 'grpc.initial_reconnect_backoff_ms'
  | 'grpc.max_reconnect_backoff_ms'
  | 'grpc.primary_user_agent'
  | 'grpc.secondary_user_agent'
  | 'grpc.default_authority'
>;

/** Per-call options, as grpc-js's CallOptions spell the ones a unary call needs. */
export interface Http2CallOptions {
  /** Absolute deadline (ms since the epoch, or a Date); Infinity or absent for none. */
  deadline?: number | Date;
}

export interface StatusObject {
  code: grpc.status;
  details: string;
  metadata: grpc.Metadata;
}

export type UnaryCallback<Res> = (err: grpc.ServiceError | null, value?: Res) => void;

const DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024;
const USER_AGENT = 'grpc-node-kemu/0.1.0';
const DEFAULT_INITIAL_BACKOFF_MS = 1000;
const DEFAULT_MAX_BACKOFF_MS = 120_000;
const BACKOFF_MULTIPLIER = 1.6;
const BACKOFF_JITTER = 0.2;
// Headers every call carries whatever the caller's metadata says.
const RESERVED = new Set([
  ':method',
  ':path',
  ':scheme',
  ':authority',
  'content-type',
  'te',
  'user-agent',
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
]);

/** The error a failed call reports: grpc-js's ServiceError shape, message `"<code> <NAME>: <details>"`. */
export function callError(st: StatusObject): grpc.ServiceError {
  const err = new Error(`${st.code} ${status[st.code]}: ${st.details}`);
  return Object.assign(err, { code: st.code, details: st.details, metadata: st.metadata }) as grpc.ServiceError;
}

/** HTTP status of a response without a gRPC status, mapped as the gRPC spec's status-code mapping says. */
function mapHttpStatus(code: number): StatusObject {
  let mapped: grpc.status;
  switch (code) {
    case 400:
      mapped = status.INTERNAL;
      break;
    case 401:
      mapped = status.UNAUTHENTICATED;
      break;
    case 403:
      mapped = status.PERMISSION_DENIED;
      break;
    case 404:
      mapped = status.UNIMPLEMENTED;
      break;
    case 429:
    case 502:
    case 503:
    case 504:
      mapped = status.UNAVAILABLE;
      break;
    default:
      mapped = status.UNKNOWN;
  }
  return { code: mapped, details: `Received HTTP status code ${code}`, metadata: new grpc.Metadata() };
}

/** grpc-message is percent-encoded UTF-8; a value that does not decode is shown as received (spec). */
export function decodeGrpcMessage(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** grpc-timeout: at most 8 digits, in the finest unit that fits. */
function formatTimeout(ms: number): string {
  const units: [string, number][] = [
    ['m', 1],
    ['S', 1000],
    ['M', 60_000],
    ['H', 3_600_000],
  ];
  if (ms < 1) return `${Math.max(1, Math.ceil(ms * 1000))}u`;
  for (const [unit, size] of units) {
    const n = Math.ceil(ms / size);
    if (n < 1e8) return `${n}${unit}`;
  }
  return '99999999H';
}

interface SessionEntry {
  session: http2.ClientHttp2Session;
  calls: Set<Http2UnaryCall<any>>;
}

type State = 'idle' | 'connecting' | 'ready' | 'transient-failure' | 'shutdown';

/**
 * One client connection to a gRPC server on a unix socket, shared by every service on it. Its unary
 * request method has grpc-js's `Client.makeUnaryRequest` signature and error shape.
 */
export class Http2GrpcChannel {
  readonly socketPath: string;
  private state: State = 'idle';
  private current: SessionEntry | undefined;
  private waiting: Http2UnaryCall<any>[] = [];
  private lastError = '';
  private backoffMs: number;
  private backoffTimer: NodeJS.Timeout | undefined;
  private readonly initialBackoffMs: number;
  private readonly maxBackoffMs: number;
  readonly maxReceive: number;
  private readonly maxSend: number;
  private readonly authority: string;
  private readonly userAgent: string;
  private readonly plainHeaders = new Map<string, http2.OutgoingHttpHeaders>();

  constructor(
    readonly target: string,
    options: Http2ChannelOptions = {},
  ) {
    this.socketPath = socketPathFromEndpoint(target);
    if (this.socketPath === '' || this.socketPath.includes('\0'))
      throw new Error(`endpoint ${JSON.stringify(target)} names no usable socket path`);
    this.maxReceive = options['grpc.max_receive_message_length'] ?? DEFAULT_MAX_RECEIVE;
    this.maxSend = options['grpc.max_send_message_length'] ?? -1;
    this.initialBackoffMs = options['grpc.initial_reconnect_backoff_ms'] ?? DEFAULT_INITIAL_BACKOFF_MS;
    this.maxBackoffMs = options['grpc.max_reconnect_backoff_ms'] ?? DEFAULT_MAX_BACKOFF_MS;
    this.backoffMs = this.initialBackoffMs;
    this.authority = options['grpc.default_authority'] ?? 'localhost';
    this.userAgent = [options['grpc.primary_user_agent'], USER_AGENT, options['grpc.secondary_user_agent']]
      .filter(Boolean)
      .join(' ');
  }

  getTarget(): string {
    return this.target;
  }

  /** `idle`, `connecting`, `ready`, `transient-failure` (waiting to retry) or `shutdown`. */
  getState(): State {
    return this.state;
  }

  /**
   * Starts a unary call. The callback gets the decoded response, or a ServiceError; exactly once, and
   * never synchronously.
   */
  makeUnaryRequest<Req, Res>(
    path: string,
    serialize: (value: Req) => Buffer,
    deserialize: (bytes: Buffer) => Res,
    request: Req,
    metadata: grpc.Metadata | null | undefined,
    options: Http2CallOptions | null | undefined,
    callback: UnaryCallback<Res>,
  ): Http2UnaryCall<Res> {
    const call = new Http2UnaryCall<Res>(this, path, deserialize, callback);
    if (this.state === 'shutdown') {
      call.failSoon(status.UNAVAILABLE, 'Channel has been shut down');
      return call;
    }
    let body: Buffer;
    try {
      body = serialize(request);
    } catch (err) {
      call.failSoon(status.INTERNAL, `Request message serialization failure: ${(err as Error)?.message ?? err}`);
      return call;
    }
    if (this.maxSend !== -1 && body.length > this.maxSend) {
      call.failSoon(status.RESOURCE_EXHAUSTED, `Sent message larger than max (${body.length} vs. ${this.maxSend})`);
      return call;
    }
    call.data = frame(body);
    call.metadata = metadata ?? undefined;
    const deadline = options?.deadline instanceof Date ? options.deadline.getTime() : options?.deadline;
    if (deadline !== undefined && deadline !== Infinity) {
      if (!call.armDeadline(deadline)) return call;
    }
    switch (this.state) {
      case 'ready':
        call.start(this.current!);
        break;
      case 'idle':
        this.waiting.push(call);
        this.connect();
        break;
      case 'connecting':
        this.waiting.push(call);
        break;
      case 'transient-failure':
        call.failSoon(status.UNAVAILABLE, `No connection established. Last error: ${this.lastError}`);
        break;
    }
    return call;
  }

  /** Closes the session (in-flight calls are cancelled) and refuses further calls. */
  close(): void {
    if (this.state === 'shutdown') return;
    this.state = 'shutdown';
    if (this.backoffTimer) clearTimeout(this.backoffTimer);
    for (const call of this.waiting.splice(0)) call.finish(status.UNAVAILABLE, 'Channel has been shut down');
    const entry = this.current;
    this.current = undefined;
    if (entry) {
      for (const call of [...entry.calls]) call.finish(status.CANCELLED, 'Channel has been shut down');
      entry.session.destroy();
    }
  }

  /** Builds the request headers of a call: the reserved ones win over anything in the metadata. */
  headersFor(path: string, metadata: grpc.Metadata | undefined, timeoutMs: number | undefined): http2.OutgoingHttpHeaders {
    // The common call (no metadata, no deadline) reuses one object per method: node:http2 copies it.
    if (!metadata && timeoutMs === undefined) {
      let cached = this.plainHeaders.get(path);
      if (!cached) {
        cached = this.buildHeaders(path, undefined, undefined);
        this.plainHeaders.set(path, cached);
      }
      return cached;
    }
    return this.buildHeaders(path, metadata, timeoutMs);
  }

  private buildHeaders(path: string, metadata: grpc.Metadata | undefined, timeoutMs: number | undefined): http2.OutgoingHttpHeaders {
    const headers: http2.OutgoingHttpHeaders = metadata ? metadata.toHttp2Headers() : {};
    if (metadata) for (const key of Object.keys(headers)) if (RESERVED.has(key)) delete headers[key];
    headers[':method'] = 'POST';
    headers[':scheme'] = 'http';
    headers[':path'] = path;
    headers[':authority'] = this.authority;
    headers['content-type'] = 'application/grpc';
    headers.te = 'trailers';
    headers['user-agent'] = this.userAgent;
    headers['grpc-accept-encoding'] = 'identity,deflate,gzip';
    if (timeoutMs !== undefined) headers['grpc-timeout'] = formatTimeout(timeoutMs);
    return headers;
  }

  /** A call that ended before its session did. */
  release(entry: SessionEntry, call: Http2UnaryCall<any>): void {
    entry.calls.delete(call);
    // An idle session must not keep the process alive (grpc-js behaves the same).
    if (entry.calls.size === 0 && !entry.session.destroyed) entry.session.unref();
  }

  track(entry: SessionEntry, call: Http2UnaryCall<any>): void {
    if (entry.calls.size === 0) entry.session.ref();
    entry.calls.add(call);
  }

  /** A call that gave up while waiting for the connection (deadline, cancel). */
  unqueue(call: Http2UnaryCall<any>): void {
    const i = this.waiting.indexOf(call);
    if (i !== -1) this.waiting.splice(i, 1);
  }

  private connect(): void {
    this.state = 'connecting';
    const socket = net.connect(this.socketPath);
    socket.on('error', (err) => {
      this.lastError = err.message;
    });
    const session = http2.connect(`http://${this.authority}`, {
      createConnection: () => socket,
      settings: { enablePush: false, initialWindowSize: 1024 * 1024 },
    });
    const entry: SessionEntry = { session, calls: new Set() };
    let connected = false;
    session.on('error', (err) => {
      this.lastError = err.message;
    });
    session.once('connect', () => {
      if (this.state === 'shutdown') {
        session.destroy();
        return;
      }
      connected = true;
      this.state = 'ready';
      this.current = entry;
      this.backoffMs = this.initialBackoffMs;
      const calls = this.waiting.splice(0);
      for (const call of calls) call.start(entry);
      if (entry.calls.size === 0) session.unref();
    });
    // A GOAWAY stops new calls on this session; calls already on it finish (or are refused by the server).
    session.once('goaway', () => {
      this.retire(entry);
      session.close();
    });
    session.once('close', () => {
      if (!connected) {
        this.connectFailed();
        return;
      }
      this.retire(entry);
      for (const call of entry.calls) call.onDisconnect();
    });
  }

  /** Takes a session out of use; the next call connects anew. */
  private retire(entry: SessionEntry): void {
    if (this.current !== entry) return;
    this.current = undefined;
    if (this.state === 'ready') this.state = 'idle';
  }

  private connectFailed(): void {
    if (this.state === 'shutdown') return;
    this.state = 'transient-failure';
    const details = `No connection established. Last error: ${this.lastError}`;
    for (const call of this.waiting.splice(0)) call.finish(status.UNAVAILABLE, details);
    const jitter = 1 + BACKOFF_JITTER * (Math.random() * 2 - 1);
    const wait = Math.min(this.backoffMs, this.maxBackoffMs) * jitter;
    this.backoffMs = Math.min(this.backoffMs * BACKOFF_MULTIPLIER, this.maxBackoffMs);
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = undefined;
      if (this.state === 'transient-failure') this.state = 'idle';
    }, wait);
    this.backoffTimer.unref();
  }
}

/** One unary call on an {@link Http2GrpcChannel}. */
export class Http2UnaryCall<Res> {
  data: Buffer | undefined;
  metadata: grpc.Metadata | undefined;
  /** Called with the response headers as metadata, when set before they arrive. */
  onMetadata: ((md: grpc.Metadata) => void) | undefined = undefined;
  /** Called with the final status (OK included) before the callback. */
  onStatus: ((st: StatusObject) => void) | undefined = undefined;
  private entry: SessionEntry | undefined;
  private stream: http2.ClientHttp2Stream | undefined;
  private done = false;
  private deadline = Infinity;
  private timer: NodeJS.Timeout | undefined;
  private httpStatus = 0;
  private encoding: string | undefined;
  private reader: MessageReader | undefined;
  private received: StatusObject | undefined;
  private connectionDropped = false;
  /** 'end' came with a status: that handler owns the outcome (decompression may still be running). */
  private ended = false;
  private internalError: (Error & { code?: string }) | undefined;

  constructor(
    private readonly channel: Http2GrpcChannel,
    private readonly path: string,
    private readonly deserialize: (bytes: Buffer) => Res,
    private callback: UnaryCallback<Res>,
  ) {}

  /** Cancels the call: CANCELLED for the caller, RST_STREAM(CANCEL) for the server. */
  cancel(): void {
    this.finish(status.CANCELLED, 'Cancelled on client');
  }

  getPath(): string {
    return this.path;
  }

  /** Returns false (having failed the call) when the deadline has already passed. */
  armDeadline(deadline: number): boolean {
    this.deadline = deadline;
    const ms = deadline - Date.now();
    if (ms <= 0) {
      this.failSoon(status.DEADLINE_EXCEEDED, 'Deadline exceeded');
      return false;
    }
    this.timer = setTimeout(() => this.finish(status.DEADLINE_EXCEEDED, `Deadline exceeded after ${(ms / 1000).toFixed(3)}s`), ms);
    // The call's connection keeps the process alive while the call is in flight; the timer need not.
    this.timer.unref();
    return true;
  }

  failSoon(code: grpc.status, details: string): void {
    process.nextTick(() => this.finish(code, details));
  }

  start(entry: SessionEntry): void {
    if (this.done) return;
    const remaining = this.deadline === Infinity ? undefined : Math.max(1, this.deadline - Date.now());
    let stream: http2.ClientHttp2Stream;
    try {
      stream = entry.session.request(this.channel.headersFor(this.path, this.metadata, remaining));
    } catch (err) {
      // The session closed between the state check and now (GOAWAY, socket closed).
      this.finish(status.UNAVAILABLE, `Failed to start call on the connection: ${(err as Error).message}`);
      return;
    }
    this.entry = entry;
    this.stream = stream;
    this.channel.track(entry, this);
    // Module-level listeners find the call through the stream, so no closures are made per call and a
    // finished call can be let go of while Node still holds the stream (see complete()).
    (stream as CallStream)[kCall] = this;
    stream.on('response', streamOnResponse);
    stream.on('data', streamOnData);
    stream.on('trailers', streamOnTrailers);
    stream.on('end', streamOnEnd);
    stream.on('error', streamOnError);
    stream.on('close', streamOnClose);
    stream.end(this.data);
    this.data = undefined;
  }

  /** The session under this call died: give the call a turn to end by itself first (grpc-js does). */
  onDisconnect(): void {
    this.connectionDropped = true;
    setImmediate(() => this.finish(status.UNAVAILABLE, 'Connection dropped'));
  }

  /** @internal */
  onError(err: Error & { code?: string }): void {
    if (err.code !== 'ERR_HTTP2_STREAM_ERROR') this.internalError = err;
  }

  /** @internal */
  onResponse(headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, flags: number): void {
    this.httpStatus = Number(headers[':status']);
    if (flags & C.NGHTTP2_FLAG_END_STREAM) {
      // Trailers-only: the status travels in the one HEADERS frame.
      this.onTrailers(headers);
      return;
    }
    const encoding = headers['grpc-encoding'];
    if (typeof encoding === 'string') this.encoding = encoding;
    if (this.onMetadata) this.onMetadata(grpc.Metadata.fromHttp2Headers(headers));
  }

  /** @internal */
  onData(chunk: Buffer): void {
    if (this.done) return;
    this.reader ??= new MessageReader(this.channel.maxReceive);
    const tooLarge = this.reader.push(chunk);
    if (tooLarge === undefined) return;
    // A server answering an HTTP error with a page of its own: the HTTP status says more.
    if (this.httpStatus !== 0 && this.httpStatus !== 200) {
      const mapped = mapHttpStatus(this.httpStatus);
      this.finish(mapped.code, mapped.details);
    } else {
      this.finish(status.RESOURCE_EXHAUSTED, tooLarge);
    }
  }

  /** @internal */
  onTrailers(headers: http2.IncomingHttpHeaders): void {
    if (this.received) return;
    let metadata: grpc.Metadata;
    try {
      metadata = grpc.Metadata.fromHttp2Headers(headers);
    } catch {
      metadata = new grpc.Metadata();
    }
    const code = headers['grpc-status'];
    if (typeof code === 'string') {
      metadata.remove('grpc-status');
      metadata.remove('grpc-message');
      const message = headers['grpc-message'];
      const n = Number(code);
      this.received = {
        code: Number.isInteger(n) && n >= 0 ? n : status.UNKNOWN,
        details: typeof message === 'string' ? decodeGrpcMessage(message) : '',
        metadata,
      };
    } else if (this.httpStatus !== 0 && this.httpStatus !== 200) {
      this.received = { ...mapHttpStatus(this.httpStatus), metadata };
    } else {
      this.received = { code: status.UNKNOWN, details: 'No status information received', metadata };
    }
  }

  /** All data and trailers are in: the call's outcome is known. */
  /** @internal */
  onEnd(): void {
    if (this.done) return;
    const st = this.received;
    if (!st) return; // no trailers: 'close' decides from the reset code
    this.ended = true;
    if (st.code !== status.OK) {
      this.finish(st.code, st.details, st.metadata);
      return;
    }
    const messages = this.reader?.messages ?? [];
    if (this.reader?.incomplete || messages.length === 0) {
      this.finish(status.UNIMPLEMENTED, 'No message received', st.metadata);
      return;
    }
    if (messages.length > 1) {
      this.finish(status.UNIMPLEMENTED, 'Too many responses received', st.metadata);
      return;
    }
    const { body, compressed } = messages[0]!;
    if (!compressed) {
      this.deliver(body, st);
      return;
    }
    const encoding = this.encoding ?? 'identity';
    if (encoding !== 'gzip' && encoding !== 'deflate') {
      this.finish(
        status.INTERNAL,
        encoding === 'identity'
          ? 'Received compressed message but "grpc-encoding" header was identity'
          : `Compression method not supported: ${encoding}`,
        st.metadata,
      );
      return;
    }
    const max = this.channel.maxReceive;
    const opts: zlib.ZlibOptions = max === -1 ? {} : { maxOutputLength: max };
    const done = (err: Error | null, out: Buffer) => {
      if (!err) this.deliver(out, st);
      else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        this.finish(status.RESOURCE_EXHAUSTED, `Received message that decompresses to a size larger than ${max}`, st.metadata);
      else this.finish(status.INTERNAL, `Failed to decompress ${encoding}-encoded message`, st.metadata);
    };
    if (encoding === 'gzip') zlib.gunzip(body, opts, done);
    else zlib.inflate(body, opts, done);
  }

  private deliver(body: Buffer, st: StatusObject): void {
    if (this.done) return;
    let value: Res;
    try {
      value = this.deserialize(body);
    } catch (err) {
      this.finish(status.INTERNAL, `Response message parsing error: ${(err as Error)?.message ?? err}`);
      return;
    }
    this.settle(st);
    this.complete(null, value);
  }

  /** The stream closed: if no status was delivered, the reset code says why (grpc-js's mapping). */
  /** @internal */
  onClose(): void {
    if (this.done || this.ended) return;
    const stream = this.stream!;
    if (this.received) {
      // Trailers came but the stream was reset before 'end': their status stands.
      if (this.received.code !== status.OK) this.finish(this.received.code, this.received.details, this.received.metadata);
      else this.finish(status.INTERNAL, `Received RST_STREAM with code ${stream.rstCode} (Call ended before the response was read)`);
      return;
    }
    let code: grpc.status;
    let details: string;
    switch (stream.rstCode) {
      case C.NGHTTP2_NO_ERROR:
        if (this.httpStatus !== 0 && this.httpStatus !== 200) {
          ({ code, details } = mapHttpStatus(this.httpStatus));
        } else {
          code = status.INTERNAL;
          details = `Received RST_STREAM with code ${stream.rstCode} (Call ended without gRPC status)`;
        }
        break;
      case C.NGHTTP2_REFUSED_STREAM:
        code = status.UNAVAILABLE;
        details = 'Stream refused by server';
        break;
      case C.NGHTTP2_CANCEL:
        // Node reports a dropped connection as CANCEL on its streams.
        if (this.connectionDropped || this.entry?.session.destroyed) {
          code = status.UNAVAILABLE;
          details = 'Connection dropped';
        } else {
          code = status.CANCELLED;
          details = 'Call cancelled';
        }
        break;
      case C.NGHTTP2_ENHANCE_YOUR_CALM:
        code = status.RESOURCE_EXHAUSTED;
        details = 'Bandwidth exhausted or memory limit exceeded';
        break;
      case C.NGHTTP2_INADEQUATE_SECURITY:
        code = status.PERMISSION_DENIED;
        details = 'Protocol not secure enough';
        break;
      case C.NGHTTP2_INTERNAL_ERROR: {
        const e = this.internalError;
        if (e && (e.code === 'ECONNRESET' || e.code === 'ETIMEDOUT')) {
          code = status.UNAVAILABLE;
          details = e.message;
        } else {
          code = status.INTERNAL;
          details = e
            ? `Received RST_STREAM with code ${stream.rstCode} triggered by internal client error: ${e.message}`
            : `Received RST_STREAM with code ${stream.rstCode} (Internal server error)`;
        }
        break;
      }
      default:
        code = status.INTERNAL;
        details = `Received RST_STREAM with code ${stream.rstCode}`;
    }
    this.finish(code, details);
  }

  private settle(st: StatusObject): void {
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    const stream = this.stream;
    if (stream) {
      // A server that ended the stream needs no reset; one still sending is told to stop.
      if (!this.received && !stream.closed) stream.close(C.NGHTTP2_CANCEL);
      this.channel.release(this.entry!, this);
    } else {
      this.channel.unqueue(this);
    }
    if (this.onStatus) this.onStatus(st);
  }

  /** Ends the call with a non-OK status (no-op once it has ended). */
  finish(code: grpc.status, details: string, metadata: grpc.Metadata = new grpc.Metadata()): void {
    if (this.done) return;
    const st = { code, details, metadata };
    this.settle(st);
    this.complete(callError(st));
  }

  /**
   * Hands the outcome over and lets go of everything the call held. Node keeps a finished stream's
   * objects alive until its native handle is collected, which takes a garbage collection or two; our
   * listeners on it would keep the caller's request and response alive as long, and promoting those to
   * the old generation is what made the client's pauses long.
   */
  private complete(err: grpc.ServiceError | null, value?: Res): void {
    const callback = this.callback;
    this.callback = ignore;
    this.reader = undefined;
    this.received = undefined;
    this.metadata = undefined;
    this.data = undefined;
    this.onMetadata = undefined;
    this.onStatus = undefined;
    if (this.stream) (this.stream as CallStream)[kCall] = undefined;
    this.stream = undefined;
    callback(err, value);
  }
}

function ignore(): void {}

const kCall = Symbol('kemu.grpc.call');
type CallStream = http2.ClientHttp2Stream & { [kCall]?: Http2UnaryCall<any> };

function streamOnResponse(this: CallStream, headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, flags: number): void {
  this[kCall]?.onResponse(headers, flags);
}
function streamOnData(this: CallStream, chunk: Buffer): void {
  this[kCall]?.onData(chunk);
}
function streamOnTrailers(this: CallStream, headers: http2.IncomingHttpHeaders): void {
  this[kCall]?.onTrailers(headers);
}
function streamOnEnd(this: CallStream): void {
  this[kCall]?.onEnd();
}
function streamOnError(this: CallStream, err: Error & { code?: string }): void {
  this[kCall]?.onError(err);
}
function streamOnClose(this: CallStream): void {
  const call = this[kCall];
  // After any 'error' event, so the reset reason is known when the status is chosen.
  if (call) process.nextTick(() => call.onClose());
}
