// The listener in front of every unix-socket gRPC server of either engine. It reads each connection's
// preface up to its first complete request header block and decides from that block's authority:
// - one node:http2 accepts (`localhost`, a %-encoded path): the socket itself is handed to the server,
//   with the bytes already read put back (node:http2 reads them first) — the connection then costs nothing;
// - one node:http2 refuses (a socket path, an empty value, none at all): the connection runs through an
//   AuthorityRewriter for its whole life.
// gRPC clients wait for the server's SETTINGS before their first call, so the front end sends an empty one
// at once and removes the client's acknowledgement of it from what the server reads (node:http2 sends its
// own SETTINGS after the hand-over, and counts acknowledgements). PINGs while it waits are answered here.
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { AuthorityRewriter, createHpackDecoder, decodeHeaderBlock, MAX_HEADER_BLOCK, needsRewrite } from './server-authority';
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  encodeFrame,
  ErrorCode,
  FrameFlag,
  FrameType,
  goawayFrame,
  headersFragment,
  readFrameHeader,
} from './http2-frame';

/** Receives each connection once the front end is done with it (grpc-js: `createConnectionInjector`). */
export type InjectConnection = (connection: Duplex) => void;

/** How long a client may take to acknowledge the front end's SETTINGS once it has sent a request. */
const SETTINGS_ACK_TIMEOUT_MS = 10_000;
/** Bytes a connection may send before the decision; past this node:http2 judges it as it stands. */
const MAX_BUFFERED = MAX_HEADER_BLOCK + 128 * 1024;
const EMPTY_SETTINGS = encodeFrame(FrameType.SETTINGS, 0, 0);

export interface UnixFrontEnd {
  readonly listener: net.Server;
  /** Stops accepting and drops connections not yet handed over; calls back once every connection is gone. */
  close(callback?: () => void): void;
}

/** Listens on `socketPath` and hands every connection to `inject` (see the module comment). */
export function listenUnixFrontEnd(socketPath: string, inject: InjectConnection): Promise<UnixFrontEnd> {
  const waiting = new Set<net.Socket>();
  const listener = net.createServer((socket) => {
    waiting.add(socket);
    socket.once('close', () => waiting.delete(socket));
    readPreface(socket, (connection) => {
      waiting.delete(socket);
      inject(connection);
    });
  });
  const frontEnd: UnixFrontEnd = {
    listener,
    close(callback) {
      listener.close(() => callback?.());
      for (const socket of waiting) socket.destroy();
    },
  };
  return new Promise((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(socketPath, () => {
      listener.off('error', reject);
      // After binding, a failed accept (EMFILE, say) costs that one connection, not the process.
      listener.on('error', () => {});
      resolve(frontEnd);
    });
  });
}

interface OpenBlock {
  streamId: number;
  fragments: Buffer[];
  size: number;
}

/** Reads one connection up to its decision, then hands the socket (or a rewriter over it) to `done`. */
function readPreface(socket: net.Socket, done: (connection: Duplex) => void): void {
  let buf: Buffer = Buffer.alloc(0);
  let offset = 0;
  let prefaceSeen = false;
  let acknowledged = false;
  let open: OpenBlock | undefined;
  let firstBlock: Buffer | undefined;
  let timer: NodeJS.Timeout | undefined;

  const release = () => {
    socket.off('data', onData);
    socket.off('error', onError);
    socket.off('end', onEnd);
    if (timer) clearTimeout(timer);
    socket.pause();
  };
  // node:http2 takes the connection as it stands: whatever it refuses, it refuses the way it always does.
  const handOver = () => {
    release();
    if (buf.length > 0) socket.unshift(buf);
    done(socket);
  };
  const onError = () => socket.destroy();
  const onEnd = () => socket.destroy();

  const onData = (chunk: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    if (!prefaceSeen) {
      const n = Math.min(buf.length, CLIENT_PREFACE.length);
      if (!buf.subarray(0, n).equals(CLIENT_PREFACE.subarray(0, n))) return handOver();
      if (buf.length < CLIENT_PREFACE.length) return;
      prefaceSeen = true;
      offset = CLIENT_PREFACE.length;
    }
    for (;;) {
      const h = readFrameHeader(buf, offset);
      if (!h || buf.length < h.end) break;
      if (h.length > DEFAULT_MAX_FRAME_SIZE) return handOver();
      if (!firstBlock) {
        if (open && h.type !== FrameType.CONTINUATION) return handOver();
        if (h.type === FrameType.HEADERS) {
          const parts = headersFragment(buf, h);
          if (!parts) return handOver();
          open = { streamId: h.streamId, fragments: [Buffer.from(parts.fragment)], size: parts.fragment.length };
        } else if (h.type === FrameType.CONTINUATION) {
          if (!open || open.streamId !== h.streamId) return handOver();
          open.fragments.push(Buffer.from(buf.subarray(h.payloadStart, h.end)));
          open.size += h.length;
        } else if (h.type === FrameType.DATA || h.type === FrameType.RST_STREAM || h.type === FrameType.PUSH_PROMISE) {
          return handOver();
        }
        if (open && open.size > MAX_HEADER_BLOCK) return handOver();
        if (open && h.flags & FrameFlag.END_HEADERS) {
          firstBlock = Buffer.concat(open.fragments);
          open = undefined;
        }
      }
      if (h.type === FrameType.SETTINGS && h.flags & FrameFlag.ACK && !acknowledged) {
        acknowledged = true;
        buf = Buffer.concat([buf.subarray(0, offset), buf.subarray(h.end)]);
        continue;
      }
      if (h.type === FrameType.PING && !(h.flags & FrameFlag.ACK) && h.length === 8 && h.streamId === 0) {
        socket.write(encodeFrame(FrameType.PING, FrameFlag.ACK, 0, Buffer.from(buf.subarray(h.payloadStart, h.end))));
        buf = Buffer.concat([buf.subarray(0, offset), buf.subarray(h.end)]);
        continue;
      }
      offset = h.end;
    }
    if (buf.length > MAX_BUFFERED) return handOver();
    if (!firstBlock) return;
    if (!acknowledged) {
      timer ??= setTimeout(() => {
        release();
        socket.on('error', () => {});
        socket.end(goawayFrame(0, ErrorCode.SETTINGS_TIMEOUT));
      }, SETTINGS_ACK_TIMEOUT_MS);
      return;
    }
    let rewrite: boolean;
    try {
      rewrite = needsRewrite(decodeHeaderBlock(createHpackDecoder(), firstBlock));
    } catch {
      return handOver();
    }
    if (!rewrite) return handOver();
    release();
    done(new AuthorityRewriter(socket, buf));
  };

  socket.on('data', onData);
  socket.on('error', onError);
  socket.on('end', onEnd);
  socket.write(EMPTY_SETTINGS);
}
