// Any kind to and from its protobuf message, generically from its schema: field numbers, types, inline
// fields, maps as entry messages, and the apimachinery formats (Quantity, Time, MicroTime, IntOrString,
// Duration, RawExtension, FieldsV1) as upstream encodes them. No per-kind code.
import { BadRequestError } from '@kemu/core';
import { type FieldSchema, jsonFields, schemaGeneration, schemaType, typeShape } from '@kemu/core/schema';
// envelope.ts imports this module too: an embedded RawExtension may itself be an envelope.
import { decodeObjectBytes, isEnvelope } from './envelope.js';
import { readFields, WIRE_BYTES, WIRE_FIXED64, WIRE_VARINT, Writer } from './wire.js';

/** Nesting deeper than this is refused (upstream's decoder has a similar bound). */
const MAX_DEPTH = 100;

type Json = unknown;
type JsonObject = Record<string, Json>;

const VARINT_TYPES = new Set(['bool', 'int32', 'int64']);

/** The schema generation the caches below were built from: a registered module may replace a type. */
let cachedGeneration = -1;
function fresh(): void {
  if (cachedGeneration === schemaGeneration()) return;
  resetCodecCache();
  cachedGeneration = schemaGeneration();
}

function protoFields(typeName: string): Map<number, FieldSchema> {
  fresh();
  let m = byNumberCache.get(typeName);
  if (!m) {
    const t = schemaType(typeName);
    if (!t) throw new BadRequestError(`protobuf: no schema for ${typeName}`);
    m = new Map(t.fields.filter((f) => f.proto > 0).map((f) => [f.proto, f]));
    byNumberCache.set(typeName, m);
  }
  return m;
}
const byNumberCache = new Map<string, Map<number, FieldSchema>>();

/** Forget cached field tables (a CRD or a module replaced a type). */
export function resetCodecCache(): void {
  byNumberCache.clear();
  encodeOrderCache.clear();
  zeroFieldsCache.clear();
}

// ---- formats ----

function timeString(seconds: number, nanos: number, micro: boolean): string {
  const d = new Date(seconds * 1000);
  // Date covers ±8.64e15 ms; anything beyond is not a time a client meant.
  if (Number.isNaN(d.getTime()) || d.getUTCFullYear() > 9999 || d.getUTCFullYear() < 0)
    throw new BadRequestError(`protobuf: a time of ${seconds} seconds since 1970 is out of range`);
  const base = d.toISOString().slice(0, 19);
  return micro ? `${base}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z` : `${base}Z`;
}

function parseTime(s: unknown, path: string): { seconds: bigint; nanos: number } {
  if (typeof s !== 'string') throw new BadRequestError(`${path}: expected an RFC 3339 time string`);
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(s);
  const ms = Date.parse(s);
  if (!m || Number.isNaN(ms)) throw new BadRequestError(`${path}: "${s}" is not an RFC 3339 time`);
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos: m[2] ? Number(m[2].padEnd(9, '0')) : 0 };
}

const DURATION_UNITS: [string, bigint][] = [
  ['h', 3_600_000_000_000n],
  ['m', 60_000_000_000n],
  ['s', 1_000_000_000n],
  ['ms', 1_000_000n],
  ['us', 1_000n],
  ['µs', 1_000n],
  ['ns', 1n],
];

/** Go's time.Duration.String for whole-unit values (`1h0m0s`, `1m30s`, `500ms`, `0s`). */
function durationString(ns: bigint): string {
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  let n = neg ? -ns : ns;
  let out: string;
  if (n < 1_000_000_000n) {
    out = n % 1_000_000n === 0n ? `${n / 1_000_000n}ms` : n % 1000n === 0n ? `${n / 1000n}µs` : `${n}ns`;
  } else {
    const h = n / 3_600_000_000_000n;
    n %= 3_600_000_000_000n;
    const m = n / 60_000_000_000n;
    n %= 60_000_000_000n;
    const s = n / 1_000_000_000n;
    const frac = n % 1_000_000_000n;
    const sec = frac ? `${s}.${String(frac).padStart(9, '0').replace(/0+$/, '')}s` : `${s}s`;
    out = h ? `${h}h${m}m${sec}` : m ? `${m}m${sec}` : sec;
  }
  return neg ? `-${out}` : out;
}

function parseDuration(s: unknown, path: string): bigint {
  if (typeof s !== 'string') throw new BadRequestError(`${path}: expected a duration string`);
  const re = /(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)/gy;
  let total = 0n;
  let rest = s.startsWith('-') ? s.slice(1) : s;
  if (rest === '0') rest = '0s';
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = re.exec(rest))) {
    const unit = DURATION_UNITS.find(([u]) => u === m![2])![1];
    const [whole, frac = ''] = m[1].split('.');
    total += BigInt(whole) * unit + (frac ? (BigInt(frac.padEnd(9, '0').slice(0, 9)) * unit) / 1_000_000_000n : 0n);
    consumed = re.lastIndex;
  }
  if (consumed !== rest.length || rest.length === 0) throw new BadRequestError(`${path}: "${s}" is not a duration`);
  return s.startsWith('-') ? -total : total;
}

function decodeRaw(b: Buffer, depth: number): Json {
  if (b.length === 0) return null;
  if (isEnvelope(b)) return decodeObjectBytes(b, depth + 1);
  try {
    return JSON.parse(b.toString('utf8'));
  } catch {
    throw new BadRequestError('protobuf: an embedded object is neither protobuf nor JSON');
  }
}

// ---- decoding ----

function expectWire(actual: number, expected: number, path: string): void {
  if (actual !== expected) throw new BadRequestError(`protobuf: ${path}: wire type ${actual}, expected ${expected}`);
}

type WireValue = number | bigint | Buffer;

/** A varint as a signed integer of the given width. */
function signed(v: WireValue, bits: 32 | 64): number {
  if (typeof v === 'number') return v;
  return Number(BigInt.asIntN(bits, v as bigint));
}

function decodeScalar(type: string, wire: number, value: WireValue, path: string, depth: number): Json {
  switch (type) {
    case 'string':
      expectWire(wire, WIRE_BYTES, path);
      return (value as Buffer).toString('utf8');
    case 'bytes':
      expectWire(wire, WIRE_BYTES, path);
      return (value as Buffer).toString('base64');
    case 'bool':
      expectWire(wire, WIRE_VARINT, path);
      return typeof value === 'number' ? value !== 0 : value !== 0n;
    case 'int32':
      expectWire(wire, WIRE_VARINT, path);
      return signed(value, 32);
    case 'int64':
      expectWire(wire, WIRE_VARINT, path);
      return signed(value, 64);
    case 'double': {
      expectWire(wire, WIRE_FIXED64, path);
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(value as bigint);
      return b.readDoubleLE(0);
    }
  }
  expectWire(wire, WIRE_BYTES, path);
  const sub = new Map<number, WireValue>();
  for (const fv of readFields(value as Buffer)) sub.set(fv.field, fv.value);
  const str = (n: number) => (sub.get(n) as Buffer | undefined)?.toString('utf8') ?? '';
  const int = (n: number) => {
    const v = sub.get(n);
    return v === undefined ? 0 : signed(v, 64);
  };
  switch (type) {
    case 'quantity':
      return str(1);
    case 'time':
    case 'microTime':
      return sub.size === 0 ? null : timeString(int(1), int(2), type === 'microTime');
    case 'intOrString':
      return int(1) === 1 ? str(3) : int(2);
    case 'duration': {
      const v = sub.get(1);
      return durationString(v === undefined ? 0n : typeof v === 'number' ? BigInt(v) : BigInt.asIntN(64, v as bigint));
    }
    case 'rawExtension':
    case 'fieldsV1':
    case 'json':
      return decodeRaw((sub.get(1) as Buffer | undefined) ?? Buffer.alloc(0), depth);
  }
  throw new BadRequestError(`protobuf: ${path}: unsupported type ${type}`);
}

function decodeElement(type: string, wire: number, value: WireValue, path: string, depth: number): Json {
  const [shape, inner] = typeShape(type);
  if (shape === 'ref') {
    expectWire(wire, WIRE_BYTES, path);
    return decodeMessage(value as Buffer, inner, depth + 1, path);
  }
  return decodeScalar(inner, wire, value, path, depth);
}

const isZero = (v: Json) => v === '' || v === 0 || v === false || v === null;

function zeroOf(type: string): Json {
  switch (type) {
    case 'string':
    case 'bytes':
    case 'quantity':
      return '';
    case 'bool':
      return false;
    case 'int32':
    case 'int64':
    case 'double':
    case 'intOrString':
      return 0;
    default:
      return undefined;
  }
}

/** One message as its JSON object. */
export function decodeMessage(buf: Buffer, typeName: string, depth = 0, path = ''): JsonObject {
  if (depth > MAX_DEPTH) throw new BadRequestError('protobuf: message nested too deeply');
  const fields = protoFields(typeName);
  const out: JsonObject = {};
  for (const { field, wire, value } of readFields(buf)) {
    const f = fields.get(field);
    if (!f) continue; // Unknown fields are dropped, as upstream's decoder does.
    const p = path ? `${path}.${f.name}` : f.name;
    const [shape, inner] = typeShape(f.type);
    if (shape === 'list') {
      const list = (out[f.name] ??= []) as Json[];
      if (wire === WIRE_BYTES && (VARINT_TYPES.has(inner) || inner === 'double')) {
        // A packed list of numbers.
        for (const b of packedValues(value as Buffer, inner === 'double')) list.push(decodeScalar(inner, inner === 'double' ? WIRE_FIXED64 : WIRE_VARINT, b, p, depth));
      } else list.push(decodeElement(inner, wire, value, `${p}[${list.length}]`, depth));
    } else if (shape === 'map') {
      expectWire(wire, WIRE_BYTES, p);
      const map = (out[f.name] ??= {}) as JsonObject;
      let key = '';
      let val: Json = undefined;
      for (const e of readFields(value as Buffer)) {
        if (e.field === 1) key = decodeScalar('string', e.wire, e.value, `${p} key`, depth) as string;
        else if (e.field === 2) val = decodeElement(inner, e.wire, e.value, `${p}[${key}]`, depth);
      }
      map[key] = val ?? zeroOf(inner) ?? {};
    } else {
      const v = decodeElement(f.type, wire, value, p, depth);
      if (f.inline) Object.assign(out, v as JsonObject);
      else out[f.name] = v;
    }
  }
  // JSON as upstream writes it: zero scalars are omitted unless required (no omitempty) or a pointer.
  for (const f of scalarFields(typeName)) {
    if (f.name in out) {
      if (!f.required && !f.pointer && isZero(out[f.name])) delete out[f.name];
    } else if (f.required && zeroOf(f.type) !== undefined) out[f.name] = zeroOf(f.type);
  }
  return out;
}

/** The JSON-level scalar fields of a type (cached). */
function scalarFields(typeName: string): FieldSchema[] {
  fresh();
  let list = zeroFieldsCache.get(typeName);
  if (!list) {
    list = [...jsonFields(typeName).values()].filter((f) => typeShape(f.type)[0] === 'scalar');
    zeroFieldsCache.set(typeName, list);
  }
  return list;
}
const zeroFieldsCache = new Map<string, FieldSchema[]>();

function* packedValues(buf: Buffer, fixed64: boolean): Generator<WireValue> {
  let pos = 0;
  while (pos < buf.length) {
    if (fixed64) {
      if (pos + 8 > buf.length) throw new BadRequestError('protobuf: truncated packed fixed64');
      yield buf.readBigUInt64LE(pos);
      pos += 8;
      continue;
    }
    let out = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new BadRequestError('protobuf: truncated packed varint');
      const b = buf[pos++];
      out |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) break;
      shift += 7n;
      if (shift > 63n) throw new BadRequestError('protobuf: packed varint longer than 10 bytes');
    }
    yield out;
  }
}

// ---- encoding ----

function typeError(path: string, want: string, v: Json): BadRequestError {
  return new BadRequestError(`${path}: expected ${want}, got ${v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v}`);
}

function writeScalar(w: Writer, field: number, type: string, v: Json, path: string): void {
  switch (type) {
    case 'string':
      if (typeof v !== 'string') throw typeError(path, 'string', v);
      w.tag(field, WIRE_BYTES).string(v);
      return;
    case 'bytes':
      if (typeof v !== 'string') throw typeError(path, 'base64 string', v);
      w.tag(field, WIRE_BYTES).bytes(Buffer.from(v, 'base64'));
      return;
    case 'bool':
      if (typeof v !== 'boolean') throw typeError(path, 'boolean', v);
      w.tag(field, WIRE_VARINT).varint(v ? 1 : 0);
      return;
    case 'int32':
    case 'int64':
      if (typeof v !== 'number' || !Number.isInteger(v)) throw typeError(path, 'integer', v);
      w.tag(field, WIRE_VARINT).varint(v);
      return;
    case 'double':
      if (typeof v !== 'number') throw typeError(path, 'number', v);
      w.tag(field, WIRE_FIXED64).double(v);
      return;
  }
  const sub = new Writer();
  switch (type) {
    case 'quantity':
      if (typeof v !== 'string' && typeof v !== 'number') throw typeError(path, 'quantity', v);
      sub.tag(1, WIRE_BYTES).string(String(v));
      break;
    case 'time':
    case 'microTime': {
      if (v === null) break;
      const t = parseTime(v, path);
      sub.tag(1, WIRE_VARINT).varint(t.seconds);
      sub.tag(2, WIRE_VARINT).varint(type === 'microTime' ? Math.floor(t.nanos / 1000) * 1000 : 0);
      break;
    }
    case 'intOrString':
      if (typeof v === 'number' && Number.isInteger(v)) sub.tag(1, WIRE_VARINT).varint(0).tag(2, WIRE_VARINT).varint(v);
      else if (typeof v === 'string') sub.tag(1, WIRE_VARINT).varint(1).tag(3, WIRE_BYTES).string(v);
      else throw typeError(path, 'integer or string', v);
      break;
    case 'duration':
      sub.tag(1, WIRE_VARINT).varint(parseDuration(v, path));
      break;
    case 'rawExtension':
    case 'fieldsV1':
    case 'json':
      sub.tag(1, WIRE_BYTES).bytes(Buffer.from(JSON.stringify(v)));
      break;
    default:
      throw new BadRequestError(`${path}: unsupported type ${type}`);
  }
  w.tag(field, WIRE_BYTES).bytes(sub.finish());
}

function writeElement(w: Writer, field: number, type: string, v: Json, path: string, depth: number): void {
  const [shape, inner] = typeShape(type);
  if (shape === 'ref') {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw typeError(path, 'object', v);
    w.tag(field, WIRE_BYTES).bytes(encodeMessage(v as JsonObject, inner, depth + 1, path));
  } else writeScalar(w, field, inner, v, path);
}

/** A type's protobuf fields in number order (cached). */
function encodeOrder(typeName: string): FieldSchema[] {
  fresh();
  let order = encodeOrderCache.get(typeName);
  if (!order) {
    const t = schemaType(typeName);
    if (!t) throw new BadRequestError(`protobuf: no schema for ${typeName}`);
    order = t.fields.filter((x) => x.proto > 0).sort((a, b) => a.proto - b.proto);
    encodeOrderCache.set(typeName, order);
  }
  return order;
}
const encodeOrderCache = new Map<string, FieldSchema[]>();

/** One JSON object as its message; fields in number order, as upstream writes them. */
export function encodeMessage(obj: JsonObject, typeName: string, depth = 0, path = ''): Buffer {
  if (depth > MAX_DEPTH) throw new BadRequestError('protobuf: object nested too deeply');
  const w = new Writer();
  for (const f of encodeOrder(typeName)) {
    const p = path ? `${path}.${f.name}` : f.name;
    if (f.inline) {
      const own = jsonFields(f.type);
      const part: JsonObject = {};
      for (const k of Object.keys(obj)) if (own.has(k)) part[k] = obj[k];
      w.tag(f.proto, WIRE_BYTES).bytes(encodeMessage(part, f.type, depth + 1, path));
      continue;
    }
    const v = obj[f.name];
    if (v === undefined || (v === null && f.type !== 'time')) continue;
    const [shape, inner] = typeShape(f.type);
    if (shape === 'list') {
      if (!Array.isArray(v)) throw typeError(p, 'array', v);
      v.forEach((x, i) => writeElement(w, f.proto, inner, x, `${p}[${i}]`, depth));
    } else if (shape === 'map') {
      if (typeof v !== 'object' || Array.isArray(v)) throw typeError(p, 'object', v);
      for (const [k, x] of Object.entries(v as JsonObject)) {
        const e = new Writer().tag(1, WIRE_BYTES).string(k);
        if (x !== null && x !== undefined) writeElement(e, 2, inner, x, `${p}[${k}]`, depth);
        w.tag(f.proto, WIRE_BYTES).bytes(e.finish());
      }
    } else writeElement(w, f.proto, f.type, v, p, depth);
  }
  return w.finish();
}
