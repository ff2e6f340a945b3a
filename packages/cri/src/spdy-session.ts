// The server side of a SPDY/3.1 session, as kubelet's streaming server speaks it to kubectl and the API
// server (the Go spdystream library): the client opens every stream with SYN_STREAM, the server answers each
// with SYN_REPLY, data flows in DATA frames and a FIN ends each direction. Header blocks are zlib-compressed
// with the SPDY/3 dictionary, one compression context per direction for the whole session. Like kubelet, it
// does not hold back output for flow-control windows (spdystream never opens them), but it does return
// WINDOW_UPDATEs for what it receives, so flow-controlled clients keep sending.
import { createRequire } from 'node:module';
import { Duplex } from 'node:stream';
import zlib from 'node:zlib';

const VERSION = 3;
const SYN_STREAM = 1;
const SYN_REPLY = 2;
const RST_STREAM = 3;
const SETTINGS = 4;
const PING = 6;
const GOAWAY = 7;
const HEADERS = 8;
const WINDOW_UPDATE = 9;
const FLAG_FIN = 0x01;

/** RST_STREAM status codes (SPDY/3 section 2.6.3). */
export const RstStatus = { PROTOCOL_ERROR: 1, INVALID_STREAM: 2, REFUSED_STREAM: 3, UNSUPPORTED_VERSION: 4, CANCEL: 5 } as const;
/** GOAWAY status codes. */
const GOAWAY_OK = 0;
const GOAWAY_PROTOCOL_ERROR = 1;

/** Frames larger than this are refused (header blocks and data frames from kubectl are a few KiB). */
const MAX_FRAME = 1 << 20;
/** How long the client has to close the connection after GOAWAY before it is closed under it. */
const CLOSE_GRACE_MS = 5000;
/** Output is cut into DATA frames of at most this size. */
const MAX_DATA_CHUNK = 32 * 1024;

// The SPDY/3 header-compression dictionary is protocol data; spdy-transport ships it.
const DICTIONARY: Buffer = (createRequire(import.meta.url)('spdy-transport/lib/spdy-transport/protocol/spdy/dictionary') as Record<number, Buffer>)[3];

/** One SPDY stream: a Duplex whose readable side is the peer's DATA and writable side ours. */
export class SpdyStream extends Duplex {
  replied = false;

  constructor(
    readonly id: number,
    /** Request headers, names lower-cased; repeated values joined with NUL as on the wire. */
    readonly headers: Record<string, string>,
    private readonly session: SpdySession,
  ) {
    super({ allowHalfOpen: true });
  }

  /** Accepts the stream (SYN_REPLY with an HTTP/1.1 200 status, which Go clients ignore and others need). */
  reply(): void {
    if (this.replied) return;
    this.replied = true;
    this.session.sendReply(this.id);
  }

  /** Refuses or abandons the stream. */
  reset(status: number = RstStatus.CANCEL): void {
    this.session.sendRst(this.id, status);
    this.session.forget(this.id);
    this.push(null);
    this.destroy();
  }

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.reply();
    for (let i = 0; i < chunk.length; i += MAX_DATA_CHUNK) this.session.sendData(this.id, chunk.subarray(i, i + MAX_DATA_CHUNK), false);
    cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.reply();
    this.session.sendData(this.id, Buffer.alloc(0), true);
    cb();
  }
}

export interface SpdySessionEvents {
  stream: (stream: SpdyStream) => void;
  close: () => void;
}

/** A server-side SPDY/3.1 session on an upgraded connection. */
export class SpdySession {
  private readonly streams = new Map<number, SpdyStream>();
  private buf: Buffer = Buffer.alloc(0);
  private readonly inflate = zlib.createInflate({ dictionary: DICTIONARY });
  private readonly deflate = zlib.createDeflate({ dictionary: DICTIONARY });
  /** Header (de)compression is asynchronous; these keep frames in order around it. */
  private inbound: Promise<void> = Promise.resolve();
  private outbound: Promise<void> = Promise.resolve();
  private lastPeerStream = 0;
  /** GOAWAY sent or received, or the connection is gone: no new input is processed. */
  private closed = false;
  private tornDown = false;
  private readonly onStream: (stream: SpdyStream) => void;
  private readonly closeHandlers: (() => void)[] = [];

  constructor(
    private readonly socket: Duplex,
    onStream: (stream: SpdyStream) => void,
    head?: Buffer,
  ) {
    this.onStream = onStream;
    socket.on('data', (d: Buffer) => this.receive(d));
    socket.on('error', () => this.teardown());
    socket.on('close', () => this.teardown());
    socket.on('end', () => this.teardown());
    if (head?.length) this.receive(head);
  }

  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.closeHandlers.push(fn);
  }

  /**
   * Ends the session politely: GOAWAY after everything queued, then the client closes the connection once it
   * has read its streams to the end (as kubectl does); the connection is ended here only if it does not.
   */
  close(status = GOAWAY_OK): void {
    if (this.closed) return;
    this.closed = true;
    const body = Buffer.alloc(8);
    body.writeUInt32BE(this.lastPeerStream & 0x7fffffff, 0);
    body.writeUInt32BE(status, 4);
    this.sendControl(GOAWAY, 0, body);
    this.outbound = this.outbound.then(() => {
      setTimeout(() => this.socket.end(), CLOSE_GRACE_MS).unref();
    });
  }

  // ------------------------------------------------------------ output

  private write(frame: Buffer): void {
    this.outbound = this.outbound.then(() => {
      if (!this.tornDown && this.socket.writable) this.socket.write(frame);
    });
  }

  private sendControl(type: number, flags: number, body: Buffer): void {
    const h = Buffer.alloc(8);
    h.writeUInt16BE(0x8000 | VERSION, 0);
    h.writeUInt16BE(type, 2);
    h.writeUInt32BE(((flags & 0xff) << 24) | body.length, 4);
    this.write(Buffer.concat([h, body]));
  }

  sendData(id: number, data: Buffer, fin: boolean): void {
    const h = Buffer.alloc(8);
    h.writeUInt32BE(id & 0x7fffffff, 0);
    h.writeUInt32BE(((fin ? FLAG_FIN : 0) << 24) | data.length, 4);
    this.write(Buffer.concat([h, data]));
  }

  sendReply(id: number): void {
    this.outbound = this.outbound.then(async () => {
      // Compressed in turn: each block's compressed form depends on every block before it.
      const b = await this.compress({ ':status': '200', ':version': 'HTTP/1.1' });
      const body = Buffer.alloc(4);
      body.writeUInt32BE(id & 0x7fffffff, 0);
      const h = Buffer.alloc(8);
      h.writeUInt16BE(0x8000 | VERSION, 0);
      h.writeUInt16BE(SYN_REPLY, 2);
      h.writeUInt32BE(4 + b.length, 4);
      if (!this.tornDown && this.socket.writable) this.socket.write(Buffer.concat([h, body, b]));
    });
  }

  sendRst(id: number, status: number): void {
    const body = Buffer.alloc(8);
    body.writeUInt32BE(id & 0x7fffffff, 0);
    body.writeUInt32BE(status, 4);
    this.sendControl(RST_STREAM, 0, body);
  }

  private sendWindowUpdate(id: number, delta: number): void {
    const body = Buffer.alloc(8);
    body.writeUInt32BE(id & 0x7fffffff, 0);
    body.writeUInt32BE(delta & 0x7fffffff, 4);
    this.sendControl(WINDOW_UPDATE, 0, body);
  }

  forget(id: number): void {
    this.streams.delete(id);
  }

  /** Encodes and compresses a header block (its compressed form depends on every block before it). */
  private compress(headers: Record<string, string>): Promise<Buffer> {
    const parts: Buffer[] = [];
    const n = Buffer.alloc(4);
    n.writeUInt32BE(Object.keys(headers).length);
    parts.push(n);
    for (const [k, v] of Object.entries(headers)) {
      for (const s of [k, v]) {
        const b = Buffer.from(s);
        const len = Buffer.alloc(4);
        len.writeUInt32BE(b.length);
        parts.push(len, b);
      }
    }
    return zlibStep(this.deflate, Buffer.concat(parts));
  }

  // ------------------------------------------------------------ input

  private receive(d: Buffer): void {
    if (this.closed) return;
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    while (this.buf.length >= 8) {
      const len = this.buf.readUInt32BE(4) & 0xffffff;
      if (len > MAX_FRAME) {
        this.protocolError();
        return;
      }
      if (this.buf.length < 8 + len) break;
      const frame = this.buf.subarray(0, 8 + len);
      this.buf = this.buf.subarray(8 + len);
      this.inbound = this.inbound.then(() => this.handle(frame)).catch(() => this.protocolError());
    }
  }

  private protocolError(): void {
    this.close(GOAWAY_PROTOCOL_ERROR);
  }

  private async handle(frame: Buffer): Promise<void> {
    if (this.closed) return;
    const flags = frame[4];
    const body = frame.subarray(8);
    if ((frame[0] & 0x80) === 0) {
      const id = frame.readUInt32BE(0) & 0x7fffffff;
      const s = this.streams.get(id);
      if (!s) {
        this.sendRst(id, RstStatus.INVALID_STREAM);
        return;
      }
      if (body.length) {
        s.push(Buffer.from(body));
        this.sendWindowUpdate(id, body.length);
        this.sendWindowUpdate(0, body.length);
      }
      if (flags & FLAG_FIN) s.push(null);
      return;
    }
    const version = frame.readUInt16BE(0) & 0x7fff;
    const type = frame.readUInt16BE(2);
    if (version !== VERSION) {
      if (type === SYN_STREAM && body.length >= 4) this.sendRst(body.readUInt32BE(0) & 0x7fffffff, RstStatus.UNSUPPORTED_VERSION);
      return;
    }
    switch (type) {
      case SYN_STREAM: {
        if (body.length < 10) throw new Error('short SYN_STREAM');
        const id = body.readUInt32BE(0) & 0x7fffffff;
        const headers = parseHeaderBlock(await zlibStep(this.inflate, body.subarray(10)));
        // Client streams have odd, increasing ids.
        if (id % 2 === 0 || id <= this.lastPeerStream || this.streams.has(id)) {
          this.sendRst(id, RstStatus.PROTOCOL_ERROR);
          return;
        }
        this.lastPeerStream = id;
        const s = new SpdyStream(id, headers, this);
        this.streams.set(id, s);
        s.on('close', () => this.streams.delete(id));
        if (flags & FLAG_FIN) s.push(null);
        this.onStream(s);
        return;
      }
      case HEADERS:
        // Decompressed to keep the shared compression context in step; their content is not used.
        if (body.length > 4) await zlibStep(this.inflate, body.subarray(4));
        return;
      case SYN_REPLY:
        if (body.length > 4) await zlibStep(this.inflate, body.subarray(4));
        return;
      case RST_STREAM: {
        const s = this.streams.get(body.readUInt32BE(0) & 0x7fffffff);
        if (s) {
          this.streams.delete(s.id);
          s.push(null);
          s.destroy();
        }
        return;
      }
      case PING:
        // Client pings carry odd ids; answer those with the same frame.
        if (body.length === 4 && body.readUInt32BE(0) % 2 === 1) this.sendControl(PING, 0, Buffer.from(body));
        return;
      case GOAWAY:
        // The client opens no more streams; the ones open finish normally.
        return;
      case SETTINGS:
      case WINDOW_UPDATE:
      default:
        return;
    }
  }

  private teardown(): void {
    if (this.tornDown) return;
    this.tornDown = true;
    this.closed = true;
    for (const s of this.streams.values()) {
      s.push(null);
      s.destroy();
    }
    this.streams.clear();
    this.inflate.close();
    this.deflate.close();
    this.socket.destroy();
    for (const fn of this.closeHandlers.splice(0)) fn();
  }
}

function parseHeaderBlock(b: Buffer): Record<string, string> {
  const headers: Record<string, string> = {};
  let off = 0;
  const need = (n: number) => {
    if (off + n > b.length) throw new Error('truncated header block');
  };
  need(4);
  const count = b.readUInt32BE(off);
  off += 4;
  for (let i = 0; i < count; i++) {
    need(4);
    const kl = b.readUInt32BE(off);
    off += 4;
    need(kl);
    const k = b.subarray(off, off + kl).toString('latin1').toLowerCase();
    off += kl;
    need(4);
    const vl = b.readUInt32BE(off);
    off += 4;
    need(vl);
    headers[k] = b.subarray(off, off + vl).toString('latin1');
    off += vl;
  }
  return headers;
}

/**
 * Feeds one header block through a session-long zlib context and returns what it yields up to a sync flush.
 * A block that inflates beyond MAX_FRAME (a compression bomb) fails the session.
 */
function zlibStep(z: zlib.Inflate | zlib.Deflate, input: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    let size = 0;
    const onData = (d: Buffer) => {
      size += d.length;
      if (size <= MAX_FRAME) out.push(d);
    };
    const onError = (err: Error) => {
      z.off('data', onData);
      reject(err);
    };
    z.on('data', onData);
    z.once('error', onError);
    z.write(input);
    z.flush(zlib.constants.Z_SYNC_FLUSH, () => {
      // Output pushed during the flush is delivered before the next turn of the event loop.
      setImmediate(() => {
        z.off('data', onData);
        z.off('error', onError);
        if (size > MAX_FRAME) reject(new Error(`header block inflates beyond ${MAX_FRAME} bytes`));
        else resolve(Buffer.concat(out));
      });
    });
  });
}
