// A Store that lives in another process: every call goes to a cluster's API server over its unix socket,
// the way a kubelet talks to kube-apiserver. It keeps the Store contract (errors as the same typed
// StatusErrors, watches as async iterables ending on stop(), 410 on expired resource versions), so the
// kubelet, informers and controllers run unchanged in a node process.
import http from 'node:http';
import {
  type Binding,
  type DeleteOptions,
  errorFromStatus,
  kindInfo,
  type KubeList,
  type KubeObject,
  type ListOptions,
  type ObjectOf,
  type PatchOptions,
  type PatchType,
  type Pod,
  type Status,
  type Store,
  type Stored,
  toFieldSelector,
  toSelector,
  type Watch,
  type WatchEvent,
  type WatchOptions,
  WatchQueue,
  type WriteOptions,
} from '@kemu/core';
import { ClusterUnreachableError } from './cluster-unreachable.js';
import { resourcePath } from './resource-path.js';

const PATCH_MEDIA: Record<string, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
};

function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

function selectors(opts: { labelSelector?: ListOptions['labelSelector']; fieldSelector?: ListOptions['fieldSelector'] }) {
  return {
    labelSelector: opts.labelSelector === undefined ? undefined : toSelector(opts.labelSelector).toString(),
    fieldSelector: opts.fieldSelector === undefined ? undefined : toFieldSelector(opts.fieldSelector).toString(),
  };
}

export class RemoteStore implements Store {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  private readonly watches = new Set<Watch>();
  private closed = false;

  /** Impersonation headers when the store acts as another user. */
  private readonly identity: Record<string, string | string[]>;

  /**
   * `as`: every request runs as this user (Impersonate-User and -Group headers), so the API server authorizes
   * and admits it as that user's own credentials would be (a node process's kubelet as system:node:<name>).
   */
  constructor(
    readonly socketPath: string,
    readonly as?: { name: string; groups: string[] },
  ) {
    // system:authenticated, and a ServiceAccount's groups, come with the impersonated user.
    const groups = (as?.groups ?? []).filter((g) => g !== 'system:authenticated' && !g.startsWith('system:serviceaccounts'));
    this.identity = as ? { 'Impersonate-User': as.name, ...(groups.length ? { 'Impersonate-Group': groups } : {}) } : {};
  }

  private request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the store is closed'));
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          socketPath: this.socketPath,
          agent: this.agent,
          path,
          method,
          headers: payload ? { ...this.identity, 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) } : this.identity,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown;
            try {
              parsed = text ? JSON.parse(text) : {};
            } catch {
              return reject(new Error(`unexpected response from the cluster (${res.statusCode}): ${text.slice(0, 200)}`));
            }
            if ((res.statusCode ?? 500) >= 400) reject(errorFromStatus(parsed as Status));
            else resolve(parsed);
          });
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') reject(new ClusterUnreachableError(this.socketPath, err.code));
        else reject(err);
      });
      req.end(payload);
    });
  }

  private path(kind: string, namespace: string | undefined, name?: string, sub?: string) {
    const info = kindInfo(kind);
    return resourcePath(info, info.namespaced ? namespace || 'default' : undefined, name, sub);
  }

  async create<const T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    const info = kindInfo(obj.kind);
    const base = resourcePath(info, info.namespaced ? obj.metadata?.namespace || 'default' : undefined);
    return (await this.request('POST', base + query({ dryRun: opts.dryRun ? 'All' : undefined }), obj)) as Stored<T>;
  }

  async get<K extends string>(kind: K, namespace: string | undefined, name: string): Promise<ObjectOf<K>> {
    return (await this.request('GET', this.path(kind, namespace, name))) as ObjectOf<K>;
  }

  async list<K extends string>(kind: K, opts: ListOptions = {}): Promise<KubeList<ObjectOf<K>>> {
    const info = kindInfo(kind);
    const base = resourcePath(info, info.namespaced ? opts.namespace || undefined : undefined);
    return (await this.request(
      'GET',
      base + query({ ...selectors(opts), limit: opts.limit, continue: opts.continue }),
    )) as KubeList<ObjectOf<K>>;
  }

  private write<T extends KubeObject>(obj: T, sub: 'status' | undefined, opts: WriteOptions): Promise<unknown> {
    const path = this.path(obj.kind, obj.metadata?.namespace, obj.metadata?.name ?? '', sub);
    return this.request('PUT', path + query({ dryRun: opts.dryRun ? 'All' : undefined }), obj);
  }

  async update<const T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    return (await this.write(obj, undefined, opts)) as Stored<T>;
  }

  async updateStatus<const T extends KubeObject>(obj: T, opts: WriteOptions = {}): Promise<Stored<T>> {
    return (await this.write(obj, 'status', opts)) as Stored<T>;
  }

  async patch<K extends string>(
    kind: K,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: PatchType = 'merge',
    opts: PatchOptions = {},
  ): Promise<ObjectOf<K>> {
    const media = PATCH_MEDIA[type] ?? type;
    const path = this.path(kind, namespace, name, opts.subresource) + query({ dryRun: opts.dryRun ? 'All' : undefined });
    return (await this.request('PATCH', path, patch, media)) as ObjectOf<K>;
  }

  async delete<K extends string>(kind: K, namespace: string | undefined, name: string, opts: DeleteOptions = {}): Promise<ObjectOf<K>> {
    const body = { apiVersion: 'v1', kind: 'DeleteOptions', ...opts, dryRun: opts.dryRun ? ['All'] : undefined };
    return (await this.request('DELETE', this.path(kind, namespace, name), body)) as ObjectOf<K>;
  }

  async bind(binding: Binding, opts: WriteOptions = {}): Promise<Pod> {
    const ns = binding.metadata?.namespace || 'default';
    const path = this.path('Pod', ns, binding.metadata?.name ?? '', 'binding') + query({ dryRun: opts.dryRun ? 'All' : undefined });
    // The server answers a binding with a Status, as kube-apiserver does; the contract returns the pod.
    await this.request('POST', path, binding);
    const pod = (await this.get('Pod', ns, binding.metadata?.name ?? '')) as Pod;
    if (opts.dryRun) return { ...pod, spec: { ...pod.spec, nodeName: binding.target?.name } };
    return pod;
  }

  async resourceVersion(): Promise<string> {
    const r = (await this.request('GET', '/kemu/resourceversion')) as { resourceVersion: string };
    return r.resourceVersion;
  }

  /** Resolves once the server holds the watch (its headers arrived), so no later change is missed. */
  watch<K extends string>(kind: K, opts: WatchOptions = {}): Promise<Watch<ObjectOf<K>>> {
    const info = kindInfo(kind);
    const base = resourcePath(info, info.namespaced ? opts.namespace || undefined : undefined);
    const path =
      base +
      query({
        watch: 1,
        ...selectors(opts),
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: opts.allowBookmarks ? true : undefined,
        sendInitialEvents: opts.sendInitialEvents ? true : undefined,
        resourceVersionMatch: opts.sendInitialEvents ? 'NotOlderThan' : undefined,
      });
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the store is closed'));
      // Watches hold their connection for as long as they run: they get their own, outside the pool.
      const req = http.request({ socketPath: this.socketPath, path, method: 'GET', agent: false, headers: this.identity });
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') reject(new ClusterUnreachableError(this.socketPath, err.code));
        else reject(err);
      });
      req.on('response', (res) => {
        if ((res.statusCode ?? 500) >= 400) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            try {
              reject(errorFromStatus(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Status));
            } catch {
              reject(new Error(`watch ${kind} failed with HTTP ${res.statusCode}`));
            }
          });
          return;
        }
        // The watch's queue feeds an iterating or a subscribed consumer alike; the end of the response
        // ends it once what arrived is delivered.
        const watch = new WatchQueue<ObjectOf<K>>();
        let partial = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          partial += chunk;
          let nl = partial.indexOf('\n');
          while (nl >= 0) {
            const line = partial.slice(0, nl);
            partial = partial.slice(nl + 1);
            if (line.trim()) watch.push(JSON.parse(line) as WatchEvent<ObjectOf<K>>);
            nl = partial.indexOf('\n');
          }
        });
        const finish = () => watch.finish();
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
        const watches = this.watches;
        watch.onStop = () => {
          if (!res.complete) req.destroy();
          watches.delete(watch as Watch);
        };
        this.watches.add(watch as Watch);
        resolve(watch);
      });
      req.end();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of [...this.watches]) w.stop();
    this.agent.destroy();
  }
}
