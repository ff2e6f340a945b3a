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
  const out: string[] = [];
  let start = 0;
  for (;;) {
    const end = pathname.indexOf('/', start);
    const s = end < 0 ? pathname.slice(start) : pathname.slice(start, end);
    if (s) out.push(s.includes('%') ? decodeSegment(s) : s);
    if (end < 0) return out;
    start = end + 1;
  }
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new BadRequestError(`invalid URL escape in path segment "${s}"`);
  }
}

/** What the handlers read of a request's URL (a WHATWG URL has all of it). */
export interface RequestUrl {
  readonly pathname: string;
  readonly search: string;
  readonly searchParams: URLSearchParams;
}

/** A path WHATWG URL parsing leaves as it is: segments of plain characters, none starting with a dot. */
const PLAIN_PATH = /^(?:\/(?:[A-Za-z0-9_~:@!$&'()*+,;=-][A-Za-z0-9._~:@!$&'()*+,;=-]*)?)+$/;
/** A query of printable ASCII URL parsing keeps as it is (no fragment, nothing it would escape). */
const PLAIN_QUERY = /^[\x21\x24-\x26\x28-\x3b\x3d\x3f-\x7e]*$/;

/**
 * A request target (path and query) as the handlers read it. The common plain form is split directly;
 * anything else (dot segments, escapes, other characters) goes through full URL parsing.
 */
export function parseRequestUrl(target: string): RequestUrl {
  const q = target.indexOf('?');
  const pathname = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? '' : target.slice(q + 1);
  // (A target starting with // names a host to URL parsing.)
  if (pathname.charCodeAt(1) !== 0x2f && PLAIN_PATH.test(pathname) && PLAIN_QUERY.test(query))
    return { pathname, search: query ? `?${query}` : '', searchParams: new URLSearchParams(query) };
  return new URL(target, 'http://kemu');
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

/** The verb of a resource request by its HTTP method (before list, watch and deletecollection are told apart). */
const METHOD_VERBS: Record<string, string> = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

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
  const all = pathSegments(pathname);
  // The segments still to resolve are all[i..]; n of them.
  let i = 0;
  let n = all.length;
  if (n < 3) return info;
  const prefix = all[0];
  if (prefix !== 'api' && prefix !== 'apis') return info;
  i++;
  n--;
  if (prefix === 'apis') {
    if (n < 3) return info;
    info.apiGroup = all[i++];
    n--;
  }
  info.apiPrefix = prefix;
  info.isResourceRequest = true;
  info.apiVersion = all[i++];
  n--;

  if (SPECIAL_VERBS.has(all[i])) {
    if (n < 2) throw new BadRequestError(`unable to determine kind and namespace from url ${pathname}`);
    info.verb = all[i++];
    n--;
  } else {
    info.verb = METHOD_VERBS[method] ?? '';
  }

  if (all[i] === 'namespaces') {
    if (n > 1) {
      info.namespace = all[i + 1];
      if (n > 2 && !NAMESPACE_SUBRESOURCES.has(all[i + 2])) {
        i += 2;
        n -= 2;
      }
    }
  }
  if (n >= 3 && info.verb !== 'proxy') info.subresource = all[i + 2];
  if (n >= 2) info.name = all[i + 1];
  if (n >= 1) info.resource = all[i];
  // A proxy subresource carries the path to forward after it (nodes/<name>/proxy/stats/summary).
  if (n > 3 && info.verb !== 'proxy' && all[i + 2] !== 'proxy')
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
