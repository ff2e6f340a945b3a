// Reading and decoding request bodies with kube-apiserver's limits: at most 3 MiB (a 413 Status, and the
// rest of the body is drained rather than the connection reset), JSON or YAML (or protobuf when a codec is
// wired in), and a decoded value must be an object. Decoding errors are 400s naming what was wrong.
import type http from 'node:http';
import type http2 from 'node:http2';
import { BadRequestError, StatusError } from '@kemu/core';
import YAML from 'yaml';
import { bodyMediaType, JSON_TYPE, PROTOBUF_TYPE, unsupportedMediaType, YAML_TYPE } from './content-negotiation.js';

/** kube-apiserver's default --max-request-body-bytes (3 MiB, etcd's request limit plus headroom). */
export const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;

export type IncomingRequest = http.IncomingMessage | http2.Http2ServerRequest;

export function tooLarge(limit: number): StatusError {
  return new StatusError('RequestEntityTooLarge', 413, `Request entity too large: limit is ${limit}`);
}

/** The body as bytes; a body over `limit` is refused with 413 after draining it (the client reads the Status). */
export function readBody(req: IncomingRequest, limit = MAX_REQUEST_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  return new Promise((resolve, reject) => {
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      return reject(tooLarge(limit));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        reject(tooLarge(limit));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      // (A small body arrives in one chunk: no copy of it.)
      if (!over) resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

/** A protobuf decoder for the body of a write (wired in when the codec exists). */
export type ProtobufDecoder = (body: Buffer) => unknown;

export interface DecodeOptions {
  protobuf?: ProtobufDecoder;
}

/** Decodes a JSON, YAML or protobuf body by its Content-Type (JSON when none is given). */
export function decodeBody(body: Buffer, contentType: string | undefined, opts: DecodeOptions = {}): unknown {
  const media = bodyMediaType(contentType) || JSON_TYPE;
  if (media === JSON_TYPE) return parseJsonBody(body);
  if (media === YAML_TYPE) return parseYamlBody(body);
  if (media === PROTOBUF_TYPE && opts.protobuf) return opts.protobuf(body);
  throw unsupportedMediaType([JSON_TYPE, YAML_TYPE, ...(opts.protobuf ? [PROTOBUF_TYPE] : [])]);
}

export function parseJsonBody(body: Buffer): unknown {
  const text = body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    // (Only a failed parse can be an empty body: no trimmed copy of every body.)
    if (!text.trim()) throw new BadRequestError('the request body is empty');
    throw new BadRequestError(`the request body is not valid JSON: ${(err as Error).message}`);
  }
}

export function parseYamlBody(body: Buffer): unknown {
  const text = body.toString('utf8');
  if (!text.trim()) throw new BadRequestError('the request body is empty');
  let docs: YAML.Document[];
  try {
    docs = YAML.parseAllDocuments(text) as YAML.Document[];
  } catch (err) {
    throw new BadRequestError(`the request body is not valid YAML: ${(err as Error).message}`);
  }
  const real = docs.filter((d) => d.contents !== null);
  if (real.length !== 1) throw new BadRequestError(`the request body must hold one YAML document, not ${real.length}`);
  const doc = real[0];
  if (doc.errors.length) throw new BadRequestError(`the request body is not valid YAML: ${doc.errors[0].message}`);
  return doc.toJS({ maxAliasCount: 100 });
}
