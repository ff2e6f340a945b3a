// Field ownership (metadata.managedFields) as server-side apply tracks it: each manager's set of field paths
// in the FieldsV1 form (`f:<field>` for struct and map members, `k:{"name":"x"}` for an element of a list
// keyed by a merge key, `.` for the element itself), updated on every write: a manager's Update entry gains
// the fields it changed, and every other manager loses them.
import { type KubeObject, type ManagedFieldsEntry, rfc3339 } from '@kemu/core';

export type FieldPath = string[];
type Json = unknown;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Merge keys of keyed lists, by how their elements are identified (containers by name, ...). */
const LIST_KEYS = ['name', 'containerPort', 'mountPath', 'devicePath', 'type', 'ip', 'uid'];

/** The key of a keyed list's elements, or undefined for an atomic list. */
export function listKey(field: string, list: unknown[]): string | undefined {
  if (!list.length || !list.every(isObject)) return undefined;
  const preferred = field === 'ports' ? 'containerPort' : field === 'volumeMounts' ? 'mountPath' : field === 'conditions' ? 'type' : undefined;
  for (const k of preferred ? [preferred] : LIST_KEYS) {
    const vals = list.map((e) => (e as Record<string, unknown>)[k]);
    if (vals.every((v) => typeof v === 'string' || typeof v === 'number') && new Set(vals).size === vals.length) return k;
  }
  return undefined;
}

export function elementSegment(key: string, value: unknown): string {
  return `k:${JSON.stringify({ [key]: value })}`;
}

/** Fields no manager owns: identity and bookkeeping the server sets. */
const STRIPPED_META = new Set(['name', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'selfLink', 'managedFields', 'deletionTimestamp', 'deletionGracePeriodSeconds']);

/** The leaves of an object: each path with the value found there. */
export function leaves(obj: Json, subresource = ''): Map<string, { path: FieldPath; value: Json }> {
  const out = new Map<string, { path: FieldPath; value: Json }>();
  const walk = (v: Json, path: FieldPath, field: string) => {
    if (isObject(v) && Object.keys(v).length && !(path.length === 0 && false)) {
      for (const [k, child] of Object.entries(v)) {
        if (path.length === 0 && (k === 'apiVersion' || k === 'kind')) continue;
        if (path.length === 1 && path[0] === 'f:metadata' && STRIPPED_META.has(k)) continue;
        walk(child, [...path, `f:${k}`], k);
      }
      return;
    }
    if (Array.isArray(v)) {
      const key = listKey(field, v);
      if (key) {
        for (const el of v as Record<string, unknown>[]) {
          const seg = elementSegment(key, el[key]);
          for (const [k, child] of Object.entries(el)) walk(child, [...path, seg, `f:${k}`], k);
          out.set([...path, seg, '.'].join('\u0000'), { path: [...path, seg, '.'], value: true });
        }
        return;
      }
    }
    if (path.length) out.set(path.join('\u0000'), { path, value: v });
  };
  walk(obj, [], '');
  // The main resource and the status subresource own disjoint parts.
  if (subresource === 'status') {
    for (const k of [...out.keys()]) if (!k.startsWith('f:status')) out.delete(k);
  } else if (subresource === '') {
    for (const k of [...out.keys()]) if (k.startsWith('f:status')) out.delete(k);
  }
  return out;
}

/** Path keys to the FieldsV1 object form. */
export function toFieldsV1(keys: Iterable<string>): Record<string, unknown> {
  const root: Record<string, any> = {};
  for (const key of keys) {
    let node = root;
    for (const seg of key.split('\u0000')) node = node[seg] ??= {};
  }
  return root;
}

/** FieldsV1 back to path keys (leaves and `.` markers). */
export function fromFieldsV1(fields: unknown): Set<string> {
  const out = new Set<string>();
  const walk = (node: unknown, path: string[]) => {
    if (!isObject(node)) return;
    const entries = Object.entries(node);
    if (!entries.length && path.length) out.add(path.join('\u0000'));
    for (const [k, v] of entries) walk(v, [...path, k]);
  };
  walk(fields, []);
  return out;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export interface Ownership {
  entry: ManagedFieldsEntry & { fieldsType?: string; fieldsV1?: unknown; subresource?: string };
  fields: Set<string>;
}

export function ownershipOf(obj: KubeObject | undefined): Ownership[] {
  return (obj?.metadata?.managedFields ?? []).map((e) => ({ entry: { ...e }, fields: fromFieldsV1((e as { fieldsV1?: unknown }).fieldsV1) }));
}

export function writeOwnership(obj: KubeObject, owners: Ownership[]): void {
  const entries = owners
    .filter((o) => o.fields.size > 0)
    .map((o) => ({ ...o.entry, fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(o.fields) }));
  if (entries.length) obj.metadata.managedFields = entries;
  else delete obj.metadata.managedFields;
}

/** The FieldsV1 of every field `obj` sets, built in one walk (what a first write's manager owns). */
export function fieldsOf(obj: KubeObject, subresource = ''): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  const o = obj as unknown as Record<string, unknown>;
  for (const k in o) {
    const v = o[k];
    if (v === undefined || k === 'apiVersion' || k === 'kind') continue;
    // The main resource and the status subresource own disjoint parts.
    if (subresource === 'status' ? !k.startsWith('status') : subresource === '' && k.startsWith('status')) continue;
    if (k === 'metadata' && isObject(v) && hasKeys(v)) {
      const meta: Record<string, unknown> = {};
      for (const mk in v) if (v[mk] !== undefined && !STRIPPED_META.has(mk)) addField(meta, mk, v[mk]);
      if (hasKeys(meta)) root['f:metadata'] = meta;
      continue;
    }
    addField(root, k, v);
  }
  return root;
}

function hasKeys(o: object): boolean {
  for (const _ in o) return true;
  return false;
}

/** Adds field `k` with value `v` under `node`, as `leaves` followed by `toFieldsV1` would. */
function addField(node: Record<string, unknown>, k: string, v: Json): void {
  const seg = `f:${k}`;
  if (isObject(v) && hasKeys(v)) {
    const child: Record<string, unknown> = {};
    for (const ck in v) if (v[ck] !== undefined) addField(child, ck, v[ck]);
    if (hasKeys(child)) node[seg] = child;
    return;
  }
  if (Array.isArray(v)) {
    const key = listKey(k, v);
    if (key) {
      const child: Record<string, unknown> = {};
      for (const el of v as Record<string, unknown>[]) {
        const item: Record<string, unknown> = {};
        for (const ek in el) if (el[ek] !== undefined) addField(item, ek, el[ek]);
        item['.'] = {};
        child[elementSegment(key, el[key])] = item;
      }
      node[seg] = child;
      return;
    }
  }
  node[seg] = {};
}

/**
 * Records an Update by `manager` on `obj` (compared with `old`): the manager's Update entry gains every
 * leaf whose value it set or changed; other managers lose those leaves; leaves that disappeared are dropped.
 */
export function recordManagedFields(
  obj: KubeObject,
  old: KubeObject | undefined,
  manager: string,
  operation: 'Update' | 'Apply',
  apiVersion: string,
  subresource = '',
): void {
  const now = rfc3339();
  if (!old) {
    // A first write: the manager owns every field it set (the walk below gives the same, at more cost).
    const fieldsV1 = fieldsOf(obj, subresource);
    if (!hasKeys(fieldsV1)) {
      delete obj.metadata.managedFields;
      return;
    }
    // (Built member by member: a spread in the literal costs more than the rest of this branch.)
    const entry: ManagedFieldsEntry & { subresource?: string; fieldsType?: string; fieldsV1?: unknown } = { manager, operation, apiVersion, time: now };
    if (subresource) entry.subresource = subresource;
    entry.fieldsType = 'FieldsV1';
    entry.fieldsV1 = fieldsV1;
    obj.metadata.managedFields = [entry];
    return;
  }
  const before = old ? leaves(old, subresource) : new Map();
  const after = leaves(obj, subresource);
  const changed = new Set<string>();
  for (const [k, v] of after) if (!before.has(k) || !sameJson(before.get(k)!.value, v.value)) changed.add(k);
  const owners = old ? ownershipOf(old) : [];
  const gone = [...before.keys()].filter((k) => !after.has(k));
  if (!changed.size && !gone.length) {
    writeOwnership(obj, owners);
    return;
  }
  for (const o of owners) {
    for (const k of gone) o.fields.delete(k);
    if (o.entry.manager === manager && o.entry.operation === operation && (o.entry.subresource ?? '') === subresource) continue;
    for (const k of changed) o.fields.delete(k);
  }
  let mine = owners.find((o) => o.entry.manager === manager && o.entry.operation === operation && (o.entry.subresource ?? '') === subresource);
  if (!mine) {
    mine = { entry: { manager, operation, apiVersion, time: now, ...(subresource ? { subresource } : {}) }, fields: new Set() };
    owners.push(mine);
  }
  mine.entry.time = now;
  mine.entry.apiVersion = apiVersion;
  for (const k of changed) mine.fields.add(k);
  writeOwnership(obj, owners);
}
