// The OpenAPI documents built from the kind schemas: `/openapi/v2` (one Swagger 2.0 document) and
// `/openapi/v3` (an index, then one OpenAPI 3.0 document per group/version). Each is built once per schema
// generation (a CRD registering its schema makes a new one) and serialised once.
import { createHash } from 'node:crypto';
import { META, schemaGeneration } from '@kemu/core/schema';
import { kindPaths } from './paths.js';
import { swaggerToProtobuf } from './v2-protobuf.js';
import { definition, type GroupVersionKind, type OpenApiVersion, reachableTypes, type SchemaObject } from './schema-object.js';
import { type ServedKind, servedKinds } from './served-kinds.js';

/** A serialised document with its validator. */
export interface OpenApiDocument {
  json: Buffer;
  /** The same document in protobuf (v2 only, built on first use). */
  protobuf?: () => Buffer;
  /** Upper-case hex SHA-512 of `json`, as kube-apiserver's v3 index hashes. */
  hash: string;
}

export interface OpenApiOptions {
  /** `info.version`: the server's git version. */
  version?: string;
}

/** Types every group/version document carries besides its kinds. */
const COMMON_TYPES = [`${META}Status`, `${META}DeleteOptions`, `${META}WatchEvent`];

function definitions(kinds: ServedKind[], v: OpenApiVersion): Record<string, SchemaObject> {
  const gvks = new Map<string, GroupVersionKind[]>();
  for (const { info, type } of kinds) {
    gvks.set(type, [{ group: info.group, kind: info.kind, version: info.version }]);
    gvks.set(`${type}List`, [{ group: info.group, kind: `${info.kind}List`, version: info.version }]);
  }
  const names = [...reachableTypes([...kinds.flatMap((k) => [k.type, `${k.type}List`]), ...COMMON_TYPES])].sort();
  const out: Record<string, SchemaObject> = {};
  for (const n of names) {
    const d = definition(n, v, gvks.get(n));
    if (d) out[n] = d;
  }
  return out;
}

function paths(kinds: ServedKind[], v: OpenApiVersion): Record<string, SchemaObject> {
  return Object.assign({}, ...kinds.map((k) => kindPaths(k, v)));
}

function serialise(doc: unknown): OpenApiDocument {
  const json = Buffer.from(JSON.stringify(doc));
  return { json, hash: createHash('sha512').update(json).digest('hex').toUpperCase() };
}

const SECURITY = { BearerToken: { type: 'apiKey', in: 'header', name: 'authorization', description: 'Bearer token authentication' } };

let cache: { key: string; v2?: OpenApiDocument; v3: Map<string, OpenApiDocument> } | undefined;

function cached(opts: OpenApiOptions) {
  const key = `${schemaGeneration()}|${opts.version ?? ''}`;
  if (cache?.key !== key) cache = { key, v3: new Map() };
  return cache;
}

/** `/openapi/v2`: one Swagger 2.0 document for every served kind. */
export function openApiV2(opts: OpenApiOptions = {}): OpenApiDocument {
  const c = cached(opts);
  if (!c.v2) {
    const all = [...servedKinds().values()].flat();
    const doc = {
      swagger: '2.0',
      info: { title: 'Kubernetes', version: opts.version ?? 'unversioned' },
      paths: paths(all, 'v2'),
      definitions: definitions(all, 'v2'),
      securityDefinitions: SECURITY,
      security: [{ BearerToken: [] }],
    };
    let pb: Buffer | undefined;
    c.v2 = { ...serialise(doc), protobuf: () => (pb ??= swaggerToProtobuf(doc)) };
  }
  return c.v2;
}

/** `/openapi/v2` in protobuf, what kubectl 1.20 asks for (answered as OPENAPI_V2_PROTOBUF_CONTENT_TYPE). */
export function openApiV2Protobuf(opts: OpenApiOptions = {}): Buffer {
  return openApiV2(opts).protobuf!();
}

/** One `/openapi/v3/<path>` document (`api/v1`, `apis/storage.k8s.io/v1`), or undefined when not served. */
export function openApiV3(groupVersionPath: string, opts: OpenApiOptions = {}): OpenApiDocument | undefined {
  const c = cached(opts);
  const hit = c.v3.get(groupVersionPath);
  if (hit) return hit;
  const kinds = servedKinds().get(groupVersionPath);
  if (!kinds) return undefined;
  const doc = serialise({
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: opts.version ?? 'unversioned' },
    paths: paths(kinds, 'v3'),
    components: { schemas: definitions(kinds, 'v3'), securitySchemes: SECURITY },
    security: [{ BearerToken: [] }],
  });
  c.v3.set(groupVersionPath, doc);
  return doc;
}

/** `/openapi/v3`: each group/version's document URL, with its hash so clients may cache it forever. */
export function openApiV3Index(opts: OpenApiOptions = {}): { paths: Record<string, { serverRelativeURL: string }> } {
  const out: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of servedKinds().keys()) {
    out[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${openApiV3(gv, opts)!.hash}` };
  }
  return { paths: out };
}
