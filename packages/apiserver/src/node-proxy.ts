// nodes/<name>/proxy/<path>: a GET forwarded to the node's kubelet HTTP server (the endpoint its Node carries
// in kemu.io/kubelet-endpoint), as kube-apiserver forwards it to the kubelet's port, so
// `kubectl get --raw /api/v1/nodes/N/proxy/stats/summary` and `.../proxy/metrics/resource` work.
import { KUBELET_ENDPOINT_ANNOTATION, type Node, StatusError } from '@kemu/core';
import type { RequestContext } from './request-context.js';

const TIMEOUT_MS = 30_000;

export async function proxyToNode(ctx: RequestContext, name: string, url: URL): Promise<void> {
  const method = ctx.req.method ?? 'GET';
  if (method !== 'GET' && method !== 'HEAD')
    throw new StatusError('MethodNotAllowed', 405, 'the server does not allow this method on the requested resource');
  const node = (await ctx.store.get('Node', '', name)) as Node;
  const endpoint = node.metadata.annotations?.[KUBELET_ENDPOINT_ANNOTATION];
  if (!endpoint) throw new StatusError('ServiceUnavailable', 503, `no preferred addresses found; known addresses: []`);
  // Everything after .../nodes/<name>/proxy, kept encoded, on the kubelet's own origin only.
  const marker = `/nodes/${encodeURIComponent(name)}/proxy`;
  const at = url.pathname.indexOf(marker);
  const rest = at < 0 ? '/' : url.pathname.slice(at + marker.length) || '/';
  const base = new URL(endpoint);
  const target = new URL(rest + url.search, base.origin);
  if (target.origin !== base.origin) throw new StatusError('BadRequest', 400, 'invalid proxy path');
  let upstream: Response;
  try {
    upstream = await fetch(target, { method, signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    throw new StatusError('ServiceUnavailable', 503, `error trying to reach service: ${(err as Error).message}`);
  }
  const res = ctx.res as import('node:http').ServerResponse;
  const headers: Record<string, string> = {};
  const type = upstream.headers.get('content-type');
  if (type) headers['content-type'] = type;
  res.writeHead(upstream.status, headers);
  if (method === 'HEAD' || !upstream.body) return void res.end();
  for await (const chunk of upstream.body as unknown as AsyncIterable<Uint8Array>) {
    if (res.destroyed) break;
    res.write(chunk);
  }
  res.end();
}
