// A raw HTTP/2 client for tests: a node:net socket writing frames encoded here, so a test controls every
// byte a real client (or a broken one) sends. Request headers are HPACK-encoded by hpack.js the way
// grpc-go's encoder does it (literals with incremental indexing, Huffman strings, then dynamic-table
// references on later requests of the connection); responses are decoded with a second hpack.js instance.
import net from 'node:net';
import hpack, { type Compressor, type Decompressor } from 'hpack.js';

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const T = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 };
export const END_STREAM = 0x1;
export const END_HEADERS = 0x4;
export const ACK = 0x1;

export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const out = Buffer.alloc(9 + payload.length);
  out.writeUIntBE(payload.length, 0, 3);
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(streamId, 5);
  payload.copy(out, 9);
  return out;
}

/** A gRPC length-prefixed message. */
export function grpcMessage(body: Buffer): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out.writeUInt32BE(body.length, 1);
  body.copy(out, 5);
  return out;
}

/** Literal header field without indexing, new name, no Huffman (RFC 7541 6.2.2): bytes written by hand. */
export function literal(name: string, value: string): Buffer {
  const str = (s: string) => {
    const bytes = Buffer.from(s, 'latin1');
    if (bytes.length >= 127) throw new Error('literal() keeps to short strings');
    return Buffer.concat([Buffer.from([bytes.length]), bytes]);
  };
  return Buffer.concat([Buffer.from([0x00]), str(name), str(value)]);
}

/** The headers grpc-go 1.51 sends for a unary call, in its order; `authority` undefined leaves it out. */
export function grpcGoHeaders(path: string, authority: string | undefined): [string, string][] {
  const headers: [string, string][] = [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
  ];
  if (authority !== undefined) headers.push([':authority', authority]);
  headers.push(['content-type', 'application/grpc'], ['user-agent', 'grpc-go/1.51.0'], ['te', 'trailers']);
  return headers;
}

export interface Reply {
  streamId: number;
  headers: Record<string, string>;
  data: Buffer;
  trailers: Record<string, string>;
  /** RST_STREAM error code, when the server reset the stream. */
  reset?: number;
}

/** The gRPC status of a reply: from its trailers, or from a trailers-only response. */
export function grpcStatus(r: Reply): { code: number; message: string } | undefined {
  const src = r.trailers['grpc-status'] !== undefined ? r.trailers : r.headers;
  if (src['grpc-status'] === undefined) return undefined;
  return { code: Number(src['grpc-status']), message: decodeURIComponent(src['grpc-message'] ?? '') };
}

interface Pending {
  reply: Reply;
  gotHeaders: boolean;
  resolve: (r: Reply) => void;
}

/** One HTTP/2 connection to a unix socket, spoken frame by frame. */
export class RawConnection {
  /** GOAWAY error code once the server sent one. */
  goaway?: number;
  closed = false;
  readonly received: { type: number; flags: number; streamId: number }[] = [];
  private readonly encoder: Compressor = hpack.compressor.create({ table: { size: 4096 } });
  private readonly decoder: Decompressor = hpack.decompressor.create({ table: { size: 4096 } });
  private buf = Buffer.alloc(0);
  private nextStream = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly closedWaiters: (() => void)[] = [];

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      for (const p of this.pending.values()) p.resolve(p.reply);
      this.pending.clear();
      for (const w of this.closedWaiters.splice(0)) w();
    });
  }

  static open(sock: string, preface: Buffer = Buffer.concat([PREFACE, frame(T.SETTINGS, 0, 0)])): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(sock);
      const timer = setTimeout(() => socket.destroy(new Error(`no connection to ${sock} within 5 s`)), 5000);
      socket.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        socket.write(preface);
        resolve(new RawConnection(socket));
      });
    });
  }

  /** Resolves once the server has closed the connection (or after `ms`, false). */
  waitClosed(ms = 5000): Promise<boolean> {
    if (this.closed) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), ms);
      this.closedWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Resolves with the GOAWAY error code once the server sent one (undefined after `ms` without). */
  async waitGoaway(ms = 5000): Promise<number | undefined> {
    const until = Date.now() + ms;
    while (this.goaway === undefined && !this.closed && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    return this.goaway;
  }

  write(bytes: Buffer): void {
    if (!this.closed) this.socket.write(bytes);
  }

  /** HPACK-encodes headers the grpc-go way (incremental indexing, Huffman). */
  encode(headers: [string, string][]): Buffer {
    this.encoder.write(headers.map(([name, value]) => ({ name, value })));
    const out: Buffer[] = [];
    for (let c = this.encoder.read(); c !== null; c = this.encoder.read()) out.push(c);
    return Buffer.concat(out);
  }

  /** Sends one request (HEADERS, optionally split into CONTINUATIONs, then one DATA frame) and awaits its reply. */
  request(
    headers: [string, string][] | Buffer,
    body: Buffer | undefined,
    opts: { continuationAt?: number; streamId?: number } = {},
  ): Promise<Reply> {
    const streamId = opts.streamId ?? this.nextStream;
    this.nextStream = Math.max(this.nextStream, streamId) + 2;
    const block = Buffer.isBuffer(headers) ? headers : this.encode(headers);
    const frames: Buffer[] = [];
    const cut = opts.continuationAt ?? block.length;
    const endStream = body === undefined ? END_STREAM : 0;
    frames.push(frame(T.HEADERS, endStream | (cut >= block.length ? END_HEADERS : 0), streamId, block.subarray(0, cut)));
    for (let off = cut; off < block.length; off += cut) {
      const end = Math.min(block.length, off + cut);
      frames.push(frame(T.CONTINUATION, end === block.length ? END_HEADERS : 0, streamId, block.subarray(off, end)));
    }
    if (body !== undefined) frames.push(frame(T.DATA, END_STREAM, streamId, body));
    const reply: Reply = { streamId, headers: {}, data: Buffer.alloc(0), trailers: {} };
    const result = new Promise<Reply>((resolve) => {
      if (this.closed) resolve(reply);
      else this.pending.set(streamId, { reply, gotHeaders: false, resolve });
    });
    this.write(Buffer.concat(frames));
    return result;
  }

  /** What has arrived so far for a stream still open (undefined once it ended). */
  partial(streamId: number): Reply | undefined {
    return this.pending.get(streamId)?.reply;
  }

  /** Resets a stream with CANCEL, as a client does when it stops waiting, and settles its reply. */
  cancel(streamId: number): void {
    const p = this.pending.get(streamId);
    const code = Buffer.alloc(4);
    code.writeUInt32BE(0x8);
    this.write(frame(T.RST_STREAM, 0, streamId, code));
    if (!p) return;
    this.pending.delete(streamId);
    p.resolve(p.reply);
  }

  close(): void {
    this.socket.destroy();
  }

  private decodeBlock(block: Buffer): Record<string, string> {
    this.decoder.write(block);
    this.decoder.execute();
    const out: Record<string, string> = {};
    for (let h = this.decoder.read(); h !== null; h = this.decoder.read()) out[h.name] = h.value;
    return out;
  }

  private onData(chunk: Buffer): void {
    this.buf = Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 9) {
      const length = this.buf.readUIntBE(0, 3);
      if (this.buf.length < 9 + length) break;
      const type = this.buf[3]!;
      const flags = this.buf[4]!;
      const streamId = this.buf.readUInt32BE(5) & 0x7fffffff;
      const payload = this.buf.subarray(9, 9 + length);
      this.buf = this.buf.subarray(9 + length);
      this.received.push({ type, flags, streamId });
      this.onFrame(type, flags, streamId, Buffer.from(payload));
    }
  }

  private onFrame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (type === T.SETTINGS && !(flags & ACK)) this.write(frame(T.SETTINGS, ACK, 0));
    if (type === T.PING && !(flags & ACK)) this.write(frame(T.PING, ACK, 0, payload));
    if (type === T.GOAWAY) {
      // Streams past the last one the server processed are over; after an error, all of them are.
      this.goaway = payload.readUInt32BE(4);
      const last = payload.readUInt32BE(0) & 0x7fffffff;
      for (const [id, p] of this.pending) {
        if (id <= last && this.goaway === 0) continue;
        this.pending.delete(id);
        p.resolve(p.reply);
      }
    }
    const p = this.pending.get(streamId);
    if (!p) return;
    if (type === T.HEADERS) {
      // Node's server sends no padding or priority, and header blocks small enough for one frame.
      const fields = this.decodeBlock(payload);
      if (!p.gotHeaders) {
        p.gotHeaders = true;
        p.reply.headers = fields;
      } else {
        p.reply.trailers = fields;
      }
    } else if (type === T.DATA) {
      p.reply.data = Buffer.concat([p.reply.data, payload]);
      // Keep the connection's flow-control window open for later requests.
      if (payload.length > 0) {
        const inc = Buffer.alloc(4);
        inc.writeUInt32BE(payload.length);
        this.write(frame(T.WINDOW_UPDATE, 0, 0, inc));
      }
    } else if (type === T.RST_STREAM) {
      p.reply.reset = payload.readUInt32BE(0);
    }
    if ((type === T.HEADERS || type === T.DATA) && flags & END_STREAM) {
      this.pending.delete(streamId);
      p.resolve(p.reply);
    } else if (type === T.RST_STREAM) {
      this.pending.delete(streamId);
      p.resolve(p.reply);
    }
  }
}
