// The streaming server Exec/Attach/PortForward URLs point at. It speaks the Kubernetes channel protocol
// over WebSocket (channel.k8s.io, base64.channel.k8s.io, v4.channel.k8s.io, v4.base64.channel.k8s.io,
// v5.channel.k8s.io): each message starts with a channel byte (0 stdin, 1 stdout, 2 stderr, 3 error,
// 4 resize; for port-forward 2n data and 2n+1 error of the n-th port), and over SPDY/3.1 (streaming-spdy.ts)
// as kubectl and the API server do by default. Both feed the same session logic through a CommandTransport.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { errorMessage } from './errors.js';
import type { CriRuntime, StreamingRegistry, StreamRequest } from './runtime.js';
import { acceptSpdyCommand, acceptSpdyPortForward, isSpdyUpgrade } from './streaming-spdy.js';
import { type CommandTransport, parseResizes } from './streams.js';
import type { StreamSession } from './types.js';

export const REMOTE_COMMAND_PROTOCOLS = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'channel.k8s.io',
  'base64.channel.k8s.io',
];
export const PORT_FORWARD_PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io', 'channel.k8s.io', 'base64.channel.k8s.io'];

const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = 255;
/** How long a tty session waits for the client's first terminal size before starting the command. */
const TTY_SIZE_WAIT_MS = 1000;
/**
 * How long output is held back on a fresh WebSocket connection unless the client speaks first. The channel
 * protocol has no "client ready" message, and client-go registers its stdout/stderr/error streams only after
 * its reader has started: frames that arrive in between are dropped ("Unknown stream id 1, discarding
 * message"), which loses the head of a `kubectl cp` archive. A real kubelet is shielded by exec latency; a
 * command that answers in microseconds is not. Any frame from the client proves its streams exist.
 */
const CLIENT_SETTLE_MS = 250;

export interface StreamingServerOptions {
  /** Address to listen on (default 127.0.0.1, port 0 = any free port). */
  host?: string;
  port?: number;
  /** How long a URL stays valid before the client connects (default 60 s, like kubelet's). */
  tokenTtlMs?: number;
  /** How long WebSocket output waits for a client that has not spoken yet (default 250 ms; see CLIENT_SETTLE_MS). */
  clientSettleMs?: number;
}

interface Pending {
  req: StreamRequest;
  expires: number;
}

function exitMessage(exitCode: number, cmd: string[] | undefined): string {
  if (!cmd) return `command terminated with non-zero exit code: the attached container exited with code ${exitCode}`;
  return `command terminated with non-zero exit code: error executing command ${JSON.stringify(cmd)}, exit code ${exitCode}`;
}

function statusJson(exitCode: number, cmd: string[] | undefined): string {
  if (exitCode === 0) return JSON.stringify({ metadata: {}, status: 'Success' });
  return JSON.stringify({
    metadata: {},
    status: 'Failure',
    message: exitMessage(exitCode, cmd),
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  });
}

function errorStatusJson(message: string): string {
  return JSON.stringify({ metadata: {}, status: 'Failure', message, reason: 'InternalError' });
}

class ChannelConn implements CommandTransport {
  readonly base64: boolean;
  readonly versioned: boolean;
  readonly resizable = true;

  /** Frames held until the client has had time to set up its streams; undefined once released. */
  private held: (Buffer | string)[] | undefined = [];
  private finishHeld = false;
  private readonly settle: NodeJS.Timeout;

  constructor(
    readonly ws: WebSocket,
    readonly protocol: string,
    settleMs: number,
  ) {
    this.base64 = protocol.includes('base64');
    this.versioned = /^v\d+\./.test(protocol);
    this.settle = setTimeout(() => this.release(), settleMs);
    ws.once('message', () => this.release());
    ws.once('close', () => clearTimeout(this.settle));
  }

  private release(): void {
    clearTimeout(this.settle);
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    if (this.ws.readyState !== WebSocket.OPEN) return;
    for (const frame of held) this.ws.send(frame);
    if (this.finishHeld) this.ws.close(1000);
  }

  send(channel: number, data: Buffer | string): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    const frame = this.base64 ? String.fromCharCode(48 + channel) + buf.toString('base64') : Buffer.concat([Buffer.from([channel]), buf]);
    if (this.held) this.held.push(frame);
    else this.ws.send(frame);
  }

  finish(): void {
    if (this.held) this.finishHeld = true;
    else this.ws.close(1000);
  }

  onFrame(fn: (channel: number, data: Buffer) => void): void {
    this.ws.on('message', (raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
      const buf = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
      if (buf.length === 0) return;
      if (this.base64 || !isBinary) {
        const channel = buf[0] - 48;
        fn(channel, Buffer.from(buf.subarray(1).toString(), 'base64'));
      } else fn(buf[0], buf.subarray(1));
    });
  }

  onStdin(fn: (data: Buffer) => void): void {
    this.onFrame((ch, data) => {
      if (ch === STDIN) fn(data);
    });
  }

  onStdinEnd(fn: () => void): void {
    // v5's close frame: channel 255 naming the channel the client has finished writing.
    this.onFrame((ch, data) => {
      if (ch === CLOSE && data[0] === STDIN) fn();
    });
  }

  onResize(fn: (width: number, height: number) => void): void {
    this.onFrame((ch, data) => {
      if (ch === RESIZE) for (const s of parseResizes(data.toString())) fn(s.width, s.height);
    });
  }

  onClose(fn: () => void): void {
    this.ws.on('close', fn);
  }
}

export class StreamingServer implements StreamingRegistry {
  private readonly pending = new Map<string, Pending>();
  private readonly http: http.Server;
  private readonly wss: WebSocketServer;
  private baseUrl = '';
  private readonly ttl: number;
  private readonly sessions = new Set<{ kill(): void }>();
  /** Upgraded SPDY connections: the HTTP server keeps counting them, so close() must end them itself. */
  private readonly spdySockets = new Set<Duplex>();

  constructor(
    private readonly runtime: CriRuntime,
    private readonly opts: StreamingServerOptions = {},
  ) {
    this.ttl = opts.tokenTtlMs ?? 60_000;
    this.http = http.createServer((req, res) => {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(
        `${req.url ?? ''} needs a connection upgrade: WebSocket (subprotocol ${REMOTE_COMMAND_PROTOCOLS[0]} or ${REMOTE_COMMAND_PROTOCOLS[1]}) or SPDY/3.1 with X-Stream-Protocol-Version\n`,
      );
    });
    this.wss = new WebSocketServer({
      noServer: true,
      handleProtocols: (protocols) => {
        for (const p of REMOTE_COMMAND_PROTOCOLS) if (protocols.has(p)) return p;
        return false;
      },
    });
    this.http.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.opts.port ?? 0, this.opts.host ?? '127.0.0.1', () => resolve());
    });
    const addr = this.http.address() as AddressInfo;
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    this.baseUrl = `http://${host}:${addr.port}`;
    return this.baseUrl;
  }

  get url(): string {
    return this.baseUrl;
  }

  register(kind: 'exec' | 'attach' | 'portforward', req: StreamRequest): string {
    const now = Date.now();
    for (const [t, p] of this.pending) if (p.expires < now) this.pending.delete(t);
    const token = randomBytes(12).toString('base64url');
    this.pending.set(token, { req, expires: now + this.ttl });
    return `${this.baseUrl}/${kind}/${token}`;
  }

  private reject(socket: Duplex, code: number, message: string) {
    socket.end(`HTTP/1.1 ${code} ${http.STATUS_CODES[code]}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${message}\n`);
  }

  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer) {
    const url = new URL(req.url ?? '/', 'http://x');
    const m = /^\/(exec|attach|portforward)\/([\w-]+)$/.exec(url.pathname);
    const spdy = isSpdyUpgrade(req);
    if (!spdy && (req.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
      this.reject(
        socket,
        400,
        `unable to upgrade: upgrade ${JSON.stringify(req.headers.upgrade ?? '')} is not supported: send "Upgrade: websocket" or "Connection: Upgrade" with "Upgrade: SPDY/3.1"`,
      );
      return;
    }
    const pending = m ? this.pending.get(m[2]) : undefined;
    if (!m || !pending || pending.expires < Date.now() || pending.req.kind !== m[1]) {
      this.reject(socket, 404, 'unknown or expired streaming URL: ask the runtime for a new one');
      return;
    }
    this.pending.delete(m[2]); // one connection per URL, like kubelet's token cache
    if (spdy) {
      this.spdySockets.add(socket);
      socket.once('close', () => this.spdySockets.delete(socket));
      const r = pending.req;
      if (r.kind === 'portforward') {
        acceptSpdyPortForward(req, socket, head, r.sandboxId, r.ports, (port) => this.runtime.openPortForward(r.sandboxId, port));
      } else acceptSpdyCommand(req, socket, head, r.opts, (t) => this.serveCommand(t, r));
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new ChannelConn(ws, ws.protocol, this.opts.clientSettleMs ?? CLIENT_SETTLE_MS);
      if (pending.req.kind === 'portforward') this.servePortForward(conn, pending.req.sandboxId, url, pending.req.ports);
      else {
        // An empty frame on the lowest writable channel tells a WebSocket client the stream is established.
        conn.send(pending.req.opts.stdout ? STDOUT : pending.req.opts.stderr ? STDERR : ERROR, Buffer.alloc(0));
        this.serveCommand(conn, pending.req);
      }
    });
  }

  /** Runs an exec/attach session over a connected transport until the command ends or the client leaves. */
  serveCommand(conn: CommandTransport, req: Extract<StreamRequest, { kind: 'exec' | 'attach' }>): void {
    let session: StreamSession | undefined;
    let closed = false;
    const pendingIn: Buffer[] = [];
    let pendingEnd = false;
    let size: { width: number; height: number } | undefined;
    conn.onStdin((d) => {
      if (session) session.stdin?.write(d);
      else pendingIn.push(d);
    });
    conn.onStdinEnd(() => {
      if (session) session.stdin?.end();
      else pendingEnd = true;
    });
    conn.onClose(() => {
      closed = true;
      if (!session) return;
      session.stdin?.end();
      session.kill(); // exec: the command dies with its client; attach: only detaches
      this.sessions.delete(session);
    });
    const open = () => {
      if (session || closed) return;
      clearTimeout(waitForSize);
      try {
        session =
          req.kind === 'exec'
            ? this.runtime.openExec(req.containerId, req.cmd, req.opts)
            : this.runtime.openAttach(req.containerId, req.opts);
      } catch (err) {
        conn.send(ERROR, conn.versioned ? errorStatusJson(errorMessage(err)) : errorMessage(err));
        conn.finish();
        return;
      }
      this.run(conn, req, session, size, pendingIn, pendingEnd);
    };
    // A terminal client sends its size first thing; waiting briefly for it lets the command start with the
    // right size instead of 80x24 plus a SIGWINCH.
    conn.onResize((width, height) => {
      if (session) session.resize?.(width, height);
      else {
        size = { width, height };
        open();
      }
    });
    const waitForSize = setTimeout(open, req.opts.tty && conn.resizable ? TTY_SIZE_WAIT_MS : 0);
  }

  private run(
    conn: CommandTransport,
    req: Extract<StreamRequest, { kind: 'exec' | 'attach' }>,
    session: StreamSession,
    size: { width: number; height: number } | undefined,
    pendingIn: Buffer[],
    pendingEnd: boolean,
  ) {
    this.sessions.add(session);
    if (size) session.resize?.(size.width, size.height);
    for (const d of pendingIn) session.stdin?.write(d);
    if (pendingEnd) session.stdin?.end();
    const outputsDone: Promise<void>[] = [];
    for (const [stream, ch] of [
      [session.stdout, STDOUT],
      [session.stderr, STDERR],
    ] as const) {
      if (!stream) continue;
      outputsDone.push(
        new Promise((resolve) => {
          stream.on('data', (d: Buffer) => conn.send(ch, d));
          stream.on('end', resolve);
          stream.on('close', resolve);
          stream.on('error', () => resolve());
        }),
      );
    }
    session.exit.then(
      async (code) => {
        await Promise.race([Promise.all(outputsDone), new Promise((r) => setTimeout(r, 2000))]);
        const cmd = req.kind === 'exec' ? req.cmd : undefined;
        if (conn.versioned) conn.send(ERROR, statusJson(code, cmd));
        else if (code !== 0) conn.send(ERROR, exitMessage(code, cmd));
        conn.finish();
        this.sessions.delete(session);
      },
      (err) => {
        conn.send(ERROR, conn.versioned ? errorStatusJson(errorMessage(err)) : errorMessage(err));
        conn.finish();
        this.sessions.delete(session);
      },
    );
  }

  private servePortForward(conn: ChannelConn, sandboxId: string, url: URL, allowed: number[]) {
    const asked = url.searchParams.getAll('port').flatMap((p) => p.split(','));
    const ports = (asked.length ? asked.map(Number) : allowed).filter((p) => Number.isInteger(p));
    if (ports.length === 0 || ports.some((p) => p < 1 || p > 65535 || (allowed.length > 0 && !allowed.includes(p)))) {
      conn.send(1, `invalid port list ${JSON.stringify(asked.length ? asked : allowed)}: give ?port=N for ports 1-65535 the PortForward request allowed`);
      conn.finish();
      return;
    }
    const conns: (Duplex | undefined)[] = [];
    const early: Buffer[][] = ports.map(() => []);
    ports.forEach((port, i) => {
      const prefix = Buffer.alloc(2);
      prefix.writeUInt16LE(port);
      conn.send(2 * i, prefix);
      conn.send(2 * i + 1, prefix);
      this.runtime.openPortForward(sandboxId, port).then(
        (stream) => {
          conns[i] = stream;
          for (const d of early[i].splice(0)) stream.write(d);
          stream.on('data', (d: Buffer) => conn.send(2 * i, d));
          stream.on('error', (err) => conn.send(2 * i + 1, `error forwarding port ${port}: ${errorMessage(err)}`));
          stream.on('end', () => conn.finish());
        },
        (err) => conn.send(2 * i + 1, `error forwarding port ${port} to pod ${sandboxId}: ${errorMessage(err)}`),
      );
    });
    conn.onFrame((ch, data) => {
      const i = ch >> 1;
      if (ch % 2 !== 0 || i >= ports.length) return;
      const target = conns[i];
      if (target) target.write(data);
      else early[i].push(data);
    });
    conn.ws.on('close', () => {
      for (const c of conns) c?.destroy();
    });
  }

  async close(): Promise<void> {
    for (const s of this.sessions) s.kill();
    for (const client of this.wss.clients) client.terminate();
    for (const socket of this.spdySockets) socket.destroy();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
