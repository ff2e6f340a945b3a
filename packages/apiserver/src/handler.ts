// One request through kube-apiserver's filter chain and into its handler:
//   authenticate -> audit (RequestReceived) -> impersonate -> authorize -> route (discovery, health,
//   metrics, resources and their subresources; admission runs inside the write handlers) -> audit
//   (ResponseComplete) and metrics.
// Every failure becomes a Status body with the HTTP code upstream gives (responses.ts).
import { randomUUID } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { type KindInfo, kindForResource, StatusError, type Store } from '@kemu/core';
import {
  type AdmissionChain,
  allowAllAdmission,
  allowAllAuthorizer,
  anonymousUser,
  type AuditEvent,
  type AuditSink,
  type AuthEndpoint,
  type AuthenticationRequest,
  type Authenticator,
  type Authorizer,
  discardAudit,
  type Impersonator,
  type RequestInfo,
  type UserInfo,
} from './auth-seams.js';
import { negotiate, type Rendering } from './content-negotiation.js';
import { discoveryDocument, pathNotFound } from './discovery.js';
import { defaultImpersonator } from './authn/impersonation.js';
import { customResourceScale } from './crd/scale.js';
import { authorizationForbidden } from './authz/forbidden.js';
import { ApiMetrics } from './metrics.js';
import type { Renderers, RequestContext } from './request-context.js';
import { decodeBody, type IncomingRequest, MAX_REQUEST_BODY_BYTES, readBody } from './request-body.js';
import { parseRequestUrl, pathSegments, queryBool, type RequestUrl, requestInfo } from './request-info.js';
import { getObject, listObjects } from './rest-read.js';
import { createObject, deleteCollection, dryRunOf, deleteObject, patchObject, updateObject } from './rest-write.js';
import { EVENTS_GROUP, eventsV1Kind, eventsV1Store } from './events-v1.js';
import { proxyToNode } from './node-proxy.js';
import { METRICS_GROUP, resourceMetricsDiscovery, serveResourceMetrics } from './resource-metrics-api.js';
import { type OutgoingResponse, send, sendError, sendText } from './responses.js';
import type { ApiExtensions, NodeAddRequest } from './server-extensions.js';
import { bindPod, evictPod, podLog, scale } from './subresources.js';
import { versionInfo } from './version.js';
import { serveWatch, type WatchEncoder } from './watch.js';
import { defaultOpenApi, defaultRenderers } from './default-renderers.js';

export interface HandlerOptions {
  endpoints?: AuthEndpoint[];
  authenticator?: Authenticator;
  anonymous?: boolean;
  audit?: AuditSink;
  impersonator?: Impersonator;
  authorizer?: Authorizer;
  admission?: AdmissionChain;
  renderers?: Renderers;
  maxRequestBodyBytes?: number;
  /** The OpenAPI documents, when a module serves them: path under /openapi (and Accept) -> document or undefined. */
  openapi?(path: string, accept: string): unknown | undefined;
}

/** The transport facts the pipeline needs about where a request came from. */
export interface Origin {
  localSocket: boolean;
  /** host:port clients reach this server at (for /api's serverAddressByClientCIDRs). */
  serverAddress: string;
}

/** Until an authenticator is configured: the local socket is the cluster admin (its file mode is the gate). */
const localSocketAdmin: Authenticator = {
  async authenticate(req) {
    return req.localSocket ? { user: { name: 'kemu-admin', groups: ['system:masters', 'system:authenticated'] } } : null;
  },
};

/** The connection's verified client certificate chain, read once per TLS connection (not per request). */
const peerChains = new WeakMap<object, Buffer[] | null>();

/** The client certificate chain the connection presented, and whether the TLS layer verified it. */
const presentedChains = new WeakMap<object, Buffer[] | null>();

/** Long-running subresources (for apiserver_longrunning_requests). */
const LONG_RUNNING_SUBRESOURCES = new Set(['log', 'exec', 'attach', 'portforward', 'proxy']);

/** The transport socket of a request: an HTTP/2 request's session socket (its streams share it), an HTTP/1.1 request's connection. */
function transportSocket(req: IncomingRequest): TLSSocket | undefined {
  return ((req as { stream?: { session?: { socket?: TLSSocket } } }).stream?.session?.socket ?? req.socket) as TLSSocket | undefined;
}

/** A client certificate chain that was sent but did not verify against the cluster CA (for a 401). */
export function unverifiedPeerCertificates(req: IncomingRequest): Buffer[] | undefined {
  const socket = transportSocket(req);
  if (!socket || typeof socket.getPeerCertificate !== 'function' || socket.authorized) return undefined;
  let chain = presentedChains.get(socket);
  if (chain === undefined) {
    const leaf = socket.getPeerCertificate(false);
    chain = leaf && leaf.raw ? [leaf.raw] : null;
    presentedChains.set(socket, chain);
  }
  return chain ?? undefined;
}

/** Client certificates the TLS layer verified against the cluster CA: CN is the user, O the groups. */
export function peerCertificates(req: IncomingRequest): Buffer[] | undefined {
  // HTTP/2 requests share their session's socket; HTTP/1.1 requests their connection's.
  const socket = transportSocket(req);
  if (!socket || typeof socket.getPeerCertificate !== 'function') return undefined;
  const cached = peerChains.get(socket);
  if (cached !== undefined) return cached ?? undefined;
  let chain: Buffer[] | null = null;
  if (socket.authorized) {
    const out: Buffer[] = [];
    let cert = socket.getPeerCertificate(true);
    const seen = new Set<string>();
    while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
      seen.add(cert.fingerprint256);
      out.push(cert.raw);
      cert = cert.issuerCertificate;
    }
    chain = out.length ? out : null;
  }
  peerChains.set(socket, chain);
  return chain ?? undefined;
}

export class RequestHandler {
  readonly metrics = new ApiMetrics();
  private readonly authenticator: Authenticator;
  private readonly authorizer: Authorizer;
  private readonly admission: AdmissionChain;
  private readonly audit: AuditSink;
  private readonly impersonator: Impersonator;
  private readonly renderers: Renderers;
  ready = true;

  constructor(
    readonly store: Store,
    readonly ext: ApiExtensions,
    private readonly options: HandlerOptions = {},
    /** Extra authenticator tried before the seam's (the x509 client certificate one, set by the server). */
    certAuthenticator?: Authenticator,
  ) {
    const chain = [options.authenticator, certAuthenticator, localSocketAdmin].filter(Boolean) as Authenticator[];
    this.authenticator = {
      async authenticate(req) {
        for (const a of chain) {
          const r = await a.authenticate(req);
          if (r) return r;
        }
        return null;
      },
    };
    this.authorizer = options.authorizer ?? allowAllAuthorizer;
    this.admission = options.admission ?? allowAllAdmission;
    this.audit = options.audit ?? discardAudit;
    this.impersonator = options.impersonator ?? defaultImpersonator;
    this.renderers = { ...defaultRenderers, ...(options.renderers ?? {}) };
  }

  /**
   * Authentication, audit, impersonation and authorization for a request: the user it runs as and what it
   * is about. Throws the 401/403 Status errors.
   */
  async admitRequest(req: IncomingRequest, origin: Origin, url: RequestUrl, audit: Partial<AuditEvent>): Promise<{ user: UserInfo; info: RequestInfo }> {
    const authReq: AuthenticationRequest = {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headers as AuthenticationRequest['headers'],
      remoteAddress: transportSocket(req)?.remoteAddress,
      peerCertificates: origin.localSocket ? undefined : peerCertificates(req),
      unverifiedPeerCertificates: origin.localSocket ? undefined : unverifiedPeerCertificates(req),
      localSocket: origin.localSocket,
    };
    const info = requestInfo(req.method ?? 'GET', url.pathname, url.searchParams);
    const authn = await this.authenticator.authenticate(authReq);
    let user: UserInfo;
    if (authn) user = authn.user;
    else if (this.options.anonymous) user = anonymousUser();
    else throw new StatusError('Unauthorized', 401, 'Unauthorized');
    if (this.audit !== discardAudit) {
      Object.assign(audit, {
        user,
        verb: info.verb,
        objectRef: info.isResourceRequest
          ? { resource: info.resource, namespace: info.namespace || undefined, name: info.name || undefined, apiGroup: info.apiGroup, apiVersion: info.apiVersion, subresource: info.subresource || undefined }
          : undefined,
      });
    }
    this.recordAudit(audit, 'RequestReceived');
    const imp = await this.impersonator.impersonate(user, authReq, this.authorizer);
    if (imp.impersonatedBy) {
      user = imp.user;
      audit.impersonatedUser = imp.user;
    }
    const decision = await this.authorizer.authorize({ ...info, user });
    if (decision.decision !== 'allow') throw authorizationForbidden({ ...info, user }, decision.reason);
    return { user, info };
  }

  recordAudit(audit: Partial<AuditEvent>, stage: AuditEvent['stage'], code?: number, status?: { reason?: string; message?: string }): void {
    // Without an audit backend there is nobody to build events for.
    if (this.audit === discardAudit) return;
    try {
      this.audit.record({
        ...(audit as AuditEvent),
        stage,
        stageTimestamp: new Date().toISOString(),
        ...(code !== undefined ? { responseStatus: { code, ...(status ?? {}) } } : {}),
      });
    } catch {
      // An audit backend must not fail the request.
    }
  }

  newAudit(req: IncomingRequest): Partial<AuditEvent> {
    if (this.audit === discardAudit) return {};
    return {
      auditID: randomUUID(),
      requestURI: req.url ?? '/',
      sourceIPs: req.socket?.remoteAddress ? [req.socket.remoteAddress] : [],
      userAgent: req.headers['user-agent'] as string | undefined,
      requestReceivedTimestamp: new Date().toISOString(),
      user: anonymousUser(),
      verb: (req.method ?? 'get').toLowerCase(),
    };
  }

  async handle(req: IncomingRequest, res: OutgoingResponse, origin: Origin): Promise<void> {
    // (A double, not a BigInt: nothing allocated per request for the duration metric.)
    const started = performance.now();
    const audit = this.newAudit(req);
    let info: RequestInfo | undefined;
    let longRunningDone: (() => void) | undefined;
    try {
      const url = parseRequestUrl(req.url ?? '/');
      const admitted = await this.admitRequest(req, origin, url, audit);
      info = admitted.info;
      if (info.verb === 'watch' || LONG_RUNNING_SUBRESOURCES.has(info.subresource))
        longRunningDone = this.metrics.longRunningStarted(labelsOf(info));
      await this.route(req, res, url, origin, admitted.user, info);
    } catch (err) {
      const status = sendError(res, err);
      this.recordAudit(audit, 'ResponseComplete', status.code, { reason: status.reason, message: status.message });
      this.observe(info, status.code, started);
      longRunningDone?.();
      return;
    }
    longRunningDone?.();
    const code = res.statusCode;
    this.recordAudit(audit, 'ResponseComplete', code);
    this.observe(info, code, started);
  }

  private observe(info: RequestInfo | undefined, code: number, started: number) {
    const seconds = (performance.now() - started) / 1000;
    this.metrics.observe(info ? labelsOf(info) : { verb: 'unknown', group: '', version: '', resource: '', subresource: '', scope: '' }, code, seconds);
  }

  private async route(req: IncomingRequest, res: OutgoingResponse, url: RequestUrl, origin: Origin, user: UserInfo, info: RequestInfo): Promise<void> {
    const q = url.searchParams;
    if (!info.isResourceRequest) return this.nonResource(req, res, url, origin);
    const endpoint = (this.options.endpoints ?? []).find(
      (e) => e.group === info.apiGroup && e.version === info.apiVersion && e.resource === info.resource && (e.subresource ?? '') === info.subresource,
    );
    if (endpoint) return this.authEndpoint(endpoint, req, res, user, info);
    if (info.apiGroup === METRICS_GROUP && this.ext.resourceMetrics)
      return serveResourceMetrics({ resourceMetrics: this.ext.resourceMetrics }, this.store, info, q, res);
    const kind = resolveKind(info);
    const namespace = kind.namespaced ? info.namespace : '';
    // A name is only on the path for verbs on one object (list/watch may carry one from a field selector).
    const onCollection = info.verb === 'list' || info.verb === 'watch' || info.verb === 'deletecollection' || (info.verb === 'create' && !info.subresource);
    const name = onCollection ? '' : info.name;
    if (kind.namespaced && !namespace && !onCollection)
      throw new StatusError('NotFound', 404, 'the server could not find the requested resource', {});
    if (!kind.namespaced && info.namespace && info.resource !== 'namespaces') throw pathNotFound();
    if (info.verb === 'create' && kind.namespaced && !namespace && !info.subresource)
      throw new StatusError('MethodNotAllowed', 405, 'the server does not allow this method on the requested resource');
    const rendering: Rendering = negotiate(req.headers.accept, {
      tables: Boolean(this.renderers.table),
      protobuf: Boolean(this.renderers.protobufEncode) && (this.renderers.protobufSupports?.(kind.apiVersion, kind.kind) ?? true),
      resource: true,
    });
    const ctx: RequestContext = {
      store: kind.group === EVENTS_GROUP ? eventsV1Store(this.store) : this.store,
      ext: this.ext,
      admission: this.admission,
      renderers: this.renderers,
      req,
      res,
      info,
      kind,
      query: q,
      user,
      rendering,
      maxBodyBytes: this.options.maxRequestBodyBytes ?? MAX_REQUEST_BODY_BYTES,
    };
    const sub = info.subresource;
    const method = req.method ?? 'GET';
    if (!sub) {
      switch (info.verb) {
        case 'get':
          return getObject(ctx, namespace, name);
        case 'list':
          return listObjects(ctx, namespace || undefined);
        case 'watch':
          return serveWatch(ctx, namespace || undefined, watchEncoder(ctx));
        case 'create':
          if (kind.kind === 'Binding') return this.legacyBinding(ctx, namespace);
          return createObject(ctx, namespace);
        case 'update':
          return updateObject(ctx, namespace, name);
        case 'patch':
          return patchObject(ctx, namespace, name);
        case 'delete':
          return deleteObject(ctx, namespace, name);
        case 'deletecollection':
          return deleteCollection(ctx, namespace || undefined);
      }
      throw methodNotAllowed();
    }
    if (sub === 'status' && kind.hasStatus) {
      if (info.verb === 'get') return getObject(ctx, namespace, name);
      if (info.verb === 'update') return updateObject(ctx, namespace, name);
      if (info.verb === 'patch') return patchObject(ctx, namespace, name);
      throw methodNotAllowed();
    }
    if (sub === 'scale') {
      if (['Deployment', 'ReplicaSet', 'StatefulSet', 'ReplicationController'].includes(kind.kind)) return scale(ctx, namespace, name, method);
      const custom = customResourceScale(kind.kind);
      if (custom) return scale(ctx, namespace, name, method, custom);
    }
    if (kind.kind === 'Pod') {
      if (sub === 'ephemeralcontainers') {
        // The whole Pod is read and written, but a write changes only spec.ephemeralContainers.
        if (info.verb === 'get') return getObject(ctx, namespace, name);
        if (info.verb === 'update') return updateObject(ctx, namespace, name);
        if (info.verb === 'patch') return patchObject(ctx, namespace, name);
        throw methodNotAllowed();
      }
      if (sub === 'binding' && info.verb === 'create') return bindPod(ctx, namespace, name);
      if (sub === 'eviction' && info.verb === 'create') return evictPod(ctx, namespace, name);
      if (sub === 'log' && info.verb === 'get') return podLog(ctx, namespace, name);
      if (sub === 'exec' && method === 'POST' && this.ext.podExec && !queryBool(q, 'stdin') && !req.headers.upgrade) {
        // kemu's own exec-to-completion (no stream); kubectl always asks for an upgrade instead.
        const command = q.getAll('command');
        if (!command.length) throw new StatusError('BadRequest', 400, 'you must specify at least one command for the container');
        return send(res, 200, await this.ext.podExec(namespace, name, { container: q.get('container') ?? undefined, command }));
      }
      if (['exec', 'attach', 'portforward'].includes(sub))
        throw new StatusError('BadRequest', 400, 'Upgrade request required');
    }
    if (sub === 'proxy' && kind.kind === 'Node') return proxyToNode(ctx, name, new URL(req.url ?? '/', 'http://kemu'));
    if (sub === 'finalize' && kind.kind === 'Namespace' && info.verb === 'update') return updateObject(ctx, '', name);
    throw pathNotFound();
  }

  /** The create-only endpoints the auth modules serve (reviews, TokenRequest): 201 with what they return. */
  private async authEndpoint(e: AuthEndpoint, req: IncomingRequest, res: OutgoingResponse, user: UserInfo, info: RequestInfo): Promise<void> {
    if (info.verb !== 'create') throw methodNotAllowed();
    if (e.namespaced && !info.namespace) throw pathNotFound();
    const body = decodeBody(await readBody(req, this.options.maxRequestBodyBytes ?? MAX_REQUEST_BODY_BYTES), req.headers['content-type'], {
      protobuf: this.renderers.protobufDecode,
    });
    const q = new URL(req.url ?? '/', 'http://kemu').searchParams;
    const out = await e.create({ user, namespace: info.namespace, name: info.name, body, dryRun: dryRunOf(q) });
    send(res, 201, out);
  }

  private async legacyBinding(ctx: RequestContext, namespace: string): Promise<void> {
    // POST /api/v1/namespaces/<ns>/bindings: the pod is named by the Binding's metadata.name.
    const body = decodeBody(await readBody(ctx.req, ctx.maxBodyBytes), ctx.req.headers['content-type'], { protobuf: this.renderers.protobufDecode });
    const name = (body as { metadata?: { name?: unknown } } | null)?.metadata?.name;
    if (typeof name !== 'string' || !name) throw new StatusError('BadRequest', 400, 'a Binding needs metadata.name (the pod to bind)');
    return bindPod(ctx, namespace, name, body);
  }

  private async nonResource(req: IncomingRequest, res: OutgoingResponse, url: RequestUrl, origin: Origin): Promise<void> {
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';
    if (path === '/kemu/nodes' || path.startsWith('/kemu/nodes/')) return this.kemuNodes(req, res, path, method);
    if (method !== 'GET' && method !== 'HEAD') throw methodNotAllowed();
    if (path === '/version') return send(res, 200, versionInfo());
    if (path === '/healthz' || path === '/livez' || path === '/readyz' || /^\/(healthz|livez|readyz)\/[a-z0-9-]+$/.test(path)) {
      const ok = path.startsWith('/readyz') ? this.ready : true;
      if (queryBool(url.searchParams, 'verbose')) {
        const word = path.split('/')[1];
        return sendText(res, ok ? 200 : 500, `[+]ping ok\n[+]log ok\n[${ok ? '+' : '-'}]etcd ${ok ? 'ok' : 'failed'}\n${word} check ${ok ? 'passed' : 'failed'}\n`);
      }
      return sendText(res, ok ? 200 : 500, ok ? 'ok' : 'not ready');
    }
    if (path === '/metrics') return sendText(res, 200, this.metrics.text(), 'text/plain; version=0.0.4; charset=utf-8');
    if (path === '/openapi/v2' || path.startsWith('/openapi/v3')) {
      const doc = (this.options.openapi ?? defaultOpenApi)(path, String(req.headers.accept ?? ''));
      if (doc === undefined) throw pathNotFound();
      if (doc && typeof doc === 'object' && 'contentType' in doc && Buffer.isBuffer((doc as unknown as { body: unknown }).body)) {
        const d = doc as { body: Buffer; contentType: string };
        (res as import('node:http').ServerResponse).writeHead(200, { 'content-type': d.contentType, 'content-length': d.body.length });
        return void res.end(d.body);
      }
      if (typeof doc === 'string' || Buffer.isBuffer(doc)) return sendText(res, 200, doc as string, 'application/json');
      return send(res, 200, doc);
    }
    if (path.startsWith('/kemu/')) return this.kemuEndpoint(res, path.slice('/kemu/'.length), url.searchParams);
    const parts = pathSegments(path);
    const rendering = negotiate(req.headers.accept, { tables: false, protobuf: false, discovery: true });
    const doc = discoveryDocument({
      parts,
      aggregated: rendering.kind === 'discovery' ? rendering.version : undefined,
      serverAddress: origin.serverAddress,
      endpoints: this.options.endpoints,
      extra: this.ext.resourceMetrics ? resourceMetricsDiscovery() : [],
    });
    if (doc) return send(res, 200, doc.body, 'json', doc.contentType);
    if (path === '/') {
      const paths = ['/api', '/api/v1', '/apis', '/healthz', '/livez', '/metrics', '/openapi/v2', '/openapi/v3', '/readyz', '/version'];
      return send(res, 200, { paths });
    }
    throw pathNotFound();
  }

  /** POST /kemu/nodes adds nodes to the running cluster, DELETE /kemu/nodes/NAME removes one. */
  private async kemuNodes(req: IncomingRequest, res: OutgoingResponse, path: string, method: string): Promise<void> {
    const nodes = this.ext.nodes;
    if (!nodes) throw pathNotFound();
    if (path === '/kemu/nodes' && method === 'POST') {
      const body = decodeBody(await readBody(req, this.options.maxRequestBodyBytes ?? MAX_REQUEST_BODY_BYTES), req.headers['content-type'], {});
      if (!body || typeof body !== 'object' || Array.isArray(body)) throw new StatusError('BadRequest', 400, 'the request body must be a JSON object');
      return send(res, 201, await nodes.add(body as NodeAddRequest));
    }
    let name = '';
    try {
      name = decodeURIComponent(path.slice('/kemu/nodes/'.length));
    } catch {
      throw new StatusError('BadRequest', 400, 'the node name in the path is not valid percent-encoding');
    }
    if (path.startsWith('/kemu/nodes/') && name && !name.includes('/') && method === 'DELETE') {
      await nodes.remove(name);
      return send(res, 200, { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name, kind: 'nodes' } });
    }
    throw methodNotAllowed();
  }

  private async kemuEndpoint(res: OutgoingResponse, what: string, q: URLSearchParams): Promise<void> {
    if (what === 'trace' && this.ext.trace) return send(res, 200, await this.ext.trace(q.get('from') ?? '', q.get('to') ?? ''));
    if (what === 'info' && this.ext.info) return send(res, 200, await this.ext.info());
    if (what === 'resourceversion') return send(res, 200, { resourceVersion: await this.store.resourceVersion() });
    throw pathNotFound();
  }
}

/** Table watches (kubectl get -w): each object event's object is a one-row Table, headers only on the first. */
function watchEncoder(ctx: RequestContext): WatchEncoder | undefined {
  const r = ctx.rendering;
  const table = ctx.renderers.table;
  if (r.kind !== 'table' || !table) return undefined;
  let first = true;
  const includeObject = (ctx.query.get('includeObject') ?? 'Metadata') as 'None' | 'Metadata' | 'Object';
  return {
    encode(ev) {
      if (ev.type === 'ERROR' || ev.type === 'BOOKMARK') return `${JSON.stringify(ev)}\n`;
      const object = table(ctx.kind, [ev.object], { wide: false, includeObject, version: r.version, noHeaders: !first });
      first = false;
      return `${JSON.stringify({ type: ev.type, object })}\n`;
    },
  };
}

function methodNotAllowed(): StatusError {
  return new StatusError('MethodNotAllowed', 405, 'the server does not allow this method on the requested resource');
}

function labelsOf(info: RequestInfo) {
  const verb = info.verb.toUpperCase();
  return {
    verb: verb === 'GET' && !info.isResourceRequest ? 'GET' : verb,
    group: info.apiGroup,
    version: info.apiVersion,
    resource: info.resource,
    subresource: info.subresource,
    scope: !info.isResourceRequest ? '' : info.name ? 'resource' : info.namespace ? 'namespace' : 'cluster',
  };
}

/** The kind a resource request addresses; 404 when this server serves no such resource at that group/version. */
export function resolveKind(info: RequestInfo): KindInfo {
  if (info.apiGroup === EVENTS_GROUP && info.apiVersion === 'v1' && info.resource === 'events') return eventsV1Kind();
  const kind = kindForResource(info.resource);
  const gv = info.apiGroup ? `${info.apiGroup}/${info.apiVersion}` : info.apiVersion;
  if (!kind || kind.apiVersion !== gv) throw pathNotFound();
  return kind;
}

