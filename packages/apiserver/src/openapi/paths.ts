// The operations of each served kind, as kube-apiserver publishes them: enough for clients that look an
// operation up by its x-kubernetes-group-version-kind and x-kubernetes-action (kubectl checks that the PATCH
// operation takes `fieldValidation` before it leaves validation to the server).
import { META } from '@kemu/core/schema';
import { type OpenApiVersion, refTo, type SchemaObject } from './schema-object.js';
import type { ServedKind } from './served-kinds.js';

type Action = 'list' | 'post' | 'deletecollection' | 'get' | 'put' | 'patch' | 'delete' | 'watchlist';

const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];

/** Upstream's operation id prefix for a group/version: `CoreV1`, `StorageV1`, `CrdProjectcalicoOrgV1`. */
function groupVersionId(group: string, version: string): string {
  const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
  if (group === '') return `Core${cap(version)}`;
  const parts = group.endsWith('.k8s.io') ? [group.slice(0, -'.k8s.io'.length)] : group.split('.');
  return parts.map((p) => p.split('-').map(cap).join('')).join('') + cap(version);
}

function param(name: string, where: 'query' | 'path', type: string, v: OpenApiVersion, description: string, required = false): SchemaObject {
  const p: SchemaObject = { name, in: where, description };
  if (required || where === 'path') p.required = true;
  if (v === 'v3') p.schema = { type, uniqueItems: true };
  else Object.assign(p, { type, uniqueItems: true });
  return p;
}

function response(schemaRef: SchemaObject, v: OpenApiVersion, code = '200'): SchemaObject {
  const content = Object.fromEntries(['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf'].map((t) => [t, { schema: schemaRef }]));
  return { [code]: v === 'v3' ? { description: 'OK', content } : { description: 'OK', schema: schemaRef }, '401': { description: 'Unauthorized' } };
}

function body(schemaRef: SchemaObject, v: OpenApiVersion, types = ['*/*']): SchemaObject {
  return v === 'v3'
    ? { requestBody: { required: true, content: Object.fromEntries(types.map((t) => [t, { schema: schemaRef }])) } }
    : { parameters: [{ name: 'body', in: 'body', required: true, schema: schemaRef }] };
}

/** Paths and operations of one kind. */
export function kindPaths(k: ServedKind, v: OpenApiVersion): Record<string, SchemaObject> {
  const { info } = k;
  const prefix = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`;
  const gvk = { group: info.group, version: info.version, kind: info.kind };
  const id = groupVersionId(info.group, info.version);
  const objRef = refTo(k.type, v);
  const listRef = refTo(`${k.type}List`, v);
  const statusRef = refTo(`${META}Status`, v);
  const ns = info.namespaced ? 'Namespaced' : '';
  const q = (name: string, type: string, d: string) => param(name, 'query', type, v, d);
  const dryRun = q('dryRun', 'string', 'All: process the request without persisting it.');
  const fieldManager = q('fieldManager', 'string', 'Name of the actor making the change.');
  const fieldValidation = q('fieldValidation', 'string', 'Ignore, Warn or Strict handling of unknown and duplicate fields.');
  const listParams = ['labelSelector', 'fieldSelector', 'resourceVersion', 'resourceVersionMatch', 'continue'].map((n) => q(n, 'string', `The ${n} of the list.`));
  listParams.push(q('limit', 'integer', 'Most items to return.'), q('watch', 'boolean', 'Watch for changes instead of listing.'), q('timeoutSeconds', 'integer', 'Time limit of a list or watch.'));
  const op = (action: Action, verb: string, extra: SchemaObject, responses: SchemaObject, params: SchemaObject[] = []): SchemaObject => {
    const o: SchemaObject = {
      operationId: `${verb}${id}${ns}${info.kind}`,
      description: `${verb} ${info.kind}`,
      tags: [id.charAt(0).toLowerCase() + id.slice(1)],
      responses,
      'x-kubernetes-action': action,
      'x-kubernetes-group-version-kind': gvk,
    };
    const bodyParams = (extra.parameters as SchemaObject[] | undefined) ?? [];
    const all = [...bodyParams, ...params];
    if (all.length) o.parameters = all;
    if (extra.requestBody) o.requestBody = extra.requestBody;
    return o;
  };
  const pathParams = info.namespaced ? [param('namespace', 'path', 'string', v, 'Object namespace.')] : [];
  const collection = info.namespaced ? `${prefix}/namespaces/{namespace}/${info.resource}` : `${prefix}/${info.resource}`;
  const item = `${collection}/{name}`;
  const nameParam = param('name', 'path', 'string', v, `Name of the ${info.kind}.`);
  const paths: Record<string, SchemaObject> = {
    [collection]: {
      get: op('list', 'list', {}, response(listRef, v), listParams),
      post: op('post', 'create', body(objRef, v), response(objRef, v, '201'), [dryRun, fieldManager, fieldValidation]),
      delete: op('deletecollection', 'deleteCollection', {}, response(statusRef, v), [...listParams.slice(0, 5), dryRun]),
      parameters: pathParams,
    },
    [item]: {
      get: op('get', 'read', {}, response(objRef, v)),
      put: op('put', 'replace', body(objRef, v), response(objRef, v), [dryRun, fieldManager, fieldValidation]),
      patch: op('patch', 'patch', body({ type: 'object' }, v, PATCH_TYPES), response(objRef, v), [dryRun, fieldManager, fieldValidation, q('force', 'boolean', 'Take over conflicting fields (apply only).')]),
      delete: op('delete', 'delete', {}, response(statusRef, v), [dryRun, q('gracePeriodSeconds', 'integer', 'Seconds before the object is deleted.'), q('propagationPolicy', 'string', 'Orphan, Background or Foreground.')]),
      parameters: [nameParam, ...pathParams],
    },
  };
  if (info.namespaced) {
    const all = `${prefix}/${info.resource}`;
    paths[all] = { get: { ...op('list', 'list', {}, response(listRef, v), listParams), operationId: `list${id}${info.kind}ForAllNamespaces` } };
  }
  if (info.hasStatus) {
    paths[`${item}/status`] = {
      get: { ...op('get', 'read', {}, response(objRef, v)), operationId: `read${id}${ns}${info.kind}Status` },
      put: { ...op('put', 'replace', body(objRef, v), response(objRef, v), [dryRun, fieldManager, fieldValidation]), operationId: `replace${id}${ns}${info.kind}Status` },
      patch: {
        ...op('patch', 'patch', body({ type: 'object' }, v, PATCH_TYPES), response(objRef, v), [dryRun, fieldManager, fieldValidation]),
        operationId: `patch${id}${ns}${info.kind}Status`,
      },
      parameters: [nameParam, ...pathParams],
    };
  }
  return paths;
}
