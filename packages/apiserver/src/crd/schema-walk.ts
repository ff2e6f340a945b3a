// Pruning, defaulting and validation of a custom resource against its version's structural schema, with
// the messages kube-apiserver gives (`spec.replicas in body must be of type integer: "string"`).
import { FieldErrors } from '@kemu/core';
import type { JSONSchemaProps } from './types.js';

type Json = unknown;
type JsonObject = Record<string, Json>;

const isObject = (v: Json): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);
const preserves = (s: JSONSchemaProps) => s['x-kubernetes-preserve-unknown-fields'] === true;
const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** The JSON type name kube-openapi reports for a value. */
function jsonType(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

/** The fields of the object the root schema does not describe are dropped, as kube-apiserver prunes. */
export function prune(value: Json, schema: JSONSchemaProps | undefined, root = true): Json {
  if (!schema) return value;
  if (Array.isArray(value)) return schema.items ? value.map((v) => prune(v, schema.items, false)) : value;
  if (!isObject(value)) return value;
  const embedded = schema['x-kubernetes-embedded-resource'] === true;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) {
    if ((root || embedded) && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) {
      out[k] = v;
      continue;
    }
    const prop = schema.properties?.[k];
    if (prop) {
      if (v === null && !prop.nullable && !preserves(prop)) continue;
      out[k] = prune(v, prop, false);
    } else if (isObject(schema.additionalProperties)) out[k] = prune(v, schema.additionalProperties, false);
    else if (schema.additionalProperties === true || preserves(schema)) out[k] = v;
  }
  return out;
}

/** Fill absent fields that have a default, depth first, as kube-apiserver defaults custom resources. */
export function applyDefaults(value: Json, schema: JSONSchemaProps | undefined): Json {
  if (!schema) return value;
  if (Array.isArray(value)) return schema.items ? value.map((v) => applyDefaults(v, schema.items)) : value;
  if (!isObject(value)) return value;
  for (const [k, prop] of Object.entries(schema.properties ?? {})) {
    if (!(k in value) && prop.default !== undefined) value[k] = structuredClone(prop.default);
    if (k in value) value[k] = applyDefaults(value[k], prop);
  }
  if (isObject(schema.additionalProperties)) for (const k of Object.keys(value)) if (!schema.properties?.[k]) value[k] = applyDefaults(value[k], schema.additionalProperties);
  return value;
}

function typeMatches(type: string, v: Json): boolean {
  switch (type) {
    case 'object':
      return isObject(v);
    case 'array':
      return Array.isArray(v);
    case 'string':
      return typeof v === 'string';
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'number':
      return typeof v === 'number';
    case 'boolean':
      return typeof v === 'boolean';
    default:
      return true;
  }
}

/** Whether a value passes a schema, with no errors recorded (for anyOf/oneOf/not). */
function passes(v: Json, s: JSONSchemaProps, path: string): boolean {
  const e = new FieldErrors();
  validateValue(e, v, s, path);
  return e.ok;
}

/** Record the field errors of a value against its schema. */
export function validateValue(e: FieldErrors, v: Json, s: JSONSchemaProps, path: string): void {
  if (v === null) {
    if (!s.nullable && s.type && !preserves(s)) e.invalid(path, 'null', `${path} in body must be of type ${s.type}: "null"`);
    return;
  }
  if (s['x-kubernetes-int-or-string']) {
    if (!(typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v))))
      e.invalid(path, jsonType(v), `${path} in body must be of type integer,string: "${jsonType(v)}"`);
  } else if (s.type && !typeMatches(s.type, v)) {
    e.invalid(path, jsonType(v), `${path} in body must be of type ${s.type}: "${jsonType(v)}"`);
    return;
  }
  if (s.enum && !s.enum.some((x) => JSON.stringify(x) === JSON.stringify(v))) e.notSupported(path, v, s.enum.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))));
  if (typeof v === 'number') {
    if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum))
      e.invalid(path, v, `${path} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${s.minimum}`);
    if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum))
      e.invalid(path, v, `${path} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${s.maximum}`);
    if (s.multipleOf !== undefined && s.multipleOf !== 0 && !Number.isInteger(v / s.multipleOf)) e.invalid(path, v, `${path} in body should be a multiple of ${s.multipleOf}`);
  }
  if (typeof v === 'string') {
    const len = [...v].length;
    if (s.maxLength !== undefined && len > s.maxLength) e.tooLong(path, s.maxLength);
    if (s.minLength !== undefined && len < s.minLength) e.invalid(path, v, `${path} in body should be at least ${s.minLength} chars long`);
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(v)) e.invalid(path, v, `${path} in body should match '${s.pattern}'`);
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) e.tooMany(path, v.length, s.maxItems);
    if (s.minItems !== undefined && v.length < s.minItems) e.invalid(path, v.length, `${path} in body should have at least ${s.minItems} items`);
    if (s.uniqueItems || s['x-kubernetes-list-type'] === 'set') {
      const seen = new Set<string>();
      v.forEach((x, i) => {
        const k = JSON.stringify(x);
        if (seen.has(k)) e.duplicate(`${path}[${i}]`, x);
        seen.add(k);
      });
    }
    if (s['x-kubernetes-list-type'] === 'map' && s['x-kubernetes-list-map-keys']) {
      const keys = s['x-kubernetes-list-map-keys'];
      const seen = new Set<string>();
      v.forEach((x, i) => {
        if (!isObject(x)) return;
        const k = JSON.stringify(keys.map((key) => x[key]));
        if (seen.has(k)) e.duplicate(`${path}[${i}]`, Object.fromEntries(keys.map((key) => [key, x[key]])));
        seen.add(k);
      });
    }
    if (s.items) v.forEach((x, i) => validateValue(e, x, s.items!, `${path}[${i}]`));
  }
  if (isObject(v)) {
    const n = Object.keys(v).length;
    if (s.maxProperties !== undefined && n > s.maxProperties) e.tooMany(path, n, s.maxProperties);
    if (s.minProperties !== undefined && n < s.minProperties) e.invalid(path, n, `${path} in body should have at least ${s.minProperties} properties`);
    for (const r of s.required ?? []) if (!(r in v)) e.required(join(path, r));
    for (const [k, x] of Object.entries(v)) {
      const prop = s.properties?.[k];
      if (prop) validateValue(e, x, prop, join(path, k));
      else if (isObject(s.additionalProperties)) validateValue(e, x, s.additionalProperties, join(path, k));
    }
  }
  for (const sub of s.allOf ?? []) validateValue(e, v, sub, path);
  if (s.anyOf && !s.anyOf.some((sub) => passes(v, sub, path))) e.invalid(path, v, `${path} in body must validate at least one schema (anyOf)`);
  if (s.oneOf && s.oneOf.filter((sub) => passes(v, sub, path)).length !== 1) e.invalid(path, v, `${path} in body must validate one and only one schema (oneOf)`);
  if (s.not && passes(v, s.not, path)) e.invalid(path, v, `${path} in body must not validate the schema (not)`);
}
