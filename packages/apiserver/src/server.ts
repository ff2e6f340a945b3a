// A Kubernetes-style REST API over a @kemu/core store, served on a unix socket, so `kemu get/apply/...`
// (and any HTTP client) can drive a running cluster. Paths, verbs, watch streams and error bodies follow
// the Kubernetes API: /api/v1/namespaces/<ns>/pods/<name>, /apis/<group>/<version>/<resource>, Status
// objects with the HTTP code, `?watch=1` as newline-delimited JSON events.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import {
  BadRequestError,
  type Binding,
  type DeleteOptions,
  isStatusError,
  type KindInfo,
  kindForResource,
  type KubeObject,
  NotFoundError,
  type PatchType,
  type Store,
  StatusError,
} from '@kemu/core';

/** Extra endpoints a cluster adds: pod logs and exec, which need the node's runtime, and network traces. */
export interface ApiExtensions {
  podLog?(namespace: string, name: string, opts: { container?: string; tail?: number }): Promise<string>;
  podExec?(
    namespace: string,
    name: string,
    opts: { container?: string; command: string[] },
  ): Promise<ExecResult>;
  trace?(from: string, to: string): Promise<unknown>;
  info?(): Promise<unknown>;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

interface Route {
  info: KindInfo;
  namespace?: string;
  name?: string;
  subresource?: string;
}

const MAX_BODY = 8 * 1024 * 1024;

function parsePath(pathname: string): Route | { special: string } {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'kemu') return { special: parts.slice(1).join('/') };
  let rest: string[];
  let apiVersion: string;
  if (parts[0] === 'api' && parts[1] === 'v1') {
    apiVersion = 'v1';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    apiVersion = `${parts[1]}/${parts[2]}`;
    rest = parts.slice(3);
  } else {
    throw new NotFoundError({ resource: 'path', group: '', name: pathname });
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const info = kindForResource(rest[0] ?? '');
  if (!info || info.apiVersion !== apiVersion) {
    throw new NotFoundError({
      resource: rest[0] ?? '',
      group: apiVersion.includes('/') ? apiVersion.split('/')[0] : '',
      name: '',
    });
  }
  if (namespace !== undefined && !info.namespaced)
    throw new BadRequestError(`${info.resource} is not namespaced`);
  return { info, namespace, name: rest[1], subresource: rest[2] };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new BadRequestError(`request body larger than ${MAX_BODY} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseAny(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BadRequestError(`the request body is not valid JSON: ${(err as Error).message}`);
  }
}

function parseJson(text: string): KubeObject {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new BadRequestError(`the request body is not valid JSON: ${(err as Error).message}`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v) || typeof (v as KubeObject).kind !== 'string') {
    throw new BadRequestError('the request body must be a Kubernetes object with apiVersion, kind and metadata');
  }
  return v as KubeObject;
}

function send(res: http.ServerResponse, code: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: http.ServerResponse, err: unknown) {
  const status = isStatusError(err)
    ? err.toStatus()
    : new StatusError(
        'InternalError',
        500,
        `Internal error occurred: ${(err as Error)?.message ?? String(err)}`,
      ).toStatus();
  if (!res.headersSent) send(res, status.code ?? 500, status);
  else res.end();
}

const PATCH_TYPES: Record<string, PatchType> = {
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
  'application/json-patch+json': 'json',
};

export interface ApiServer {
  socketPath: string;
  server: http.Server;
  close(): Promise<void>;
}

export async function startApiServer(
  store: Store,
  socketPath: string,
  ext: ApiExtensions = {},
): Promise<ApiServer> {
  const handler = async (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://kemu');
    const q = url.searchParams;
    const route = parsePath(url.pathname);
    if ('special' in route) {
      if (route.special === 'trace' && ext.trace)
        return send(res, 200, await ext.trace(q.get('from') ?? '', q.get('to') ?? ''));
      if (route.special === 'info' && ext.info) return send(res, 200, await ext.info());
      if (route.special === 'resourceversion') return send(res, 200, { resourceVersion: await store.resourceVersion() });
      throw new NotFoundError({ resource: 'kemu', group: '', name: route.special });
    }
    const { info, namespace, name, subresource } = route;
    const kind = info.kind;
    const method = req.method ?? 'GET';

    if (subresource === 'log' && kind === 'Pod' && method === 'GET' && ext.podLog && name) {
      const tail = q.get('tailLines');
      const text = await ext.podLog(namespace ?? 'default', name, {
        container: q.get('container') ?? undefined,
        tail: tail ? Number(tail) : undefined,
      });
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(text);
      return;
    }
    if (subresource === 'exec' && kind === 'Pod' && method === 'POST' && ext.podExec && name) {
      const command = q.getAll('command');
      if (!command.length)
        throw new BadRequestError('you must specify at least one command for the container');
      return send(
        res,
        200,
        await ext.podExec(namespace ?? 'default', name, {
          container: q.get('container') ?? undefined,
          command,
        }),
      );
    }
    const dryRun = q.get('dryRun') === 'All';
    if (subresource === 'binding' && kind === 'Pod' && method === 'POST' && name) {
      const binding = parseJson(await readBody(req)) as unknown as Binding;
      binding.metadata = { ...(binding.metadata ?? {}), name, namespace: namespace ?? 'default' };
      return send(res, 201, await store.bind(binding, { dryRun }));
    }
    if (subresource && subresource !== 'status')
      throw new NotFoundError({
        resource: `${info.resource}/${subresource}`,
        group: info.group,
        name: name ?? '',
      });

    switch (method) {
      case 'GET': {
        if (name) return send(res, 200, await store.get(kind, namespace ?? '', name));
        const opts = {
          namespace,
          labelSelector: q.get('labelSelector') ?? undefined,
          fieldSelector: q.get('fieldSelector') ?? undefined,
          limit: q.get('limit') ? Number(q.get('limit')) : undefined,
          continue: q.get('continue') ?? undefined,
        };
        if (q.get('watch') === '1' || q.get('watch') === 'true') {
          const watch = await store.watch(kind, {
            namespace,
            labelSelector: opts.labelSelector,
            fieldSelector: opts.fieldSelector,
            resourceVersion: q.get('resourceVersion') ?? undefined,
            allowBookmarks: q.get('allowWatchBookmarks') === 'true',
            sendInitialEvents: q.get('sendInitialEvents') === 'true',
          });
          res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
          // The client counts the watch as established once the headers arrive.
          res.flushHeaders();
          req.on('close', () => watch.stop());
          for await (const ev of watch) {
            if (!res.write(`${JSON.stringify(ev)}\n`)) await new Promise((r) => res.once('drain', r));
          }
          res.end();
          return;
        }
        return send(res, 200, await store.list(kind, opts));
      }
      case 'POST': {
        const obj = parseJson(await readBody(req));
        if (namespace)
          obj.metadata = { ...(obj.metadata ?? {}), namespace: obj.metadata?.namespace ?? namespace };
        return send(res, 201, await store.create(obj, { dryRun }));
      }
      case 'PUT': {
        const obj = parseJson(await readBody(req));
        if (!name || obj.metadata?.name !== name)
          throw new BadRequestError('the name of the object does not match the name on the URL');
        return send(
          res,
          200,
          subresource === 'status' ? await store.updateStatus(obj, { dryRun }) : await store.update(obj, { dryRun }),
        );
      }
      case 'PATCH': {
        if (!name) throw new BadRequestError('PATCH needs a resource name');
        const type = PATCH_TYPES[(req.headers['content-type'] ?? '').split(';')[0].trim()];
        if (!type)
          throw new StatusError(
            'BadRequest',
            415,
            `the body of the request was in an unknown format - accepted media types include: ${Object.keys(PATCH_TYPES).join(', ')}`,
          );
        const patch = parseAny(await readBody(req));
        return send(
          res,
          200,
          await store.patch(
            kind,
            namespace ?? '',
            name,
            patch,
            type,
            subresource === 'status' ? { subresource: 'status', dryRun } : { dryRun },
          ),
        );
      }
      case 'DELETE': {
        if (!name) throw new BadRequestError('deleting a collection is not supported');
        // DeleteOptions come in the body (as kubectl and client-go send them) or as query parameters.
        const text = await readBody(req);
        let opts: DeleteOptions = {};
        if (text.trim()) {
          const body = parseAny(text) as DeleteOptions & { dryRun?: unknown };
          opts = { ...body, dryRun: Array.isArray(body.dryRun) ? body.dryRun.includes('All') : body.dryRun === true };
          delete (opts as { kind?: string }).kind;
          delete (opts as { apiVersion?: string }).apiVersion;
        }
        const grace = q.get('gracePeriodSeconds');
        if (grace !== null) opts.gracePeriodSeconds = Number(grace);
        if (dryRun) opts.dryRun = true;
        return send(res, 200, await store.delete(kind, namespace ?? '', name, opts));
      }
      default:
        throw new StatusError(
          'MethodNotAllowed',
          405,
          `the server does not allow this method on the requested resource`,
        );
    }
  };

  const server = http.createServer((req, res) => {
    handler(req, res).catch((err) => sendError(res, err));
  });
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  const st = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (st) {
    if (!st.isSocket()) throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
    fs.unlinkSync(socketPath);
  }
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
  } finally {
    process.umask(previous);
  }
  fs.chmodSync(socketPath, 0o600);
  return {
    socketPath,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
