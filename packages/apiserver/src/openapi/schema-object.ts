// One kind-schema type, or one field, as an OpenAPI schema object: Swagger 2.0 (`/openapi/v2`) and OpenAPI
// 3.0 (`/openapi/v3`) differ only in where references point, how a reference carries a description, and how
// quantities and int-or-strings are spelled.
import { type FieldSchema, jsonFields, META, SCALAR_TYPES, schemaType, type TypeSchema, typeShape } from '@kemu/core/schema';

export type OpenApiVersion = 'v2' | 'v3';
export type SchemaObject = Record<string, unknown>;

/** Formats published as named definitions, as upstream does. */
const FORMAT_DEFINITIONS: Record<string, string> = {
  quantity: 'io.k8s.apimachinery.pkg.api.resource.Quantity',
  time: `${META}Time`,
  microTime: `${META}MicroTime`,
  intOrString: 'io.k8s.apimachinery.pkg.util.intstr.IntOrString',
  rawExtension: 'io.k8s.apimachinery.pkg.runtime.RawExtension',
  fieldsV1: `${META}FieldsV1`,
};

const PRIMITIVES: Record<string, SchemaObject> = {
  string: { type: 'string' },
  bytes: { type: 'string', format: 'byte' },
  bool: { type: 'boolean' },
  int32: { type: 'integer', format: 'int32' },
  int64: { type: 'integer', format: 'int64' },
  double: { type: 'number', format: 'double' },
  duration: { type: 'string' },
  json: { 'x-kubernetes-preserve-unknown-fields': true },
};

/** The definition of a format published by name (Quantity, Time, IntOrString, ...). */
function formatDefinition(name: string, v: OpenApiVersion): SchemaObject | undefined {
  switch (name) {
    case FORMAT_DEFINITIONS.quantity:
      return v === 'v3'
        ? { description: 'A fixed-point number with an optional SI or binary suffix, e.g. 100m, 1.5Gi.', oneOf: [{ type: 'string' }, { type: 'number' }] }
        : { description: 'A fixed-point number with an optional SI or binary suffix, e.g. 100m, 1.5Gi.', type: 'string' };
    case FORMAT_DEFINITIONS.time:
      return { description: 'A timestamp in RFC 3339 form, to the second.', type: 'string', format: 'date-time' };
    case FORMAT_DEFINITIONS.microTime:
      return { description: 'A timestamp in RFC 3339 form, to the microsecond.', type: 'string', format: 'date-time' };
    case FORMAT_DEFINITIONS.intOrString:
      return v === 'v3'
        ? { description: 'An integer or a string.', 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] }
        : { description: 'An integer or a string.', type: 'string', format: 'int-or-string' };
    case FORMAT_DEFINITIONS.rawExtension:
      return { description: 'An embedded object of any kind.', type: 'object' };
    case FORMAT_DEFINITIONS.fieldsV1:
      return { description: 'A set of fields, in the structured-merge-diff field set format.', type: 'object' };
    default:
      return undefined;
  }
}

export function refTo(name: string, v: OpenApiVersion): SchemaObject {
  return { $ref: v === 'v3' ? `#/components/schemas/${name}` : `#/definitions/${name}` };
}

/** The schema of a type expression (`string`, `[]X`, `map[string]quantity`, a type name). */
export function typeExprSchema(expr: string, v: OpenApiVersion): SchemaObject {
  const [shape, inner] = typeShape(expr);
  if (shape === 'list') return { type: 'array', items: typeExprSchema(inner, v) };
  if (shape === 'map') return { type: 'object', additionalProperties: typeExprSchema(inner, v) };
  if (shape === 'scalar') {
    const named = FORMAT_DEFINITIONS[inner];
    return named ? refTo(named, v) : { ...PRIMITIVES[inner] };
  }
  return refTo(inner, v);
}

/** One property: its type, description and the x-kubernetes-* extensions strategic merge and apply read. */
export function fieldSchema(f: FieldSchema, v: OpenApiVersion): SchemaObject {
  let s = typeExprSchema(f.type, v);
  const extra: SchemaObject = {};
  if (f.description) extra.description = f.description;
  if (f.enum) extra.enum = f.enum;
  if (f.default !== undefined) extra.default = f.default;
  if (f.listType) extra['x-kubernetes-list-type'] = f.listType;
  if (f.listMapKeys) extra['x-kubernetes-list-map-keys'] = f.listMapKeys;
  if (f.mapType) extra['x-kubernetes-map-type'] = f.mapType;
  if (f.patchMergeKey) extra['x-kubernetes-patch-merge-key'] = f.patchMergeKey;
  if (f.patchStrategy) extra['x-kubernetes-patch-strategy'] = f.patchStrategy;
  // OpenAPI 3.0 ignores siblings of $ref, so upstream wraps the reference in allOf.
  if (v === 'v3' && '$ref' in s && Object.keys(extra).length > 0) s = { allOf: [s] };
  return { ...s, ...extra };
}

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** The definition of a named type (a kind-schema type or a format). */
export function definition(name: string, v: OpenApiVersion, gvks: GroupVersionKind[] = []): SchemaObject | undefined {
  const fmt = formatDefinition(name, v);
  if (fmt) return fmt;
  const t: TypeSchema | undefined = schemaType(name);
  if (!t) return undefined;
  const properties: Record<string, SchemaObject> = {};
  const required: string[] = [];
  for (const [jsonName, f] of jsonFields(name)) {
    properties[jsonName] = fieldSchema(f, v);
    if (f.required) required.push(jsonName);
  }
  const out: SchemaObject = { description: t.description, type: 'object', properties };
  if (required.length) out.required = required;
  if (t.structType) out['x-kubernetes-map-type'] = t.structType;
  if (gvks.length) out['x-kubernetes-group-version-kind'] = gvks;
  return out;
}

/** Every named type reachable from the roots (the roots included), formats as their definition names. */
export function reachableTypes(roots: Iterable<string>): Set<string> {
  const seen = new Set<string>();
  const visit = (expr: string) => {
    const [shape, inner] = typeShape(expr);
    if (shape === 'list' || shape === 'map') return visit(inner);
    if (shape === 'scalar') {
      const named = FORMAT_DEFINITIONS[inner];
      if (named) seen.add(named);
      return;
    }
    if (seen.has(inner)) return;
    seen.add(inner);
    for (const f of schemaType(inner)?.fields ?? []) visit(f.type);
  };
  for (const r of roots) visit(r);
  return seen;
}

export const isScalarType = (expr: string) => SCALAR_TYPES.has(expr);
