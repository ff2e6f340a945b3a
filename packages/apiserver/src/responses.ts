// Writing responses: objects as JSON or YAML, errors as Status bodies with their HTTP code. The one place a
// thrown error becomes what the client sees; anything not a StatusError is a 500 InternalError with its
// message only (no stack).
import type http from 'node:http';
import type http2 from 'node:http2';
import { isStatusError, type Status, StatusError } from '@kemu/core';
import YAML from 'yaml';
import { JSON_TYPE, YAML_TYPE } from './content-negotiation.js';

export type OutgoingResponse = http.ServerResponse | http2.Http2ServerResponse;

export function send(res: OutgoingResponse, code: number, body: unknown, media: 'json' | 'yaml' = 'json', contentType?: string): void {
  const text = media === 'yaml' ? YAML.stringify(body, { aliasDuplicateObjects: false }) : JSON.stringify(body);
  const headers = {
    'content-type': contentType ?? (media === 'yaml' ? YAML_TYPE : JSON_TYPE),
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-cache, private',
  };
  (res as http.ServerResponse).writeHead(code, headers);
  res.end(text);
}

export function sendText(res: OutgoingResponse, code: number, text: string, contentType = 'text/plain; charset=utf-8'): void {
  (res as http.ServerResponse).writeHead(code, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function toStatus(err: unknown): Status {
  if (isStatusError(err)) return err.toStatus();
  const message = err instanceof Error ? err.message : String(err);
  return new StatusError('InternalError', 500, `Internal error occurred: ${message}`).toStatus();
}

export function sendError(res: OutgoingResponse, err: unknown): Status {
  const status = toStatus(err);
  if (!res.headersSent) {
    const extra = status.code === 401 ? { 'www-authenticate': 'Basic realm="kubernetes-master"' } : {};
    const text = JSON.stringify(status);
    (res as http.ServerResponse).writeHead(status.code, {
      'content-type': JSON_TYPE,
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-cache, private',
      ...extra,
    });
    res.end(text);
  } else if (!res.writableEnded) res.end();
  return status;
}

/** A Success Status, as deletecollection and some deletes return. */
export function successStatus(details?: Record<string, unknown>): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', ...(details ? { details } : {}) };
}

/**
 * A large list as JSON written in pieces (chunked), so a LIST of 150,000 objects never becomes one string
 * of hundreds of MiB first. Small lists go out in one piece with a Content-Length.
 */
export function sendJsonList(res: OutgoingResponse, code: number, list: { items: unknown[] } & Record<string, unknown>): void {
  if (list.items.length < 1000) return send(res, code, list);
  const { items, ...head } = list;
  (res as http.ServerResponse).writeHead(code, { 'content-type': JSON_TYPE, 'cache-control': 'no-cache, private' });
  const opening = JSON.stringify({ ...head, items: [] });
  let out = `${opening.slice(0, -2)}[`;
  for (let i = 0; i < items.length; i++) {
    out += (i ? ',' : '') + JSON.stringify(items[i]);
    if (out.length > 1 << 20) {
      (res as http.ServerResponse).write(out);
      out = '';
    }
  }
  res.end(`${out}]}`);
}
