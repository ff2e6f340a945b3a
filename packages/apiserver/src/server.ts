// The API server's listeners: a unix socket (owner-only, for local tools and kemu's own processes) and,
// when configured, HTTPS on a TCP port serving HTTP/2 and HTTP/1.1 (ALPN) with the cluster CA's serving
// certificate, asking clients for a certificate signed by that CA (CN = user, O = groups). Both feed the same
// RequestHandler. Upgrade requests (exec, attach, port-forward over WebSocket or SPDY, which clients send
// over HTTP/1.1) pass the same authentication and authorization and are then relayed, bytes unchanged, to
// the node's CRI streaming server, as kube-apiserver relays them through the kubelet.
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { StatusError, type Store } from '@kemu/core';
import { allowAllAdmission, type AuthSeams, type Authenticator } from './auth-seams.js';
import { userFromCertificate } from './ca.js';
import { type HandlerOptions, type Origin, RequestHandler, resolveKind } from './handler.js';
import type { Renderers, RequestContext } from './request-context.js';
import { MAX_REQUEST_BODY_BYTES } from './request-body.js';
import { toStatus } from './responses.js';
import type { ApiExtensions } from './server-extensions.js';
import { streamTarget } from './subresources.js';
import { serveStoredCustomResources } from './crd/index.js';

export type { ApiExtensions, ExecResult, NodeAddRequest, PodLogOptions, StreamOptions } from './server-extensions.js';

export interface TlsServing {
  /** PEM serving certificate (and chain) and its key. */
  cert: string;
  key: string;
  /** PEM CA bundle client certificates are verified against. */
  clientCA?: string;
}

export interface ApiServerOptions extends AuthSeams {
  /** Serve HTTPS on TCP too. */
  tcp?: { host?: string; port?: number; tls: TlsServing };
  /** Tables, protobuf: modules that render what the core server does not. */
  renderers?: Renderers;
  /** OpenAPI documents by path (/openapi/v2, /openapi/v3, /openapi/v3/apis/<g>/<v>). */
  openapi?: HandlerOptions['openapi'];
  maxRequestBodyBytes?: number;
  /** Serve CustomResourceDefinitions and the kinds they define (default true). */
  customResources?: boolean;
}

export interface ApiServer {
  socketPath: string;
  /** The unix-socket server. */
  server: http.Server;
  /** https://host:port when serving TCP. */
  url?: string;
  port?: number;
  handler: RequestHandler;
  close(): Promise<void>;
}

/** The x509 client-certificate authenticator: a certificate the TLS layer verified names the user. */
const certUsers = new WeakMap<Buffer, { name: string; groups: string[] }>();
const x509Authenticator: Authenticator = {
  async authenticate(req) {
    const leaf = req.peerCertificates?.[0];
    if (!leaf) return null;
    let parsed = certUsers.get(leaf);
    if (!parsed) certUsers.set(leaf, (parsed = userFromCertificate(leaf)));
    const { name, groups } = parsed;
    if (!name) return null;
    return { user: { name, groups: [...groups, 'system:authenticated'] } };
  },
};

function listenUnix(server: http.Server, socketPath: string): Promise<void> {
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  const st = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (st) {
    if (!st.isSocket()) throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
    fs.unlinkSync(socketPath);
  }
  const previous = process.umask(0o177);
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  }).finally(() => {
    process.umask(previous);
    if (fs.existsSync(socketPath)) fs.chmodSync(socketPath, 0o600);
  });
}

function rejectUpgrade(socket: Duplex, err: unknown) {
  const status = toStatus(err);
  const body = JSON.stringify(status);
  const reason = http.STATUS_CODES[status.code] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${status.code} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Relays an upgrade request to the streaming server at `target`, then pipes both ways. */
function relayUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, target: string, open: Set<Duplex>) {
  const t = new URL(target);
  const port = Number(t.port) || (t.protocol === 'https:' ? 443 : 80);
  const upstream: Duplex =
    t.protocol === 'https:' ? tls.connect({ host: t.hostname, port, rejectUnauthorized: false }) : net.connect(port, t.hostname);
  open.add(socket);
  open.add(upstream);
  const drop = () => {
    open.delete(socket);
    open.delete(upstream);
    socket.destroy();
    upstream.destroy();
  };
  upstream.once(t.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
    let lines = `${req.method} ${t.pathname}${t.search} HTTP/1.1\r\n`;
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const k = req.rawHeaders[i];
      // Credentials stay here: the streaming server is reached by its one-time URL.
      if (/^(authorization|host|impersonate-)/i.test(k)) continue;
      lines += `${k}: ${req.rawHeaders[i + 1]}\r\n`;
    }
    lines += `Host: ${t.host}\r\n\r\n`;
    upstream.write(lines);
    if (head.length) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on('error', drop);
  socket.on('error', drop);
  upstream.on('close', drop);
  socket.on('close', drop);
}

export async function startApiServer(
  store: Store,
  socketPath: string,
  ext: ApiExtensions = {},
  options: ApiServerOptions = {},
): Promise<ApiServer> {
  const handler = new RequestHandler(
    store,
    ext,
    {
      endpoints: options.endpoints,
      authenticator: options.authenticator,
      anonymous: options.anonymous,
      audit: options.audit,
      impersonator: options.impersonator,
      authorizer: options.authorizer,
      admission: options.admission,
      renderers: options.renderers,
      openapi: options.openapi,
      maxRequestBodyBytes: options.maxRequestBodyBytes ?? MAX_REQUEST_BODY_BYTES,
    },
    x509Authenticator,
  );
  const relayed = new Set<Duplex>();
  let serverAddress = '127.0.0.1';
  // CRDs already in the store are served before the first request (new ones register as they are written).
  if (options.customResources !== false) await serveStoredCustomResources(store);

  const onUpgrade = (origin: Origin) => (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const audit = handler.newAudit(req);
    (async () => {
      const url = new URL(req.url ?? '/', 'http://kemu');
      const { user, info } = await handler.admitRequest(req, origin, url, audit);
      const sub = info.subresource;
      if (!info.isResourceRequest || info.resource !== 'pods' || !['exec', 'attach', 'portforward'].includes(sub))
        throw new StatusError('BadRequest', 400, `${url.pathname} cannot be upgraded: only pods/exec, pods/attach and pods/portforward stream`);
      const kind = resolveKind(info);
      const ctx: RequestContext = {
        store,
        ext,
        admission: options.admission ?? allowAllAdmission,
        renderers: {},
        req,
        res: undefined as never,
        info,
        kind,
        query: url.searchParams,
        user,
        rendering: { kind: 'object', media: 'json' },
        maxBodyBytes: 0,
      };
      const target = await streamTarget(ctx, info.namespace, info.name, sub as 'exec' | 'attach' | 'portforward');
      handler.recordAudit(audit, 'ResponseStarted', 101);
      relayUpgrade(req, socket, head, target, relayed);
    })().catch((err) => {
      const status = toStatus(err);
      handler.recordAudit(audit, 'ResponseComplete', status.code, { reason: status.reason, message: status.message });
      rejectUpgrade(socket, err);
    });
  };

  const local: Origin = { localSocket: true, get serverAddress() { return serverAddress; } };
  const unix = http.createServer((req, res) => void handler.handle(req, res, local));
  unix.on('upgrade', onUpgrade(local));
  unix.keepAliveTimeout = 65_000;
  await listenUnix(unix, socketPath);

  let tlsServer: tls.Server | undefined;
  const tlsOpen = new Set<tls.TLSSocket>();
  let h1: http.Server | undefined;
  let h2: http2.Http2Server | undefined;
  let port: number | undefined;
  if (options.tcp) {
    const remote: Origin = { localSocket: false, get serverAddress() { return serverAddress; } };
    const t = options.tcp.tls;
    h1 = http.createServer((req, res) => void handler.handle(req, res, remote));
    h1.on('upgrade', onUpgrade(remote));
    h1.keepAliveTimeout = 65_000;
    h2 = http2.createServer({ settings: { maxConcurrentStreams: 1000 } }, (req, res) => void handler.handle(req, res, remote));
    tlsServer = tls.createServer({
      cert: t.cert,
      key: t.key,
      ca: t.clientCA,
      requestCert: Boolean(t.clientCA),
      rejectUnauthorized: false,
      ALPNProtocols: ['h2', 'http/1.1'],
      minVersion: 'TLSv1.2',
    });
    tlsServer.on('secureConnection', (socket) => {
      tlsOpen.add(socket);
      socket.once('close', () => tlsOpen.delete(socket));
      if (socket.alpnProtocol === 'h2') h2!.emit('connection', socket);
      else h1!.emit('connection', socket);
    });
    tlsServer.on('tlsClientError', () => {});
    const host = options.tcp.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      tlsServer!.once('error', reject);
      tlsServer!.listen(options.tcp!.port ?? 0, host, () => resolve());
    });
    port = (tlsServer.address() as net.AddressInfo).port;
    serverAddress = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  return {
    socketPath,
    server: unix,
    port,
    url: port !== undefined ? `https://${serverAddress}` : undefined,
    handler,
    close: async () => {
      for (const s of relayed) s.destroy();
      unix.closeAllConnections?.();
      h1?.closeAllConnections?.();
      const closing: Promise<void>[] = [new Promise<void>((r) => unix.close(() => r()))];
      if (tlsServer) {
        closing.push(new Promise<void>((r) => tlsServer!.close(() => r())));
        h2?.close();
        for (const s of tlsOpen) s.destroy();
      }
      await Promise.all(closing);
    },
  };
}
