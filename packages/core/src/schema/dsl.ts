// The schema DSL: a compact, typed description of every kind's fields, the one source of truth that OpenAPI
// (v2 and v3), `kubectl explain`, strategic merge patch, Table printing and the protobuf codec read.
//
// ## Adding a kind (one small file + one registration line)
//
// 1. Create `packages/core/src/schema/<group>-<version>.ts` (e.g. `apps-v1.ts`) that default-exports
//    `schemaModule(package, types, kinds)`:
//
//      export default schemaModule('io.k8s.api.apps.v1', {
//        Deployment: type('A declarative rollout of a replicated pod template.', {
//          metadata: f(1, `${META}ObjectMeta`),
//          spec: f(2, 'DeploymentSpec'),
//          status: f(3, 'DeploymentStatus'),
//        }),
//        DeploymentSpec: type('What the deployment should run.', {
//          replicas: f(1, 'int32', 'Desired number of pods (default 1).', { pointer: true }),
//          selector: f(2, `${META}LabelSelector`, 'Which pods belong to the deployment.', { required: true }),
//          ...
//        }),
//      }, [{ kind: 'Deployment', apiVersion: 'apps/v1', type: 'Deployment' }]);
//
//    - Type names are upstream's OpenAPI definition names; a name without a dot is relative to the module's
//      package, so `'DeploymentSpec'` means `io.k8s.api.apps.v1.DeploymentSpec`. The protobuf message name is
//      the same with `io.k8s.` written `k8s.io.` (upstream's convention).
//    - `f(protoNumber, typeExpr, description?, options?)`: the object key is the JSON name; `protoNumber` is
//      the field number in upstream's generated.proto (0 for a kind with no protobuf form, e.g. a CRD).
//    - A type expression is a scalar (`string`, `bytes`, `bool`, `int32`, `int64`, `double`), a format with
//      its own JSON and protobuf encoding (`quantity`, `time`, `microTime`, `intOrString`, `duration`,
//      `rawExtension`, `fieldsV1`, `json`), a type name, `[]T` (a list) or `map[string]T` (a map).
//    - Options carry upstream's Go struct tags and markers: `required` (the JSON tag has no `omitempty`: the
//      field is in OpenAPI's `required` list and is written even when zero), `pointer` (a Go pointer: a zero
//      value is meaningful and kept), `inline` (the field's own fields appear at this level in JSON, as Go's
//      `json:",inline"`), `patchStrategy`/`patchMergeKey`, `listType`/`listMapKeys`, `mapType`, `enum`.
//    - Do not write `apiVersion`/`kind`: every kind's type gets them; every kind gets its `<Kind>List` type.
//    - Facts (names, numbers, types, strategies) must match upstream exactly. To start from them, let
//      `node tools/schema-gen/from-kubectl.mjs k8s.io.api.apps.v1 Deployment ...` write the module from the
//      descriptors and struct tags in the kubectl binary, then settle its TODOs (list types, pointers)
//      against upstream's types.go. Descriptions are short and in our own words.
// 2. Add one line importing the module to `BUILTIN_MODULES` in `packages/core/src/schema/index.ts`.
//    The kind itself (resource, scope, selectable fields) is still registered in kinds.ts / registerKind.

/** Field types whose JSON and protobuf encodings are both plain. */
export type PrimitiveType = 'string' | 'bytes' | 'bool' | 'int32' | 'int64' | 'double';
/** Types with an encoding of their own: JSON string/number/object on one side, a small message in protobuf. */
export type FormatType =
  | 'quantity'
  | 'time'
  | 'microTime'
  | 'intOrString'
  | 'duration'
  | 'rawExtension'
  | 'fieldsV1'
  | 'json';
export type ScalarType = PrimitiveType | FormatType;

export const SCALAR_TYPES: ReadonlySet<string> = new Set<ScalarType>([
  'string',
  'bytes',
  'bool',
  'int32',
  'int64',
  'double',
  'quantity',
  'time',
  'microTime',
  'intOrString',
  'duration',
  'rawExtension',
  'fieldsV1',
  'json',
]);

/** Upstream's OpenAPI names for the meta/v1 and shared apimachinery definitions. */
export const META = 'io.k8s.apimachinery.pkg.apis.meta.v1.';

export type PatchStrategy = 'merge' | 'replace' | 'retainKeys' | 'merge,retainKeys';

export interface FieldOptions {
  /** No `omitempty`: listed as required in OpenAPI and written even when zero. */
  required?: boolean;
  /** A Go pointer: present-but-zero is kept when decoding protobuf. */
  pointer?: boolean;
  /** Go `json:",inline"`: the field's type's fields are this type's fields in JSON. */
  inline?: boolean;
  patchStrategy?: PatchStrategy;
  patchMergeKey?: string;
  listType?: 'atomic' | 'set' | 'map';
  listMapKeys?: string[];
  mapType?: 'atomic' | 'granular';
  enum?: string[];
  /** Server-side default, published in OpenAPI. */
  default?: unknown;
}

export interface FieldSchema extends FieldOptions {
  /** JSON name. */
  name: string;
  /** Resolved type expression (type names are absolute). */
  type: string;
  /** Protobuf field number; 0 when the field has no protobuf form. */
  proto: number;
  description: string;
}

export interface TypeSchema {
  /** Upstream OpenAPI definition name, e.g. `io.k8s.api.core.v1.Pod`. */
  name: string;
  description: string;
  fields: FieldSchema[];
  /** `+structType=atomic`: replaced as a whole by apply. */
  structType?: 'atomic' | 'granular';
}

export interface KindSchema {
  kind: string;
  /** `v1` or `group/version`. */
  apiVersion: string;
  /** Type name, relative to the module's package or absolute. */
  type: string;
  /** Whether the kind has a protobuf form (false for CRDs and kinds served only as JSON). */
  protobuf?: boolean;
}

export interface SchemaModule {
  package: string;
  types: TypeSchema[];
  kinds: Required<KindSchema>[];
}

/** A field definition before its module resolves relative type names. */
export interface FieldDef extends FieldOptions {
  proto: number;
  type: string;
  description: string;
}

export interface TypeDef {
  description: string;
  fields: Record<string, FieldDef>;
  structType?: 'atomic' | 'granular';
}

/** One field: protobuf number, type expression, description, options. */
export function f(proto: number, type: string, description = '', options: FieldOptions = {}): FieldDef {
  return { proto, type, description, ...options };
}

/** One named type. */
export function type(description: string, fields: Record<string, FieldDef>, structType?: 'atomic' | 'granular'): TypeDef {
  return { description, fields, ...(structType ? { structType } : {}) };
}

/** Split a type expression into its list/map wrapper and element: `[]X` → ['list', 'X']. */
export function typeShape(expr: string): ['list' | 'map', string] | ['scalar' | 'ref', string] {
  if (expr.startsWith('[]')) return ['list', expr.slice(2)];
  if (expr.startsWith('map[string]')) return ['map', expr.slice('map[string]'.length)];
  return SCALAR_TYPES.has(expr) ? ['scalar', expr] : ['ref', expr];
}

function resolveExpr(pkg: string, expr: string): string {
  const [shape, inner] = typeShape(expr);
  if (shape === 'list') return `[]${resolveExpr(pkg, inner)}`;
  if (shape === 'map') return `map[string]${resolveExpr(pkg, inner)}`;
  if (shape === 'scalar' || inner.includes('.')) return inner;
  return `${pkg}.${inner}`;
}

/** A module of types in one upstream package (e.g. `io.k8s.api.core.v1`) and the kinds among them. */
export function schemaModule(pkg: string, types: Record<string, TypeDef>, kinds: KindSchema[] = []): SchemaModule {
  return {
    package: pkg,
    types: Object.entries(types).map(([name, t]) => ({
      name: `${pkg}.${name}`,
      description: t.description,
      ...(t.structType ? { structType: t.structType } : {}),
      fields: Object.entries(t.fields).map(([fname, fd]) => ({ ...fd, name: fname, type: resolveExpr(pkg, fd.type) })),
    })),
    kinds: kinds.map((k) => ({ protobuf: true, ...k, type: resolveExpr(pkg, k.type) })),
  };
}
