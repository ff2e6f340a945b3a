// The Kubernetes protobuf envelope: the 4 bytes "k8s\0", then a runtime.Unknown message carrying the
// object's apiVersion and kind (typeMeta = 1), its message bytes (raw = 2), contentEncoding (3) and
// contentType (4). This is what `application/vnd.kubernetes.protobuf` bodies are.
import { BadRequestError, type KubeObject, StatusError } from '@kemu/core';
import { kindSchema, META } from '@kemu/core/schema';
import { decodeMessage, encodeMessage } from './codec.js';
import { readFields, WIRE_BYTES, Writer } from './wire.js';

export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';
export const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Kinds of meta/v1 any group version may carry. */
const META_KINDS: Record<string, string> = {
  Status: `${META}Status`,
  DeleteOptions: `${META}DeleteOptions`,
  WatchEvent: `${META}WatchEvent`,
};

export function isEnvelope(b: Buffer): boolean {
  return b.length >= 4 && b.subarray(0, 4).equals(MAGIC);
}

/** The schema type of apiVersion + kind in protobuf, or undefined when the kind has no protobuf form. */
export function protobufType(apiVersion: string, kind: string): string | undefined {
  const k = kindSchema(apiVersion, kind);
  if (k) return k.protobuf ? k.type : undefined;
  if (kind.endsWith('List')) {
    const item = kindSchema(apiVersion, kind.slice(0, -4));
    if (item) return item.protobuf ? `${item.type}List` : undefined;
  }
  return META_KINDS[kind];
}

export interface Envelope {
  apiVersion: string;
  kind: string;
  raw: Buffer;
  contentEncoding: string;
  contentType: string;
}

/** Split an envelope into its type and message bytes. */
export function decodeEnvelope(b: Buffer): Envelope {
  if (!isEnvelope(b)) throw new BadRequestError('protobuf: the body does not start with the "k8s\\x00" prefix');
  const out: Envelope = { apiVersion: '', kind: '', raw: Buffer.alloc(0), contentEncoding: '', contentType: '' };
  for (const f of readFields(b.subarray(4))) {
    if (f.wire !== WIRE_BYTES) continue;
    const v = f.value as Buffer;
    if (f.field === 1) {
      for (const t of readFields(v)) {
        if (t.wire !== WIRE_BYTES) continue;
        if (t.field === 1) out.apiVersion = (t.value as Buffer).toString('utf8');
        else if (t.field === 2) out.kind = (t.value as Buffer).toString('utf8');
      }
    } else if (f.field === 2) out.raw = v;
    else if (f.field === 3) out.contentEncoding = v.toString('utf8');
    else if (f.field === 4) out.contentType = v.toString('utf8');
  }
  return out;
}

/** An envelope around message bytes. */
export function encodeEnvelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  const typeMeta = new Writer().tag(1, WIRE_BYTES).string(apiVersion).tag(2, WIRE_BYTES).string(kind).finish();
  const unknown = new Writer().tag(1, WIRE_BYTES).bytes(typeMeta).tag(2, WIRE_BYTES).bytes(raw).tag(3, WIRE_BYTES).string('').tag(4, WIRE_BYTES).string('');
  return Buffer.concat([MAGIC, unknown.finish()]);
}

function unsupported(apiVersion: string, kind: string): StatusError {
  return new StatusError(
    'UnsupportedMediaType',
    415,
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml${kind ? ` (no protobuf form for ${apiVersion} ${kind})` : ''}`,
  );
}

/** Decode an `application/vnd.kubernetes.protobuf` body into a JSON object with apiVersion and kind. */
export function decodeObjectBytes(b: Buffer, depth = 0): KubeObject {
  const env = decodeEnvelope(b);
  if (env.contentEncoding) throw new BadRequestError(`protobuf: unsupported content encoding "${env.contentEncoding}"`);
  if (!env.kind) throw new BadRequestError('protobuf: the envelope names no kind');
  const type = protobufType(env.apiVersion, env.kind);
  if (!type) throw new BadRequestError(`no kind "${env.kind}" is registered for version "${env.apiVersion}" in scheme`);
  const body = decodeMessage(env.raw, type, depth);
  return { apiVersion: env.apiVersion, kind: env.kind, ...body } as KubeObject;
}

/** Encode an object (apiVersion and kind set) as an `application/vnd.kubernetes.protobuf` body. */
export function encodeObject(obj: { apiVersion?: string; kind?: string; [k: string]: unknown }): Buffer {
  const apiVersion = obj.apiVersion ?? '';
  const kind = obj.kind ?? '';
  const type = protobufType(apiVersion, kind);
  if (!type) throw unsupported(apiVersion, kind);
  return encodeEnvelope(apiVersion, kind, encodeMessage(obj as Record<string, unknown>, type));
}

/** Whether objects of this kind have a protobuf form (built-in kinds do; CRDs do not). */
export function supportsProtobuf(apiVersion: string, kind: string): boolean {
  return protobufType(apiVersion, kind) !== undefined;
}
