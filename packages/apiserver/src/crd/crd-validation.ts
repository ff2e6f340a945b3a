// Validation of a CustomResourceDefinition as kube-apiserver does it: names, scope, versions (exactly one
// storage version), printer columns, and structural schemas (every node typed, no `additionalProperties`
// beside `properties`, defaults that satisfy their schema).
import { dns1123Label, dns1123Subdomain, FieldErrors } from '@kemu/core';
import { parseJsonPath } from './jsonpath.js';
import { prune, validateValue } from './schema-walk.js';
import type { CustomResourceDefinition, JSONSchemaProps } from './types.js';

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const COLUMN_TYPES = ['integer', 'number', 'string', 'boolean', 'date'];

/** Structural schema rules, recursively. */
function structural(e: FieldErrors, s: JSONSchemaProps, path: string, root: boolean): void {
  const free = s['x-kubernetes-preserve-unknown-fields'] === true || s['x-kubernetes-int-or-string'] === true;
  if (!s.type) {
    if (!free) e.required(`${path}.type`, root ? 'must not be empty at the root' : 'must not be empty for specified object fields');
  } else if (!TYPES.has(s.type)) e.notSupported(`${path}.type`, s.type, [...TYPES]);
  if (root && s.type && s.type !== 'object') e.invalid(`${path}.type`, s.type, 'must be object at the root');
  if (s['x-kubernetes-int-or-string'] && s.type) e.forbidden(`${path}.type`, 'must be empty if x-kubernetes-int-or-string is true');
  if (s.properties && s.additionalProperties !== undefined && s.additionalProperties !== false)
    e.forbidden(`${path}.additionalProperties`, 'additionalProperties and properties are mutual exclusive');
  if (s.type === 'array' && !s.items) e.required(`${path}.items`, 'must be specified');
  for (const k of ['$ref', 'definitions', 'dependencies', 'patternProperties', 'additionalItems', 'id']) if (k in s) e.forbidden(`${path}.${k}`, `${k} is not supported`);
  for (const [k, p] of Object.entries(s.properties ?? {})) structural(e, p, `${path}.properties[${k}]`, false);
  if (s.items) structural(e, s.items, `${path}.items`, false);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') structural(e, s.additionalProperties, `${path}.additionalProperties`, false);
  if (root && s.properties?.metadata) {
    const extra = Object.keys(s.properties.metadata.properties ?? {}).filter((k) => k !== 'name' && k !== 'generateName');
    if (extra.length) e.forbidden(`${path}.properties[metadata]`, 'must not specify anything other than name and generateName, but metadata is implicitly specified');
  }
  if (s.default !== undefined) {
    if (root) e.forbidden(`${path}.default`, 'must not be set at the root');
    else {
      const d = new FieldErrors();
      validateValue(d, prune(structuredClone(s.default), s, false), s, `${path}.default`);
      for (const c of d.list) e.list.push(c);
    }
  }
  if (s['x-kubernetes-list-type'] === 'map' && !s['x-kubernetes-list-map-keys']?.length)
    e.required(`${path}.x-kubernetes-list-map-keys`, 'must not be empty if x-kubernetes-list-type is map');
}

/** Field errors of a CRD (create and update). */
export function validateCustomResourceDefinition(e: FieldErrors, crd: CustomResourceDefinition): void {
  const spec = crd.spec;
  if (!spec || typeof spec !== 'object') {
    e.required('spec');
    return;
  }
  const names = spec.names ?? ({} as CustomResourceDefinition['spec']['names']);
  if (!spec.group) e.required('spec.group');
  else {
    e.check('spec.group', spec.group, dns1123Subdomain(spec.group));
    if (!spec.group.includes('.')) e.invalid('spec.group', spec.group, 'should be a domain with at least one dot');
  }
  if (!names.plural) e.required('spec.names.plural');
  else e.check('spec.names.plural', names.plural, dns1123Label(names.plural));
  if (names.singular) e.check('spec.names.singular', names.singular, dns1123Label(names.singular));
  if (!names.kind) e.required('spec.names.kind');
  else if (!/^[A-Za-z][A-Za-z0-9]*$/.test(names.kind)) e.invalid('spec.names.kind', names.kind, 'may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?');
  for (const [i, s] of (names.shortNames ?? []).entries()) e.check(`spec.names.shortNames[${i}]`, s, dns1123Label(s));
  if (names.plural && spec.group && crd.metadata.name !== `${names.plural}.${spec.group}`)
    e.invalid('metadata.name', crd.metadata.name, 'must be spec.names.plural+"."+spec.group');
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster') e.notSupported('spec.scope', spec.scope ?? '', ['Cluster', 'Namespaced']);
  if (spec.conversion && spec.conversion.strategy !== 'None')
    e.notSupported('spec.conversion.strategy', spec.conversion.strategy, ['None']);
  if (spec.preserveUnknownFields) e.invalid('spec.preserveUnknownFields', true, 'must be false in order to use defaults in the schema');
  const versions = Array.isArray(spec.versions) ? spec.versions : [];
  if (!versions.length) e.required('spec.versions', 'must have exactly one version marked as storage version');
  else if (versions.filter((v) => v.storage).length !== 1) e.invalid('spec.versions', versions.map((v) => v.name), 'must have exactly one version marked as storage version');
  const seen = new Set<string>();
  versions.forEach((v, i) => {
    const p = `spec.versions[${i}]`;
    if (!v.name) e.required(`${p}.name`);
    else {
      e.check(`${p}.name`, v.name, dns1123Label(v.name));
      if (seen.has(v.name)) e.duplicate(`${p}.name`, v.name);
      seen.add(v.name);
    }
    const schema = v.schema?.openAPIV3Schema;
    if (!schema) e.required(`${p}.schema.openAPIV3Schema`, 'schemas are required');
    else structural(e, schema, `${p}.schema.openAPIV3Schema`, true);
    (v.additionalPrinterColumns ?? []).forEach((c, j) => {
      const cp = `${p}.additionalPrinterColumns[${j}]`;
      if (!c.name) e.required(`${cp}.name`);
      if (!COLUMN_TYPES.includes(c.type)) e.notSupported(`${cp}.type`, c.type ?? '', COLUMN_TYPES);
      if (!c.jsonPath) e.required(`${cp}.JSONPath`);
      else
        try {
          parseJsonPath(c.jsonPath);
        } catch (err) {
          e.invalid(`${cp}.JSONPath`, c.jsonPath, (err as Error).message);
        }
    });
    (v.selectableFields ?? []).forEach((f, j) => {
      const fp = `${p}.selectableFields[${j}].jsonPath`;
      if (!f.jsonPath) e.required(fp);
      else
        try {
          parseJsonPath(f.jsonPath);
          if (/^\.metadata\./.test(f.jsonPath)) e.invalid(fp, f.jsonPath, 'must not select metadata fields');
        } catch (err) {
          e.invalid(fp, f.jsonPath, (err as Error).message);
        }
    });
    const scale = v.subresources?.scale;
    if (scale) {
      if (!scale.specReplicasPath?.startsWith('.spec.')) e.invalid(`${p}.subresources.scale.specReplicasPath`, scale.specReplicasPath, 'should be a json path under .spec');
      if (!scale.statusReplicasPath?.startsWith('.status.')) e.invalid(`${p}.subresources.scale.statusReplicasPath`, scale.statusReplicasPath, 'should be a json path under .status');
    }
  });
}
