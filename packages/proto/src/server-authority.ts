// gRPC clients that dial a unix socket disagree on `:authority`: grpc-go before 1.58 (crictl and the kubelet
// up to 1.30, CSI sidecars of that era), grpc-java and grpcio send the socket path, newer ones `localhost`.
// node:http2 (nghttp2) resets a request whose :authority is absent, empty or holds a `/` before any
// handler runs. This module is the judge of an authority and, for a connection that sends one node:http2
// refuses, the client->server rewriter that replaces it: every header block is HPACK-decoded with the
// peer's dynamic table state and re-encoded without the dynamic table, with `localhost` in its place.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- an ambient module declaration: packages that compile this file from source need it too
/// <reference path="./hpack-js.d.ts" />
import { Duplex } from 'node:stream';
import hpack, { type Compressor, type Decompressor, type HpackHeader } from 'hpack.js';
import {
  CLIENT_PREFACE,
  DEFAULT_HEADER_TABLE_SIZE,
  DEFAULT_MAX_FRAME_SIZE,
  FRAME_HEADER_LENGTH,
  type FrameHeader,
  FrameFlag,
  FrameType,
  headerBlockFrames,
  headersFragment,
  readFrameHeader,
} from './http2-frame';

/** What a connection's rewritten requests carry instead of an authority node:http2 refuses. */
export const SAFE_AUTHORITY = 'localhost';

// RFC 3986 authority characters (unreserved, pct-encoded, sub-delims, ":", "@", "[", "]"): what nghttp2
// accepts in :authority and host, provided the value is not empty.
const AUTHORITY_CHARS = /^[A-Za-z0-9\-._~%!$&'()*+,;=:@[\]]+$/;
// What is replaced: visible ASCII (a path, say) or nothing. A value that is malformed as any header value
// (control characters, spaces, bytes past ASCII) is left for node:http2 to refuse.
const REPLACEABLE = /^[\x21-\x7e]*$/;

/** Header blocks larger than this are passed on untouched for node:http2 to judge (and refuse). */
export const MAX_HEADER_BLOCK = 256 * 1024;

/** Whether node:http2 accepts this value of `:authority` or `host`. */
export function acceptableAuthority(value: string): boolean {
  return AUTHORITY_CHARS.test(value);
}

/** Whether the front end replaces this value of `:authority` or `host` with {@link SAFE_AUTHORITY}. */
export function replaceableAuthority(value: string): boolean {
  return !AUTHORITY_CHARS.test(value) && REPLACEABLE.test(value);
}

function isAuthorityHeader(name: string): boolean {
  return name === ':authority' || name === 'host';
}

/**
 * Whether a decoded header block has an authority the front end has to replace for node:http2 to take it,
 * or is a request with none at all (which node:http2 refuses too).
 */
export function needsRewrite(headers: readonly HpackHeader[]): boolean {
  let request = false;
  let authority = false;
  for (const h of headers) {
    if (h.name === ':method') request = true;
    if (!isAuthorityHeader(h.name)) continue;
    if (replaceableAuthority(h.value)) return true;
    authority = true;
  }
  return request && !authority;
}

/**
 * Replaces every authority node:http2 would refuse with {@link SAFE_AUTHORITY}, and gives a request without
 * one that authority (after its pseudo-headers). Returns the `:authority` the client sent, if replaced.
 */
export function rewriteAuthority(headers: HpackHeader[]): string | undefined {
  let original: string | undefined;
  let request = false;
  let authority = false;
  let lastPseudo = -1;
  headers.forEach((header, i) => {
    if (header.name.startsWith(':')) lastPseudo = i;
    if (header.name === ':method') request = true;
    if (!isAuthorityHeader(header.name)) return;
    authority = true;
    if (!replaceableAuthority(header.value)) return;
    if (header.name === ':authority') original = header.value;
    header.value = SAFE_AUTHORITY;
  });
  if (request && !authority) headers.splice(lastPseudo + 1, 0, { name: ':authority', value: SAFE_AUTHORITY });
  return original;
}

export function createHpackDecoder(): Decompressor {
  return hpack.decompressor.create({ table: { size: DEFAULT_HEADER_TABLE_SIZE } });
}

/** Decodes one complete header block, updating the decoder's dynamic table; throws on a malformed block. */
export function decodeHeaderBlock(decoder: Decompressor, block: Buffer): HpackHeader[] {
  let failure: Error | undefined;
  const onError = (err: Error) => {
    failure ??= err;
  };
  decoder.on('error', onError);
  try {
    decoder.write(block);
    decoder.execute();
  } finally {
    decoder.off('error', onError);
  }
  const headers: HpackHeader[] = [];
  for (let h = decoder.read(); h !== null; h = decoder.read()) headers.push(h);
  if (failure) throw failure;
  return headers;
}

/** Encodes a header block from the static table and literals only, so the peer's dynamic table stays empty. */
export function encodeHeaderBlock(encoder: Compressor, headers: readonly HpackHeader[]): Buffer {
  encoder.write(headers.map((h) => ({ name: h.name, value: h.value, neverIndex: h.neverIndex, incremental: false })));
  const out: Buffer[] = [];
  for (let chunk = encoder.read(); chunk !== null; chunk = encoder.read()) out.push(chunk);
  return Buffer.concat(out);
}

interface OpenBlock {
  streamId: number;
  endStream: boolean;
  priority?: Buffer;
  fragments: Buffer[];
  size: number;
  /** The frames as received, for when the block is passed on unchanged. */
  raw: Buffer[];
}

/**
 * One connection's bytes as node:http2 reads them: the client's frames with every header block re-encoded
 * so its authority is one node:http2 accepts; what the server writes goes to the socket unchanged. Anything
 * this cannot parse (a broken header block, a frame out of order) is passed on as received from then on,
 * for node:http2 to answer with the connection error it deserves.
 */
export class AuthorityRewriter extends Duplex {
  /**
   * The last :authority this connection's client sent that was replaced: what handlers see as the host (a
   * gRPC channel sends one authority on every call).
   */
  originalAuthority: string | undefined;
  private pending: Buffer;
  private prefaceSeen = false;
  private passthrough = false;
  private block: OpenBlock | undefined;
  private readonly decoder = createHpackDecoder();
  private readonly encoder = hpack.compressor.create({ table: { size: DEFAULT_HEADER_TABLE_SIZE } });

  constructor(
    private readonly socket: Duplex,
    initial: Buffer,
  ) {
    super({ allowHalfOpen: true });
    // What the front end already read comes first; the socket's later bytes follow it.
    this.pending = Buffer.alloc(0);
    this.feed(initial);
    socket.on('data', (chunk: Buffer) => this.feed(chunk));
    socket.on('end', () => this.push(null));
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
    socket.on('drain', () => this.emit('socketDrain'));
    socket.resume();
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (this.socket.write(chunk)) callback();
    else this.once('socketDrain', () => callback());
  }

  override _final(callback: (err?: Error | null) => void): void {
    this.socket.end();
    callback();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.socket.destroy();
    callback(err);
  }

  private emitBytes(buf: Buffer): void {
    if (buf.length > 0 && !this.push(buf)) this.socket.pause();
  }

  private feed(chunk: Buffer): void {
    if (this.destroyed) return;
    if (this.passthrough) {
      this.emitBytes(chunk);
      return;
    }
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    let offset = 0;
    if (!this.prefaceSeen) {
      if (buf.length < CLIENT_PREFACE.length) {
        this.pending = buf;
        return;
      }
      if (!buf.subarray(0, CLIENT_PREFACE.length).equals(CLIENT_PREFACE)) {
        this.giveUp(buf);
        return;
      }
      this.prefaceSeen = true;
      offset = CLIENT_PREFACE.length;
    }
    // Frames that pass unchanged are forwarded in runs, not one by one.
    let runStart = 0;
    for (;;) {
      const h = readFrameHeader(buf, offset);
      // A frame over the size node:http2 accepts is its to refuse (FRAME_SIZE_ERROR), not ours to wait for.
      if (h && h.length > DEFAULT_MAX_FRAME_SIZE) {
        this.emitBytes(buf.subarray(runStart, offset));
        this.giveUp(buf.subarray(offset));
        return;
      }
      if (!h || buf.length < h.end) break;
      if (h.type !== FrameType.HEADERS && h.type !== FrameType.CONTINUATION && !this.block) {
        offset = h.end;
        continue;
      }
      this.emitBytes(buf.subarray(runStart, offset));
      const rewritten = this.headerFrame(buf, h);
      if (rewritten === undefined) {
        this.giveUp(buf.subarray(offset));
        return;
      }
      for (const frame of rewritten) this.emitBytes(frame);
      offset = h.end;
      runStart = offset;
    }
    this.emitBytes(buf.subarray(runStart, offset));
    buf = buf.subarray(offset);
    this.pending = buf.length ? Buffer.from(buf) : Buffer.alloc(0);
  }

  /** Handles a frame of a header block: the frames to forward now, or undefined to give up on the connection. */
  private headerFrame(buf: Buffer, h: FrameHeader): Buffer[] | undefined {
    // On failure the open block's `raw` holds the frames before this one; the caller passes this one on.
    if (h.type === FrameType.HEADERS) {
      if (this.block) return undefined;
      const parts = headersFragment(buf, h);
      if (!parts) return undefined;
      this.block = {
        streamId: h.streamId,
        endStream: (h.flags & FrameFlag.END_STREAM) !== 0,
        priority: parts.priority ? Buffer.from(parts.priority) : undefined,
        fragments: [Buffer.from(parts.fragment)],
        size: parts.fragment.length,
        raw: [],
      };
    } else if (h.type === FrameType.CONTINUATION) {
      if (!this.block || this.block.streamId !== h.streamId) return undefined;
      this.block.fragments.push(Buffer.from(buf.subarray(h.payloadStart, h.end)));
      this.block.size += h.length;
    } else {
      // Any other frame inside a header block is a connection error (RFC 9113 6.10).
      return undefined;
    }
    if (this.block.size > MAX_HEADER_BLOCK) return undefined;
    if (!(h.flags & FrameFlag.END_HEADERS)) {
      this.block.raw.push(Buffer.from(buf.subarray(h.payloadStart - FRAME_HEADER_LENGTH, h.end)));
      return [];
    }
    const block = this.block;
    let headers: HpackHeader[];
    try {
      headers = decodeHeaderBlock(this.decoder, Buffer.concat(block.fragments));
    } catch {
      return undefined;
    }
    this.block = undefined;
    const original = rewriteAuthority(headers);
    if (original !== undefined) this.originalAuthority = original;
    return headerBlockFrames(block.streamId, encodeHeaderBlock(this.encoder, headers), block.endStream, block.priority);
  }

  /** From here on the client's bytes pass unchanged (an open header block as it arrived). */
  private giveUp(rest: Buffer): void {
    this.passthrough = true;
    const open = this.block;
    this.block = undefined;
    this.pending = Buffer.alloc(0);
    if (open) for (const frame of open.raw) this.emitBytes(frame);
    this.emitBytes(rest);
  }
}
