// GET of one object and LIST of a collection, with resourceVersion / resourceVersionMatch semantics, paging,
// selectors, and the renderings a client may ask for (object, Table, PartialObjectMetadata).
import { ExpiredError, type KubeList, type KubeObject, StatusError } from '@kemu/core';
import { InvalidError } from '@kemu/core';
import type { RequestContext } from './request-context.js';
import { send, sendJsonList } from './responses.js';
import { tooLargeResourceVersion, waitForResourceVersion } from './watch.js';

function invalid(field: string, message: string): InvalidError {
  return new InvalidError('ListOptions', '', 'meta.k8s.io', [{ field, type: 'FieldValueForbidden', message: `Forbidden: ${message}` }]);
}

/** Writes objects in the rendering the client negotiated. */
export function render(ctx: RequestContext, code: number, body: KubeObject | KubeList, isList: boolean): void {
  const r = ctx.rendering;
  if (r.kind === 'table' && ctx.renderers.table) {
    const items = isList ? (body as KubeList).items : [body as KubeObject];
    const includeObject = (ctx.query.get('includeObject') ?? 'Metadata') as 'None' | 'Metadata' | 'Object';
    if (!['None', 'Metadata', 'Object'].includes(includeObject))
      throw new StatusError('BadRequest', 400, `includeObject: Unsupported value: "${includeObject}": supported values: "None", "Metadata", "Object"`);
    const table = ctx.renderers.table(ctx.kind, items, {
      wide: false,
      includeObject,
      listMeta: isList ? (body as KubeList).metadata as Record<string, unknown> : undefined,
      version: r.version,
    });
    return sendRendered(ctx, code, table, r.media);
  }
  if (r.kind === 'partial') {
    const apiVersion = `meta.k8s.io/${r.version}`;
    const partial = (o: KubeObject) => ({ kind: 'PartialObjectMetadata', apiVersion, metadata: o.metadata });
    const out = isList
      ? { kind: 'PartialObjectMetadataList', apiVersion, metadata: (body as KubeList).metadata, items: (body as KubeList).items.map(partial) }
      : partial(body as KubeObject);
    return sendRendered(ctx, code, out, r.media);
  }
  return sendRendered(ctx, code, body, r.kind === 'object' ? r.media : 'json');
}

function sendRendered(ctx: RequestContext, code: number, body: unknown, media: 'json' | 'yaml' | 'protobuf') {
  if (media === 'protobuf' && ctx.renderers.protobufEncode) {
    const bytes = ctx.renderers.protobufEncode(body);
    (ctx.res as import('node:http').ServerResponse).writeHead(code, {
      'content-type': 'application/vnd.kubernetes.protobuf',
      'content-length': bytes.length,
    });
    ctx.res.end(bytes);
    return;
  }
  if (media === 'json' && body && typeof body === 'object' && Array.isArray((body as { items?: unknown }).items))
    return sendJsonList(ctx.res, code, body as { items: unknown[] });
  send(ctx.res, code, body, media === 'yaml' ? 'yaml' : 'json');
}

export async function getObject(ctx: RequestContext, namespace: string, name: string): Promise<void> {
  const rv = ctx.query.get('resourceVersion');
  if (rv) await waitForResourceVersion(ctx.store, rv);
  const obj = await ctx.store.get(ctx.kind.kind, namespace, name);
  render(ctx, 200, obj, false);
}

export async function listObjects(ctx: RequestContext, namespace: string | undefined): Promise<void> {
  const q = ctx.query;
  const rv = q.get('resourceVersion');
  const match = q.get('resourceVersionMatch');
  const cont = q.get('continue');
  const limitParam = q.get('limit');
  if (match && !rv) throw invalid('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided');
  if (match && match !== 'Exact' && match !== 'NotOlderThan')
    throw new InvalidError('ListOptions', '', 'meta.k8s.io', [
      { field: 'resourceVersionMatch', type: 'FieldValueNotSupported', message: `Unsupported value: "${match}": supported values: "Exact", "NotOlderThan"` },
    ]);
  if (cont && rv && rv !== '0') throw invalid('resourceVersion', 'specifying resource version is not allowed when using continue');
  let limit: number | undefined;
  if (limitParam !== null && limitParam !== '') {
    if (!/^-?\d+$/.test(limitParam)) throw new StatusError('BadRequest', 400, `limit: Invalid value: "${limitParam}": must be an integer`);
    limit = Number(limitParam) > 0 ? Number(limitParam) : undefined;
  }
  if (rv && rv !== '0') {
    if (!/^\d+$/.test(rv)) throw new StatusError('BadRequest', 400, `resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);
    if (match === 'Exact') {
      const current = Number(await ctx.store.resourceVersion());
      const wanted = Number(rv);
      if (wanted > current) {
        await waitForResourceVersion(ctx.store, rv).catch(() => {
          throw tooLargeResourceVersion(wanted, current);
        });
      } else if (wanted < current) {
        throw new ExpiredError(`The resourceVersion for the provided list is too old.`);
      }
    } else {
      await waitForResourceVersion(ctx.store, rv);
    }
  }
  const list = await ctx.store.list(ctx.kind.kind, {
    namespace,
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
    limit,
    continue: cont ?? undefined,
  });
  render(ctx, 200, list, true);
}
