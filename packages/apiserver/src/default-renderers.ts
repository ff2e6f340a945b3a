// The renderers the server uses unless told otherwise: meta.k8s.io Tables from ./tables (kubectl's columns
// for every kind) and the OpenAPI documents from ./openapi (built from the kind schemas).
import { OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_CONTENT_TYPE, openApiV2, openApiV2Protobuf, openApiV3, openApiV3Index } from './openapi/index.js';
import { decodeObjectBytes, encodeObject, supportsProtobuf } from './protobuf/index.js';
import type { Renderers } from './request-context.js';
import { buildTable } from './tables/index.js';
import { KUBERNETES_VERSION } from './version.js';

export const defaultRenderers: Renderers = {
  protobufEncode: (obj) => encodeObject(obj as { apiVersion?: string; kind?: string }),
  protobufDecode: (body) => decodeObjectBytes(body),
  protobufSupports: (apiVersion, kind) => supportsProtobuf(apiVersion, kind),
  table(info, objects, opts) {
    return {
      ...buildTable(info.apiVersion, info.kind, objects, {
        includeObject: opts.includeObject,
        listMeta: opts.listMeta,
        noHeaders: opts.noHeaders,
      }),
      apiVersion: `meta.k8s.io/${opts.version}`,
    };
  },
};

/**
 * The OpenAPI document at a path under /openapi: bytes of JSON (or the v3 index as an object), or for a v2
 * request that accepts only gnostic protobuf (kubectl 1.20), the protobuf bytes with their content type.
 */
export function defaultOpenApi(path: string, accept = ''): unknown | { body: Buffer; contentType: string } | undefined {
  const opts = { version: KUBERNETES_VERSION.gitVersion };
  if (path === '/openapi/v2') {
    const wantsJson = !accept || /application\/json|\*\/\*/.test(accept);
    if (accept.includes(OPENAPI_V2_PROTOBUF) && !(wantsJson && accept.indexOf('application/json') < accept.indexOf(OPENAPI_V2_PROTOBUF)))
      return { body: openApiV2Protobuf(opts), contentType: OPENAPI_V2_PROTOBUF_CONTENT_TYPE };
    return openApiV2(opts).json;
  }
  if (path === '/openapi/v3') return openApiV3Index(opts);
  if (path.startsWith('/openapi/v3/')) return openApiV3(path.slice('/openapi/v3/'.length), opts)?.json;
  return undefined;
}
