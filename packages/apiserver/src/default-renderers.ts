// The renderers the server uses unless told otherwise: meta.k8s.io Tables from ./tables (kubectl's columns
// for every kind) and the OpenAPI documents from ./openapi (built from the kind schemas).
import { openApiV2, openApiV3, openApiV3Index } from './openapi/index.js';
import type { Renderers } from './request-context.js';
import { buildTable } from './tables/index.js';
import { KUBERNETES_VERSION } from './version.js';

export const defaultRenderers: Renderers = {
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

/** The OpenAPI document at a path under /openapi, as bytes of JSON (or the v3 index as an object). */
export function defaultOpenApi(path: string): unknown | undefined {
  const opts = { version: KUBERNETES_VERSION.gitVersion };
  if (path === '/openapi/v2') return openApiV2(opts).json;
  if (path === '/openapi/v3') return openApiV3Index(opts);
  if (path.startsWith('/openapi/v3/')) return openApiV3(path.slice('/openapi/v3/'.length), opts)?.json;
  return undefined;
}
