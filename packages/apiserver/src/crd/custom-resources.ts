// Serving custom resources: a CRD's create or update registers its kind (resource, scope, status
// subresource: what discovery and the store read), its schema (OpenAPI, explain), its printer columns
// (Tables) and hooks that prune, default and validate its objects; the CRD kind itself is registered here.
import {
  type FieldErrors,
  type KubeObject,
  lookupKind,
  registerKind,
  registerKindHooks,
  rfc3339,
  type Store,
  unregisterKind,
} from '@kemu/core';
import { type FieldSchema, META, registerSchemaModule, type TypeSchema, unregisterKindSchema } from '@kemu/core/schema';
import { registerPrinter, unregisterPrinter } from '../tables/table.js';
import { validateCustomResourceDefinition } from './crd-validation.js';
import { findAll, parseJsonPath } from './jsonpath.js';
import { printerFromColumns } from './printer-columns.js';
import { applyDefaults, prune, validateValue } from './schema-walk.js';
import type { CustomResourceDefinition, CustomResourceDefinitionVersion, JSONSchemaProps } from './types.js';

const CRD_API_VERSION = 'apiextensions.k8s.io/v1';

interface Served {
  crd: CustomResourceDefinition;
  /** Schema per apiVersion (`group/version`). */
  schemas: Map<string, JSONSchemaProps | undefined>;
}

/** Served CRDs by kind (core's kind registry is keyed by kind). */
const served = new Map<string, Served>();

/** The storage version of a CRD. */
export function storageVersion(crd: CustomResourceDefinition): CustomResourceDefinitionVersion {
  const v = crd.spec.versions.find((x) => x.storage);
  if (!v) throw new Error(`CRD ${crd.metadata.name} has no storage version`);
  return v;
}

/** OpenAPI definition name of a custom kind: reversed group, version, kind (`com.example.stable.v1.CronTab`). */
function definitionPackage(group: string, version: string): string {
  return `${group.split('.').reverse().join('.')}.${version}`;
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The kind-schema types of a structural schema, for OpenAPI and explain; returns the root's type expression. */
function toTypes(pkg: string, name: string, s: JSONSchemaProps, out: TypeSchema[], isRoot = false): string {
  if (s['x-kubernetes-int-or-string']) return 'intOrString';
  switch (s.type) {
    case 'string':
      return 'string';
    case 'integer':
      return s.format === 'int32' ? 'int32' : 'int64';
    case 'number':
      return 'double';
    case 'boolean':
      return 'bool';
    case 'array':
      return `[]${s.items ? toTypes(pkg, name, s.items, out) : 'json'}`;
  }
  if (s.type === 'object' && s.properties && !s['x-kubernetes-preserve-unknown-fields']) {
    const fields: FieldSchema[] = [];
    for (const [k, p] of Object.entries(s.properties)) {
      if (isRoot && (k === 'apiVersion' || k === 'kind')) continue;
      const f: FieldSchema = {
        name: k,
        type: isRoot && k === 'metadata' ? `${META}ObjectMeta` : toTypes(pkg, `${name}${cap(k)}`, p, out),
        proto: 0,
        description: p.description ?? '',
      };
      if (s.required?.includes(k)) f.required = true;
      if (p.enum) f.enum = p.enum.map(String);
      if (p.default !== undefined) f.default = p.default;
      const lt = p['x-kubernetes-list-type'];
      if (lt === 'atomic' || lt === 'set' || lt === 'map') f.listType = lt;
      if (p['x-kubernetes-list-map-keys']) f.listMapKeys = p['x-kubernetes-list-map-keys'];
      const mt = p['x-kubernetes-map-type'];
      if (mt === 'atomic' || mt === 'granular') f.mapType = mt;
      fields.push(f);
    }
    if (isRoot && !fields.some((f) => f.name === 'metadata')) fields.unshift({ name: 'metadata', type: `${META}ObjectMeta`, proto: 0, description: 'Standard object metadata.' });
    out.push({ name: `${pkg}.${name}`, description: s.description ?? '', fields });
    return `${pkg}.${name}`;
  }
  if (s.type === 'object' && typeof s.additionalProperties === 'object') return `map[string]${toTypes(pkg, name, s.additionalProperties, out)}`;
  return 'json';
}

function replaceContents(obj: KubeObject, next: KubeObject): void {
  for (const k of Object.keys(obj)) delete obj[k];
  Object.assign(obj, next);
}

/** Register a CRD's kind, schemas, printers and object hooks (replacing what an older version registered). */
export function registerCustomResource(crd: CustomResourceDefinition): void {
  const { group, names, scope, versions } = crd.spec;
  const previous = served.get(names.kind);
  if (previous && previous.crd.metadata.name !== crd.metadata.name) throw new Error(`kind ${names.kind} is already served by ${previous.crd.metadata.name}`);
  if (previous) unregisterCustomResource(previous.crd, true);
  const storage = storageVersion(crd);
  // Field selectors: metadata.name/namespace always, plus the version's selectableFields.
  const fields = Object.fromEntries(
    (storage.selectableFields ?? []).map(({ jsonPath }) => {
      const steps = parseJsonPath(jsonPath);
      return [jsonPath.replace(/^\./, ''), (o: unknown) => {
        const v = findAll(o, steps)[0];
        return v === undefined || v === null ? '' : String(v);
      }];
    }),
  );
  registerKind({
    fields,
    kind: names.kind,
    apiVersion: `${group}/${storage.name}`,
    resource: names.plural,
    namespaced: scope === 'Namespaced',
    hasStatus: storage.subresources?.status !== undefined,
    ...({ shortNames: names.shortNames ?? [], categories: names.categories ?? [], singularName: names.singular ?? names.kind.toLowerCase() } as object),
  });
  const schemas = new Map<string, JSONSchemaProps | undefined>();
  for (const v of versions.filter((x) => x.served)) {
    const apiVersion = `${group}/${v.name}`;
    const schema = v.schema?.openAPIV3Schema;
    schemas.set(apiVersion, schema);
    const pkg = definitionPackage(group, v.name);
    const types: TypeSchema[] = [];
    const root = schema ? toTypes(pkg, names.kind, { ...schema, type: 'object', properties: schema.properties ?? {} }, types, true) : `${pkg}.${names.kind}`;
    if (!schema) types.push({ name: root, description: '', fields: [{ name: 'metadata', type: `${META}ObjectMeta`, proto: 0, description: '' }] });
    registerSchemaModule({ package: pkg, types, kinds: [{ kind: names.kind, apiVersion, type: root, protobuf: false }] });
    registerPrinter(apiVersion, names.kind, printerFromColumns(v.additionalPrinterColumns));
  }
  served.set(names.kind, { crd, schemas });
  registerKindHooks(names.kind, {
    defaults(obj) {
      const s = served.get(names.kind)?.schemas.get(obj.apiVersion);
      if (s) replaceContents(obj, applyDefaults(prune(obj, s), s) as KubeObject);
    },
    validate(e: FieldErrors, obj) {
      const entry = served.get(names.kind);
      if (!entry) return;
      if (!entry.schemas.has(obj.apiVersion)) {
        e.notSupported('apiVersion', obj.apiVersion, [...entry.schemas.keys()]);
        return;
      }
      const s = entry.schemas.get(obj.apiVersion);
      if (!s) return;
      const { metadata: _m, apiVersion: _a, kind: _k, ...rest } = obj;
      const body = { ...s, properties: Object.fromEntries(Object.entries(s.properties ?? {}).filter(([k]) => k !== 'metadata' && k !== 'apiVersion' && k !== 'kind')) };
      validateValue(e, rest, body, '');
    },
  });
}

/** Stop serving a CRD's kind: its schemas and printers go; its objects stop being defaulted and validated. */
export function unregisterCustomResource(crd: CustomResourceDefinition, keepKind = false): void {
  const entry = served.get(crd.spec.names.kind);
  if (!entry || entry.crd.metadata.name !== crd.metadata.name) return;
  if (!keepKind) unregisterKind(crd.spec.names.kind);
  for (const apiVersion of entry.schemas.keys()) {
    unregisterKindSchema(apiVersion, crd.spec.names.kind);
    unregisterPrinter(apiVersion, crd.spec.names.kind);
  }
  served.delete(crd.spec.names.kind);
}

/** The CRD served for a kind, if any. */
export function servedCustomResource(kind: string): CustomResourceDefinition | undefined {
  return served.get(kind)?.crd;
}

/** Defaults kube-apiserver fills into a CRD. */
function defaultCRD(crd: CustomResourceDefinition): void {
  const n = crd.spec?.names;
  if (n?.kind) {
    n.singular ??= n.kind.toLowerCase();
    n.listKind ??= `${n.kind}List`;
  }
  if (crd.spec) crd.spec.conversion ??= { strategy: 'None' };
}

/** The status of a CRD that is served: names accepted, established, stored in its storage version. */
export function establishedStatus(crd: CustomResourceDefinition): NonNullable<CustomResourceDefinition['status']> {
  const now = rfc3339();
  const stored = new Set(crd.status?.storedVersions ?? []);
  stored.add(storageVersion(crd).name);
  return {
    conditions: [
      { type: 'NamesAccepted', status: 'True', lastTransitionTime: now, reason: 'NoConflicts', message: 'no conflicts found' },
      { type: 'Established', status: 'True', lastTransitionTime: now, reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
    ],
    acceptedNames: { ...crd.spec.names },
    storedVersions: [...stored],
  };
}

let crdKindRegistered = false;

/** Register the CustomResourceDefinition kind: stored, validated, and serving its kind once written. */
export function registerCustomResourceDefinitionKind(): void {
  if (crdKindRegistered) return;
  crdKindRegistered = true;
  if (!lookupKind('CustomResourceDefinition'))
    registerKind({ kind: 'CustomResourceDefinition', apiVersion: CRD_API_VERSION, resource: 'customresourcedefinitions', namespaced: false, hasStatus: true });
  const commit = (crd: KubeObject) => ({ commit: () => registerCustomResource(crd as CustomResourceDefinition) });
  registerKindHooks('CustomResourceDefinition', {
    defaults: (obj) => defaultCRD(obj as CustomResourceDefinition),
    initialStatus: (obj) => {
      const crd = obj as CustomResourceDefinition;
      if (crd.spec?.versions?.some((v) => v.storage)) crd.status = establishedStatus(crd);
    },
    validate: (e, obj) => validateCustomResourceDefinition(e, obj as CustomResourceDefinition),
    beforeCreate: async (_ctx, obj) => commit(obj),
    beforeUpdate: async (_ctx, next) => commit(next),
    afterDelete: (_ctx, obj) => unregisterCustomResource(obj as CustomResourceDefinition),
  });
}

/** Serve the CRDs a store already holds (at start-up, e.g. over a file or etcd store). */
export async function serveStoredCustomResources(store: Store): Promise<number> {
  registerCustomResourceDefinitionKind();
  const list = await store.list('CustomResourceDefinition');
  for (const crd of list.items) registerCustomResource(crd as CustomResourceDefinition);
  return list.items.length;
}
