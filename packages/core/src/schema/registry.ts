// The schema registry: every registered type by its OpenAPI name, and every kind's schema by
// apiVersion + kind. Built-in modules are registered by index.ts; CRDs register theirs at runtime.
import { type FieldSchema, type KindSchema, META, type SchemaModule, type TypeSchema, typeShape } from './dsl.js';

const types = new Map<string, TypeSchema>();
const kinds = new Map<string, Required<KindSchema>>();
/** JSON-level fields per type, with inline fields flattened; cleared whenever a module is registered. */
const flatCache = new Map<string, Map<string, FieldSchema>>();

let generation = 0;

const kindKey = (apiVersion: string, kind: string) => `${apiVersion}|${kind}`;

/** Changes whenever a module is registered or a kind removed: a cache key for documents built from schemas. */
export function schemaGeneration(): number {
  return generation;
}

/** Register (or replace) a module's types and kinds; each kind gets apiVersion/kind fields and a List type. */
export function registerSchemaModule(mod: SchemaModule): void {
  for (const t of mod.types) types.set(t.name, t);
  for (const k of mod.kinds) {
    const t = types.get(k.type);
    if (!t) throw new Error(`schema: kind ${k.kind} names unknown type ${k.type}`);
    types.set(k.type, withTypeMeta(t, k));
    const listName = `${k.type}List`;
    const existing = types.get(listName);
    types.set(
      listName,
      withTypeMeta(
        existing ?? {
          name: listName,
          description: `A list of ${k.kind} objects.`,
          fields: [
            { name: 'metadata', type: `${META}ListMeta`, proto: 1, description: 'Standard list metadata.' },
            { name: 'items', type: `[]${k.type}`, proto: 2, description: `The ${k.kind} objects.`, required: true },
          ],
        },
        { ...k, kind: `${k.kind}List` },
      ),
    );
    kinds.set(kindKey(k.apiVersion, k.kind), k);
  }
  flatCache.clear();
  generation++;
}

/** Remove a kind (and its List type) registered at runtime, e.g. when its CRD is deleted. */
export function unregisterKindSchema(apiVersion: string, kind: string): void {
  const k = kinds.get(kindKey(apiVersion, kind));
  if (!k) return;
  kinds.delete(kindKey(apiVersion, kind));
  types.delete(k.type);
  types.delete(`${k.type}List`);
  flatCache.clear();
  generation++;
}

function withTypeMeta(t: TypeSchema, k: Required<KindSchema>): TypeSchema {
  const rest = t.fields.filter((f) => f.name !== 'apiVersion' && f.name !== 'kind');
  return {
    ...t,
    fields: [
      { name: 'apiVersion', type: 'string', proto: 0, description: `API version of the object: ${k.apiVersion}.` },
      { name: 'kind', type: 'string', proto: 0, description: `Kind of the object: ${k.kind}.` },
      ...rest,
    ],
  };
}

/** A type by its OpenAPI definition name. */
export function schemaType(name: string): TypeSchema | undefined {
  return types.get(name);
}

/** All registered types. */
export function schemaTypes(): TypeSchema[] {
  return [...types.values()];
}

/** The schema of a kind served at an apiVersion (`v1`, `apps/v1`). */
export function kindSchema(apiVersion: string, kind: string): Required<KindSchema> | undefined {
  return kinds.get(kindKey(apiVersion, kind));
}

/** All registered kinds. */
export function kindSchemas(): Required<KindSchema>[] {
  return [...kinds.values()];
}

/** The type of an object, from its own apiVersion and kind; undefined when no schema is registered. */
export function typeOfObject(obj: unknown): TypeSchema | undefined {
  if (obj === null || typeof obj !== 'object') return undefined;
  const { apiVersion, kind } = obj as { apiVersion?: unknown; kind?: unknown };
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return undefined;
  const k = kinds.get(kindKey(apiVersion, kind));
  return k && types.get(k.type);
}

/** A type's fields as they appear in JSON: inline fields replaced by their type's own fields. */
export function jsonFields(typeName: string): Map<string, FieldSchema> {
  let out = flatCache.get(typeName);
  if (out) return out;
  out = new Map();
  const t = types.get(typeName);
  for (const fld of t?.fields ?? []) {
    if (fld.inline) for (const [k, v] of jsonFields(fld.type)) out.set(k, v);
    else out.set(fld.name, fld);
  }
  flatCache.set(typeName, out);
  return out;
}

/** One JSON field of a type (inline fields included). */
export function jsonField(typeName: string, name: string): FieldSchema | undefined {
  return jsonFields(typeName).get(name);
}

/** The element type of a list or map type expression, or the expression itself. */
export function elementType(expr: string): string {
  const [shape, inner] = typeShape(expr);
  return shape === 'list' || shape === 'map' ? inner : expr;
}
