// What a request's URL says it is about, resolved as kube-apiserver's RequestInfoFactory does: API prefix,
// group, version, namespace, resource, name, subresource, and the verb (get becomes list or watch without a
// name, delete becomes deletecollection). Authorization, audit and routing all read this one result.
import { BadRequestError } from '@kemu/core';
import type { RequestInfo } from './auth-seams.js';

/** Subresources of a namespace that are not resources in their own right. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);
/** Path verbs of the legacy forms /api/v1/watch/... and /api/v1/proxy/.... */
const SPECIAL_VERBS = new Set(['proxy', 'watch']);

/** Splits a path into decoded segments; a malformed percent-escape is a 400 as Go's URL parser makes it. */
export function pathSegments(pathname: string): string[] {
  const raw = pathname.split('/').filter(Boolean);
  return raw.map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw new BadRequestError(`invalid URL escape in path segment "${s}"`);
    }
  });
}

/** Kubernetes' boolean query conversion: absent is false, "0" and "false" (any case) are false, all else true. */
export function queryBool(q: URLSearchParams, key: string): boolean {
  const v = q.get(key);
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/** A path segment a name may be (upstream `path.IsValidPathSegmentName`). */
export function validPathSegmentName(name: string): boolean {
  return name !== '.' && name !== '..' && !name.includes('/') && !name.includes('%');
}

export function requestInfo(method: string, pathname: string, q: URLSearchParams): RequestInfo {
  const info: RequestInfo = {
    isResourceRequest: false,
    path: pathname,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
  };
  let parts = pathSegments(pathname);
  if (parts.length < 3) return info;
  if (parts[0] !== 'api' && parts[0] !== 'apis') return info;
  const prefix = parts[0];
  parts = parts.slice(1);
  if (prefix === 'apis') {
    if (parts.length < 3) return info;
    info.apiGroup = parts[0];
    parts = parts.slice(1);
  }
  info.apiPrefix = prefix;
  info.isResourceRequest = true;
  info.apiVersion = parts[0];
  parts = parts.slice(1);

  if (SPECIAL_VERBS.has(parts[0])) {
    if (parts.length < 2) throw new BadRequestError(`unable to determine kind and namespace from url ${pathname}`);
    info.verb = parts[0];
    parts = parts.slice(1);
  } else {
    info.verb =
      { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' }[method] ?? '';
  }

  if (parts[0] === 'namespaces') {
    if (parts.length > 1) {
      info.namespace = parts[1];
      if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2])) parts = parts.slice(2);
    }
  }
  if (parts.length >= 3 && info.verb !== 'proxy') info.subresource = parts[2];
  if (parts.length >= 2) info.name = parts[1];
  if (parts.length >= 1) info.resource = parts[0];
  // A proxy subresource carries the path to forward after it (nodes/<name>/proxy/stats/summary).
  if (parts.length > 3 && info.verb !== 'proxy' && parts[2] !== 'proxy')
    throw new BadRequestError(`the path ${pathname} has too many segments for a resource request`);

  if (!info.name && info.verb === 'get') {
    info.verb = queryBool(q, 'watch') ? 'watch' : 'list';
    const fs = q.get('fieldSelector');
    const m = fs ? /^metadata\.name==?([^,]*)$/.exec(fs) : null;
    // Set for authorization (a list of one named object); the handler still serves a list.
    if (m && validPathSegmentName(m[1])) info.name = m[1];
  }
  if (!info.name && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}
