// Server-side field validation (the `fieldValidation` query parameter: Strict, Warn or Ignore; Warn when
// absent, as kube-apiserver defaults): fields a kind's schema does not declare are dropped, and reported as a
// 400 (Strict) or as `Warning` headers (Warn). Values of the wrong JSON type anywhere in a schema'd object are
// a 400 naming the field as Go's decoder does, instead of reaching the store.
import { BadRequestError, type KindInfo } from '@kemu/core';
import { jsonFields, schemaType, typeOfObject, typeShape } from '@kemu/core/schema';

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

export function fieldValidationOf(q: URLSearchParams): FieldValidation {
  const v = q.get('fieldValidation');
  if (v === null || v === '') return 'Warn';
  if (v === 'Strict' || v === 'Warn' || v === 'Ignore') return v;
  throw new BadRequestError(`fieldValidation: Unsupported value: "${v}": supported values: "Ignore", "Strict", "Warn"`);
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

function goType(expr: string): string {
  const [shape, inner] = typeShape(expr);
  if (shape === 'list') return `[]${goType(inner)}`;
  if (shape === 'map') return `map[string]${goType(inner)}`;
  if (shape === 'ref') {
    const parts = inner.split('.');
    return `${parts[parts.length - 2]}.${parts[parts.length - 1]}`;
  }
  return ({ bytes: '[]uint8', bool: 'bool', int32: 'int32', int64: 'int64', double: 'float64', quantity: 'resource.Quantity', time: 'v1.Time', microTime: 'v1.MicroTime', intOrString: 'intstr.IntOrString', duration: 'v1.Duration' } as Record<string, string>)[inner] ?? inner;
}

/** Whether a JSON value fits a scalar type (null fits everything: Go decodes it as the zero value). */
function scalarFits(type: string, v: unknown): boolean {
  if (v === null) return true;
  switch (type) {
    case 'string':
    case 'bytes':
    case 'time':
    case 'microTime':
    case 'duration':
      return typeof v === 'string';
    case 'bool':
      return typeof v === 'boolean';
    case 'int32':
    case 'int64':
      return typeof v === 'number' && Number.isInteger(v);
    case 'double':
      return typeof v === 'number';
    case 'quantity':
    case 'intOrString':
      return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));
    default:
      // json, rawExtension, fieldsV1: anything.
      return true;
  }
}

export interface FieldCheck {
  /** Unknown fields, as upstream names them (`spec.containers[0].imagee`). */
  unknown: string[];
}

/**
 * Checks `obj` against its kind's schema: throws a 400 for a value of the wrong JSON type, removes
 * undeclared fields (in place) and returns their paths. Kinds without a schema are left alone.
 */
export function checkFields(info: KindInfo, obj: Record<string, unknown>): FieldCheck {
  const type = typeOfObject({ apiVersion: info.apiVersion, kind: info.kind });
  const unknown: string[] = [];
  if (!type) return { unknown };
  const fail = (v: unknown, parent: string, field: string, expr: string) =>
    new BadRequestError(
      `${info.kind} in version "${info.version}" cannot be handled as a ${info.kind}: json: cannot unmarshal ${jsonType(v)} into Go struct field ${parent}.${field} of type ${goType(expr)}`,
    );
  const walkType = (typeName: string, value: Record<string, unknown>, path: string, depth: number) => {
    if (depth > 64) return;
    const t = schemaType(typeName);
    if (!t) return;
    const fields = jsonFields(typeName);
    const goName = typeName.split('.').pop() ?? typeName;
    for (const key of Object.keys(value)) {
      const fieldPath = path ? `${path}.${key}` : key;
      if (depth === 0 && (key === 'apiVersion' || key === 'kind')) continue;
      const f = fields.get(key);
      if (!f) {
        unknown.push(fieldPath);
        delete value[key];
        continue;
      }
      walkValue(f.type, value[key], fieldPath, goName, key, depth + 1);
    }
  };
  const walkValue = (expr: string, v: unknown, path: string, parentGo: string, field: string, depth: number) => {
    if (v === null || v === undefined) return;
    const [shape, inner] = typeShape(expr);
    if (shape === 'scalar') {
      if (!scalarFits(inner, v)) throw fail(v, parentGo, path, expr);
      return;
    }
    if (shape === 'list') {
      if (!Array.isArray(v)) throw fail(v, parentGo, path, expr);
      v.forEach((el, i) => walkValue(inner, el, `${path}[${i}]`, parentGo, field, depth));
      return;
    }
    if (shape === 'map') {
      if (!isObject(v)) throw fail(v, parentGo, path, expr);
      for (const [k, el] of Object.entries(v)) walkValue(inner, el, `${path}[${k}]`, parentGo, field, depth);
      return;
    }
    // A type without a schema of its own (an opaque format) accepts what it is given.
    if (!schemaType(inner)) return;
    if (!isObject(v)) throw fail(v, parentGo, path, expr);
    walkType(inner, v, path, depth);
  };
  walkType(type.name, obj, '', 0);
  return { unknown };
}

/** Applies the fieldValidation mode to a check's unknown fields: a 400 (Strict) or warnings to send. */
export function unknownFieldOutcome(info: KindInfo, mode: FieldValidation, unknown: string[]): string[] {
  if (!unknown.length || mode === 'Ignore') return [];
  if (mode === 'Strict')
    throw new BadRequestError(
      `${info.kind} in version "${info.version}" cannot be handled as a ${info.kind}: strict decoding error: ${unknown.map((u) => `unknown field "${u}"`).join(', ')}`,
    );
  return unknown.map((u) => `unknown field "${u}"`);
}
