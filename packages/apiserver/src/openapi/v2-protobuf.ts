// `/openapi/v2` as the protobuf older clients ask for (Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf;
// kubectl 1.20 asks for nothing else): the Swagger document in gnostic's openapi.v2 messages. Field numbers
// are those of gnostic's OpenAPIv2.proto; extension values are carried as YAML (JSON is YAML).
import { WIRE_BYTES, WIRE_VARINT, Writer } from '../protobuf/wire.js';

/** What clients send in Accept to ask for the protobuf form. */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
/** What the protobuf form is answered as (the media type above does not parse as one in Go). */
export const OPENAPI_V2_PROTOBUF_CONTENT_TYPE = 'application/octet-stream';

type Json = Record<string, unknown>;

const msg = (w: Writer, field: number, body: Writer) => w.tag(field, WIRE_BYTES).bytes(body.finish());
const str = (w: Writer, field: number, v: unknown) => {
  if (typeof v === 'string') w.tag(field, WIRE_BYTES).string(v);
};
const bool = (w: Writer, field: number, v: unknown) => {
  if (typeof v === 'boolean') w.tag(field, WIRE_VARINT).varint(v ? 1 : 0);
};
/** An `Any` carrying a value as YAML (field 2). */
const anyYaml = (v: unknown) => new Writer().tag(2, WIRE_BYTES).string(JSON.stringify(v));

/** `NamedAny` entries for the x-* keys of an object. */
function vendorExtensions(w: Writer, field: number, o: Json): void {
  for (const [k, v] of Object.entries(o)) {
    if (!k.startsWith('x-')) continue;
    msg(w, field, new Writer().tag(1, WIRE_BYTES).string(k).tag(2, WIRE_BYTES).bytes(anyYaml(v).finish()));
  }
}

function schema(s: Json): Writer {
  const w = new Writer();
  str(w, 1, s.$ref);
  str(w, 2, s.format);
  str(w, 4, s.description);
  if (s.default !== undefined) msg(w, 5, anyYaml(s.default));
  for (const r of (s.required as string[] | undefined) ?? []) str(w, 19, r);
  for (const e of (s.enum as unknown[] | undefined) ?? []) msg(w, 20, anyYaml(e));
  const ap = s.additionalProperties;
  if (typeof ap === 'boolean') msg(w, 21, new Writer().tag(2, WIRE_VARINT).varint(ap ? 1 : 0));
  else if (ap && typeof ap === 'object') msg(w, 21, new Writer().tag(1, WIRE_BYTES).bytes(schema(ap as Json).finish()));
  if (typeof s.type === 'string') msg(w, 22, new Writer().tag(1, WIRE_BYTES).string(s.type));
  if (s.items && typeof s.items === 'object') msg(w, 23, new Writer().tag(1, WIRE_BYTES).bytes(schema(s.items as Json).finish()));
  for (const a of (s.allOf as Json[] | undefined) ?? []) msg(w, 24, schema(a));
  if (s.properties && typeof s.properties === 'object') msg(w, 25, namedSchemas(s.properties as Record<string, Json>));
  vendorExtensions(w, 31, s);
  return w;
}

function namedSchemas(m: Record<string, Json>): Writer {
  const w = new Writer();
  for (const [name, s] of Object.entries(m)) msg(w, 1, new Writer().tag(1, WIRE_BYTES).string(name).tag(2, WIRE_BYTES).bytes(schema(s).finish()));
  return w;
}

function parameter(p: Json): Writer {
  const param = new Writer();
  if (p.in === 'body') {
    const b = new Writer();
    str(b, 1, p.description);
    str(b, 2, p.name);
    str(b, 3, p.in);
    bool(b, 4, p.required);
    if (p.schema) msg(b, 5, schema(p.schema as Json));
    msg(param, 1, b);
  } else {
    // Query and path parameters share their first fields' numbers (required, in, description, name).
    const sub = new Writer();
    bool(sub, 1, p.required);
    str(sub, 2, p.in);
    str(sub, 3, p.description);
    str(sub, 4, p.name);
    str(sub, p.in === 'query' ? 6 : 5, p.type);
    msg(param, 2, msg(new Writer(), p.in === 'query' ? 3 : 4, sub));
  }
  return msg(new Writer(), 1, param);
}

function operation(o: Json): Writer {
  const w = new Writer();
  for (const t of (o.tags as string[] | undefined) ?? []) str(w, 1, t);
  str(w, 3, o.description);
  str(w, 5, o.operationId);
  for (const p of (o.parameters as Json[] | undefined) ?? []) msg(w, 8, parameter(p));
  const responses = new Writer();
  for (const [code, r] of Object.entries((o.responses as Record<string, Json> | undefined) ?? {})) {
    const resp = new Writer();
    str(resp, 1, r.description);
    if (r.schema) msg(resp, 2, msg(new Writer(), 1, schema(r.schema as Json)));
    msg(responses, 1, new Writer().tag(1, WIRE_BYTES).string(code).tag(2, WIRE_BYTES).bytes(msg(new Writer(), 1, resp).finish()));
  }
  msg(w, 9, responses);
  vendorExtensions(w, 13, o);
  return w;
}

const VERBS: [string, number][] = [
  ['get', 2],
  ['put', 3],
  ['post', 4],
  ['delete', 5],
  ['patch', 8],
];

/** A Swagger 2.0 document (as JSON) in protobuf. */
export function swaggerToProtobuf(doc: Json): Buffer {
  const w = new Writer();
  str(w, 1, doc.swagger);
  const info = (doc.info ?? {}) as Json;
  const i = new Writer();
  str(i, 1, info.title);
  str(i, 2, info.version);
  msg(w, 2, i);
  const paths = new Writer();
  for (const [p, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    const pi = new Writer();
    for (const [verb, n] of VERBS) if (item[verb]) msg(pi, n, operation(item[verb] as Json));
    for (const prm of (item.parameters as Json[] | undefined) ?? []) msg(pi, 9, parameter(prm));
    msg(paths, 2, new Writer().tag(1, WIRE_BYTES).string(p).tag(2, WIRE_BYTES).bytes(pi.finish()));
  }
  msg(w, 8, paths);
  msg(w, 9, namedSchemas((doc.definitions ?? {}) as Record<string, Json>));
  return w.finish();
}
