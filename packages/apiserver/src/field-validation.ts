// Server-side field validation (the `fieldValidation` query parameter: Strict, Warn or Ignore; Warn when
// absent, as kube-apiserver defaults): fields a kind's schema does not declare are dropped, and reported as a
// 400 (Strict) or as `Warning` headers (Warn). Values of the wrong JSON type anywhere in a schema'd object are
// a 400 naming the field as Go's decoder does, instead of reaching the store.
import { BadRequestError, type KindInfo } from '@kemu/core';
import { jsonFields, schemaGeneration, schemaType, typeOfObject, typeShape } from '@kemu/core/schema';

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

/** A type expression resolved once: its shape, and for lists and maps the element's. */
interface Expr {
  expr: string;
  shape: 'scalar' | 'list' | 'map' | 'ref';
  /** The scalar type, or the referenced type's name. */
  inner: string;
  element?: Expr;
}

/** A struct type resolved once: its Go name and its JSON fields' type expressions. */
interface StructType {
  goName: string;
  fields: Map<string, Expr>;
}

/** Resolved types and expressions, valid for one schema generation (CRDs register types at runtime). */
let resolvedGeneration = -1;
const structs = new Map<string, StructType | null>();
const exprs = new Map<string, Expr>();

function resolved(): void {
  const g = schemaGeneration();
  if (g === resolvedGeneration) return;
  structs.clear();
  exprs.clear();
  resolvedGeneration = g;
}

function exprOf(expr: string): Expr {
  let e = exprs.get(expr);
  if (e) return e;
  const [shape, inner] = typeShape(expr);
  e = { expr, shape, inner };
  exprs.set(expr, e);
  if (shape === 'list' || shape === 'map') e.element = exprOf(inner);
  return e;
}

/** A struct type by name; null when it has no schema of its own (an opaque format accepts anything). */
function structOf(typeName: string): StructType | null {
  let t = structs.get(typeName);
  if (t !== undefined) return t;
  t = null;
  if (schemaType(typeName)) {
    const fields = new Map<string, Expr>();
    for (const [k, f] of jsonFields(typeName)) fields.set(k, exprOf(f.type));
    t = { goName: typeName.split('.').pop() ?? typeName, fields };
  }
  structs.set(typeName, t);
  return t;
}

/** A map key on the path (shown as `[key]`). */
interface MapKey {
  key: string;
}

/**
 * One check's walk. The path of the value being looked at is kept as a stack of its pieces as they are
 * (a field name, a list index, a map key) and written out (`spec.containers[0]`) only when a field is unknown
 * or a value has the wrong type: nothing is formatted for the fields that pass.
 */
class FieldWalk {
  readonly unknown: string[] = [];
  private readonly path: (string | number | MapKey)[] = [];

  constructor(private readonly info: KindInfo) {}

  private pathText(): string {
    let out = '';
    this.path.forEach((p, i) => {
      if (typeof p === 'number') out += `[${p}]`;
      else if (typeof p === 'object') out += `[${p.key}]`;
      else out += i ? `.${p}` : p;
    });
    return out;
  }

  private fail(v: unknown, parentGo: string, expr: string): BadRequestError {
    const { kind, version } = this.info;
    return new BadRequestError(
      `${kind} in version "${version}" cannot be handled as a ${kind}: json: cannot unmarshal ${jsonType(v)} into Go struct field ${parentGo}.${this.pathText()} of type ${goType(expr)}`,
    );
  }

  struct(t: StructType, value: Record<string, unknown>, depth: number): void {
    if (depth > 64) return;
    const path = this.path;
    // (A key walk: deleting the current key while walking is allowed and skips nothing.)
    for (const key in value) {
      if (depth === 0 && (key === 'apiVersion' || key === 'kind')) continue;
      path.push(key);
      const f = t.fields.get(key);
      if (!f) {
        this.unknown.push(this.pathText());
        delete value[key];
      } else this.value(f, value[key], t.goName, depth + 1);
      path.pop();
    }
  }

  private value(e: Expr, v: unknown, parentGo: string, depth: number): void {
    if (v === null || v === undefined) return;
    switch (e.shape) {
      case 'scalar':
        if (!scalarFits(e.inner, v)) throw this.fail(v, parentGo, e.expr);
        return;
      case 'list': {
        if (!Array.isArray(v)) throw this.fail(v, parentGo, e.expr);
        const el = e.element!;
        // Lists of scalars that fit need no path.
        if (el.shape === 'scalar' && v.every((x) => scalarFits(el.inner, x))) return;
        for (let i = 0; i < v.length; i++) {
          this.path.push(i);
          this.value(el, v[i], parentGo, depth);
          this.path.pop();
        }
        return;
      }
      case 'map': {
        if (!isObject(v)) throw this.fail(v, parentGo, e.expr);
        const el = e.element!;
        for (const k in v) {
          const x = v[k];
          if (el.shape === 'scalar' && scalarFits(el.inner, x)) continue;
          this.path.push({ key: k });
          this.value(el, x, parentGo, depth);
          this.path.pop();
        }
        return;
      }
      default: {
        const t = structOf(e.inner);
        // A type without a schema of its own (an opaque format) accepts what it is given.
        if (!t) return;
        if (!isObject(v)) throw this.fail(v, parentGo, e.expr);
        this.struct(t, v, depth);
      }
    }
  }
}

/**
 * Checks `obj` against its kind's schema: throws a 400 for a value of the wrong JSON type, removes
 * undeclared fields (in place) and returns their paths. Kinds without a schema are left alone.
 */
export function checkFields(info: KindInfo, obj: Record<string, unknown>): FieldCheck {
  const type = typeOfObject({ apiVersion: info.apiVersion, kind: info.kind });
  if (!type) return { unknown: [] };
  resolved();
  const t = structOf(type.name);
  if (!t) return { unknown: [] };
  const walk = new FieldWalk(info);
  walk.struct(t, obj, 0);
  return { unknown: walk.unknown };
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
