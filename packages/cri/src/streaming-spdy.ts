// Exec, attach and port-forward over SPDY/3.1, the transport kubectl and the API server have used with
// kubelets since the beginning: an HTTP/1.1 upgrade negotiating the sub-protocol in X-Stream-Protocol-Version,
// then one SPDY stream per channel, named by its `streamType` header (error, stdin, stdout, stderr, resize;
// for port-forward data and error, with `port` and `requestID`).
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { errorMessage } from './errors.js';
import { RstStatus, SpdySession, type SpdyStream } from './spdy-session.js';
import { type CommandTransport, parseResizes } from './streams.js';
import type { ExecOptions } from './types.js';

/** Remote-command sub-protocols over SPDY, newest first (v5 means v4 on SPDY: its close signal is WebSocket's). */
export const SPDY_REMOTE_COMMAND_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];
export const SPDY_PORT_FORWARD_PROTOCOLS = ['portforward.k8s.io'];

/** How long a client has to open the streams a session needs, as kubelet's stream-creation timeout. */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

/** True for a request asking to switch to SPDY/3.1 (the header check kubelet's upgrader makes). */
export function isSpdyUpgrade(req: http.IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'spdy/3.1' && /upgrade/i.test(String(req.headers.connection ?? ''));
}

function respond(socket: Duplex, code: number, message: string, headers: Record<string, string | string[]> = {}): void {
  let head = `HTTP/1.1 ${code} ${http.STATUS_CODES[code]}\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n`;
  for (const [k, v] of Object.entries(headers)) for (const one of Array.isArray(v) ? v : [v]) head += `${k}: ${one}\r\n`;
  socket.end(`${head}\r\n${message}\n`);
}

/**
 * Picks the sub-protocol (the client's first choice the server speaks), answers 101 and starts a SPDY session,
 * or answers 400/403 with kubelet's messages and returns undefined.
 */
export function upgradeToSpdy(
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  serverProtocols: string[],
  onStream: (stream: SpdyStream) => void,
): { session: SpdySession; protocol: string } | undefined {
  const raw = req.headersDistinct['x-stream-protocol-version'] ?? [];
  const clientProtocols = raw.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
  if (clientProtocols.length === 0) {
    respond(socket, 400, 'unable to upgrade: X-Stream-Protocol-Version is required');
    return undefined;
  }
  const protocol = clientProtocols.find((p) => serverProtocols.includes(p));
  if (!protocol) {
    respond(socket, 403, `unable to upgrade: unable to negotiate protocol: client supports [${clientProtocols.join(' ')}], server accepts [${serverProtocols.join(' ')}]`, {
      'X-Accepted-Stream-Protocol-Versions': serverProtocols,
    });
    return undefined;
  }
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`);
  return { session: new SpdySession(socket, onStream, head), protocol };
}

/** The CommandTransport of one exec/attach over SPDY, once the client has opened its streams. */
class SpdyCommandTransport implements CommandTransport {
  readonly versioned: boolean;
  readonly resizable: boolean;
  private finished = false;

  constructor(
    private readonly session: SpdySession,
    protocol: string,
    private readonly streams: Partial<Record<'error' | 'stdin' | 'stdout' | 'stderr' | 'resize', SpdyStream>>,
  ) {
    this.versioned = protocol === 'v4.channel.k8s.io' || protocol === 'v5.channel.k8s.io';
    this.resizable = !!streams.resize;
  }

  send(channel: number, data: Buffer | string): void {
    const target = channel === 1 ? this.streams.stdout : channel === 2 ? this.streams.stderr : this.streams.error;
    if (!target || target.writableEnded || target.destroyed) return;
    if (data.length === 0) return;
    target.write(data);
  }

  finish(): void {
    if (this.finished) return;
    this.finished = true;
    for (const s of [this.streams.stdout, this.streams.stderr, this.streams.error]) if (s && !s.writableEnded && !s.destroyed) s.end();
    this.session.close();
  }

  onStdin(fn: (data: Buffer) => void): void {
    this.streams.stdin?.on('data', fn);
  }

  onStdinEnd(fn: () => void): void {
    this.streams.stdin?.on('end', fn);
  }

  onResize(fn: (width: number, height: number) => void): void {
    let pending = '';
    this.streams.resize?.on('data', (d: Buffer) => {
      // Resize messages are JSON objects back to back on one stream; a message may span DATA frames.
      pending += d.toString();
      const last = pending.lastIndexOf('}');
      if (last < 0) return;
      for (const s of parseResizes(pending.slice(0, last + 1))) fn(s.width, s.height);
      pending = pending.slice(last + 1);
      if (pending.length > 4096) pending = '';
    });
  }

  onClose(fn: () => void): void {
    this.session.onClose(fn);
  }
}

type CommandStreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';

/**
 * Upgrades an exec/attach request and waits for the client's streams (error, plus stdin/stdout/stderr as
 * requested, plus resize for a tty on v3+). Calls `serve` with the transport, or closes the session after
 * the stream-creation timeout.
 */
export function acceptSpdyCommand(
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  opts: ExecOptions,
  serve: (t: CommandTransport) => void,
  timeoutMs = STREAM_CREATION_TIMEOUT_MS,
): void {
  const streams: Partial<Record<CommandStreamType, SpdyStream>> = {};
  let expected = 0;
  let protocol = '';
  let started = false;
  const wait: { timer?: NodeJS.Timeout } = {};
  const onStream = (s: SpdyStream) => {
    const type = s.headers.streamtype as CommandStreamType;
    if (started || !['error', 'stdin', 'stdout', 'stderr', 'resize'].includes(type) || streams[type]) {
      // An unknown or repeated stream type is refused; the session goes on.
      s.reset(RstStatus.CANCEL);
      return;
    }
    s.reply();
    streams[type] = s;
    if (Object.keys(streams).length === expected) {
      started = true;
      clearTimeout(wait.timer);
      serve(new SpdyCommandTransport(up!.session, protocol, streams));
    }
  };
  const up = upgradeToSpdy(req, socket, head, SPDY_REMOTE_COMMAND_PROTOCOLS, onStream);
  if (!up) return;
  protocol = up.protocol;
  const stderr = opts.stderr && !opts.tty;
  const resize = opts.tty && protocol !== 'v2.channel.k8s.io' && protocol !== 'channel.k8s.io';
  expected = 1 + Number(opts.stdin) + Number(opts.stdout) + Number(stderr) + Number(resize);
  wait.timer = setTimeout(() => {
    // Kubelet has no stream to report this on; an error stream, if the client opened one, gets it.
    streams.error?.end('timed out waiting for client to create streams');
    up.session.close();
  }, timeoutMs);
  up.session.onClose(() => clearTimeout(wait.timer));
}

interface Pair {
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/**
 * Upgrades a port-forward request and serves every (data, error) stream pair the client opens, each a TCP
 * connection to its `port` inside the pod, until the client closes the connection.
 */
export function acceptSpdyPortForward(
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  sandboxId: string,
  allowed: number[],
  open: (port: number) => Promise<Duplex>,
  timeoutMs = STREAM_CREATION_TIMEOUT_MS,
): void {
  const pairs = new Map<string, Pair>();
  const targets = new Set<Duplex>();
  const fail = (error: SpdyStream, data: SpdyStream | undefined, message: string) => {
    // The JSON body current kubelets send; the message is what kubectl prints.
    if (!error.writableEnded && !error.destroyed) error.end(`${JSON.stringify({ message })}\n`);
    if (data && !data.writableEnded && !data.destroyed) data.end();
  };
  const forward = (data: SpdyStream, error: SpdyStream) => {
    const port = Number(data.headers.port);
    if (allowed.length > 0 && !allowed.includes(port)) {
      fail(error, data, `error forwarding port ${port} to pod ${sandboxId}: port ${port} was not in the PortForward request (${allowed.join(', ')})`);
      return;
    }
    const early: Buffer[] = [];
    let clientDone = false;
    const buffer = (d: Buffer) => early.push(d);
    data.on('data', buffer);
    data.once('end', () => {
      clientDone = true;
    });
    open(port).then(
      (target) => {
        targets.add(target);
        data.off('data', buffer);
        for (const d of early) target.write(d);
        if (clientDone) target.end();
        data.on('data', (d: Buffer) => target.write(d));
        data.on('end', () => target.end());
        data.on('close', () => target.destroy());
        target.on('data', (d: Buffer) => {
          if (!data.writableEnded && !data.destroyed) data.write(d);
        });
        target.on('end', () => {
          if (!data.writableEnded && !data.destroyed) data.end();
          if (!error.writableEnded && !error.destroyed) error.end();
        });
        target.on('error', (err) => fail(error, data, `error forwarding port ${port} to pod ${sandboxId}: ${errorMessage(err)}`));
        target.on('close', () => targets.delete(target));
      },
      (err) => fail(error, data, `error forwarding port ${port} to pod ${sandboxId}: ${errorMessage(err)}`),
    );
  };
  const onStream = (s: SpdyStream) => {
    const portText = s.headers.port ?? '';
    const type = s.headers.streamtype ?? '';
    // Invalid headers refuse the stream, as kubelet does before replying.
    if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535 || (type !== 'data' && type !== 'error')) {
      s.reset(RstStatus.CANCEL);
      return;
    }
    s.reply();
    // Old clients send no requestID: pair by stream id (an error stream opens right after its data stream).
    const id = s.headers.requestid || String(type === 'error' ? s.id : s.id - 2);
    let p = pairs.get(id);
    if (!p) {
      p = {
        timer: setTimeout(() => {
          pairs.delete(id);
          if (p?.error) fail(p.error, p.data, `timed out waiting for streams of request ${id}`);
          else p?.data?.end();
        }, timeoutMs),
      };
      pairs.set(id, p);
    }
    if (p[type as 'data' | 'error']) {
      const msg = `error processing stream for request ${id}: ${type} stream already assigned`;
      if (p.error && type === 'data') p.error.write(msg);
      s.reset(RstStatus.CANCEL);
      return;
    }
    p[type as 'data' | 'error'] = s;
    if (p.data && p.error) {
      clearTimeout(p.timer);
      pairs.delete(id);
      forward(p.data, p.error);
    }
  };
  const up = upgradeToSpdy(req, socket, head, SPDY_PORT_FORWARD_PROTOCOLS, onStream);
  up?.session.onClose(() => {
    for (const p of pairs.values()) clearTimeout(p.timer);
    pairs.clear();
    for (const t of targets) t.destroy();
  });
}
