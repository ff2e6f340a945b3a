// The client side of the API server: what `kemu get/apply/delete/logs/exec/trace` use to reach a running
// cluster over its unix socket. Errors come back as the same typed StatusErrors the store throws.
import http from 'node:http';
import {
  errorFromStatus,
  type KubeList,
  type KubeObject,
  kindInfo,
  type Status,
} from '@kemu/core';
import { ClusterUnreachableError, type ExecResult, type NodeAddRequest, resourcePath } from '@kemu/apiserver';

export { ClusterUnreachableError, resourcePath };

export class ApiClient {
  constructor(readonly socketPath: string) {}

  request(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<{ code: number; text: string }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          socketPath: this.socketPath,
          path,
          method,
          headers: payload
            ? { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(payload) }
            : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () =>
            resolve({ code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED')
          reject(new ClusterUnreachableError(this.socketPath, err.code));
        else reject(err);
      });
      if (payload) req.write(payload);
      req.end();
    });
  }

  private async json<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T> {
    const { code, text } = await this.request(method, path, body, contentType);
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      throw new Error(`unexpected response from the cluster (${code}): ${text.slice(0, 200)}`);
    }
    if (code >= 400) throw errorFromStatus(parsed as Status);
    return parsed as T;
  }

  get<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
  ): Promise<T> {
    return this.json('GET', resourcePath(kindInfo(kind), namespace, name));
  }

  list<T extends KubeObject = KubeObject>(
    kind: string,
    opts: { namespace?: string; labelSelector?: string; fieldSelector?: string } = {},
  ): Promise<KubeList<T>> {
    const q = new URLSearchParams();
    if (opts.labelSelector) q.set('labelSelector', opts.labelSelector);
    if (opts.fieldSelector) q.set('fieldSelector', opts.fieldSelector);
    const qs = q.toString();
    return this.json('GET', `${resourcePath(kindInfo(kind), opts.namespace)}${qs ? `?${qs}` : ''}`);
  }

  create<T extends KubeObject>(obj: T): Promise<T> {
    return this.json('POST', resourcePath(kindInfo(obj.kind), obj.metadata?.namespace), obj);
  }

  update<T extends KubeObject>(obj: T): Promise<T> {
    return this.json(
      'PUT',
      resourcePath(kindInfo(obj.kind), obj.metadata?.namespace, obj.metadata?.name),
      obj,
    );
  }

  patch<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: 'merge' | 'strategic' = 'merge',
  ): Promise<T> {
    const contentType = type === 'strategic' ? 'application/strategic-merge-patch+json' : 'application/merge-patch+json';
    return this.json('PATCH', resourcePath(kindInfo(kind), namespace, name), patch, contentType);
  }

  delete<T extends KubeObject = KubeObject>(
    kind: string,
    namespace: string | undefined,
    name: string,
    gracePeriodSeconds?: number,
  ): Promise<T> {
    const q = gracePeriodSeconds === undefined ? '' : `?gracePeriodSeconds=${gracePeriodSeconds}`;
    return this.json('DELETE', `${resourcePath(kindInfo(kind), namespace, name)}${q}`);
  }

  async logs(namespace: string, name: string, container?: string, tail?: number): Promise<string> {
    const q = new URLSearchParams();
    if (container) q.set('container', container);
    if (tail !== undefined) q.set('tailLines', String(tail));
    const { code, text } = await this.request(
      'GET',
      `${resourcePath(kindInfo('Pod'), namespace, name, 'log')}?${q}`,
    );
    if (code >= 400) throw errorFromStatus(JSON.parse(text));
    return text;
  }

  exec(namespace: string, name: string, command: string[], container?: string): Promise<ExecResult> {
    const q = new URLSearchParams();
    for (const c of command) q.append('command', c);
    if (container) q.set('container', container);
    return this.json('POST', `${resourcePath(kindInfo('Pod'), namespace, name, 'exec')}?${q}`);
  }

  trace(from: string, to: string): Promise<unknown> {
    return this.json('GET', `/kemu/trace?${new URLSearchParams({ from, to })}`);
  }

  info(): Promise<unknown> {
    return this.json('GET', '/kemu/info');
  }

  /** Adds nodes to the running cluster; resolves with their names once each has registered. */
  addNodes(req: NodeAddRequest): Promise<{ names: string[] }> {
    return this.json('POST', '/kemu/nodes', req);
  }

  async removeNode(name: string): Promise<void> {
    await this.json('DELETE', `/kemu/nodes/${encodeURIComponent(name)}`);
  }
}
