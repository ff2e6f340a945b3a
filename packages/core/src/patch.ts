// Patch application: JSON merge patch (RFC 7386), strategic merge patch (list merge keys and strategies read
// from the kind schemas) and JSON patch (RFC 6902).
import { BadRequestError } from './errors.js';
import { elementType, type FieldSchema, jsonField, SCALAR_TYPES, typeOfObject } from './schema/index.js';
import type { PatchType } from './store.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);

/** RFC 7386: objects merge recursively, `null` deletes, everything else (lists too) replaces. */
export function mergePatch(target: unknown, patch: unknown): any {
  if (!isObject(patch)) return patch;
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function strategicList(field: FieldSchema | undefined, target: Json[] | undefined, patch: Json[], order: Json[] | undefined): Json[] {
  const strategy = field?.patchStrategy ?? '';
  if (!strategy.split(',').includes('merge')) return patch.filter((p) => !(isObject(p) && p.$patch === 'replace')).map(stripDirectives);
  const key = field?.patchMergeKey;
  if (!key) {
    // A list of primitives merged as a set (finalizers, podCIDRs).
    const out = [...(target ?? [])];
    for (const v of patch) if (!out.includes(v)) out.push(v);
    return out;
  }
  if (patch.some((p) => isObject(p) && p.$patch === 'replace')) {
    return patch.filter((p) => !(isObject(p) && p.$patch === 'replace')).map(stripDirectives);
  }
  const itemType = field ? elementType(field.type) : undefined;
  const out: Json[] = [...(target ?? [])];
  for (const p of patch) {
    if (!isObject(p)) throw new BadRequestError(`strategic merge patch: ${field?.name} items must be objects`);
    const k = p[key];
    if (k === undefined) throw new BadRequestError(`map: ${JSON.stringify(p)} does not contain declared merge key: ${key}`);
    const i = out.findIndex((t) => isObject(t) && t[key] === k);
    if (p.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
      continue;
    }
    if (i >= 0) out[i] = mergeObject(out[i], p, itemType);
    else out.push(mergeObject(undefined, p, itemType));
  }
  if (!order) return out;
  // `$setElementOrder/<field>` (sent by kubectl apply): listed items in that order, the rest after them.
  const rank = (v: Json) => {
    const i = order.findIndex((o) => isObject(o) && isObject(v) && o[key] === v[key]);
    return i < 0 ? order.length : i;
  };
  return out.map((v, i) => [v, i] as const).sort((a, b) => rank(a[0]) - rank(b[0]) || a[1] - b[1]).map(([v]) => v);
}

function stripDirectives(v: Json): Json {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const [k, x] of Object.entries(v)) {
    if (k.startsWith('$')) continue;
    if (x !== null) out[k] = stripDirectives(x);
  }
  return out;
}

/**
 * Strategic merge patch. List merge keys and strategies come from the kind's schema (found from `typeName`,
 * or the target's or patch's apiVersion and kind); without a schema every list is replaced, as in a merge patch.
 */
export function strategicMerge(target: unknown, patch: unknown, typeName?: string): any {
  if (!isObject(patch)) return patch;
  return mergeObject(target, patch, typeName ?? typeOfObject(target)?.name ?? typeOfObject(patch)?.name);
}

function mergeObject(target: unknown, patch: JsonObject, typeName: string | undefined): any {
  if (patch.$patch === 'replace') return stripDirectives(patch);
  if (patch.$patch === 'delete') return undefined;
  const mapOf = typeName?.startsWith('map[string]') ? elementType(typeName) : undefined;
  const fieldOf = (k: string): FieldSchema | undefined => {
    if (mapOf !== undefined) return { name: k, type: mapOf, proto: 0, description: '' };
    return typeName && !SCALAR_TYPES.has(typeName) ? jsonField(typeName, k) : undefined;
  };
  const out: JsonObject = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    const field = fieldOf(k);
    if (v === null) delete out[k];
    else if (Array.isArray(v)) {
      const order = patch[`$setElementOrder/${k}`];
      out[k] = strategicList(field, Array.isArray(out[k]) ? (out[k] as Json[]) : undefined, v, Array.isArray(order) ? order : undefined);
    } else if (isObject(v)) {
      const merged = mergeObject(out[k], v, field?.type);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = v;
  }
  if (Array.isArray(patch.$retainKeys)) {
    for (const k of Object.keys(out)) if (!(patch.$retainKeys as Json[]).includes(k)) delete out[k];
  }
  return out;
}

interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: Json;
}

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw new BadRequestError(`json patch: invalid path "${p}": must start with '/'`);
  return p
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function resolveParent(doc: Json, path: string[], opPath: string): [Json, string] {
  let cur = doc;
  for (const seg of path.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (isObject(cur)) cur = cur[seg];
    else cur = undefined as unknown as Json;
    if (cur === undefined) throw new BadRequestError(`json patch: path "${opPath}" does not exist`);
  }
  return [cur, path[path.length - 1]];
}

function getAt(doc: Json, path: string[], opPath: string): Json {
  if (path.length === 0) return doc;
  const [parent, last] = resolveParent(doc, path, opPath);
  const v = Array.isArray(parent) ? parent[Number(last)] : isObject(parent) ? parent[last] : undefined;
  if (v === undefined) throw new BadRequestError(`json patch: path "${opPath}" does not exist`);
  return v;
}

function arrayIndex(arr: Json[], seg: string, opPath: string, forAdd: boolean): number {
  if (forAdd && seg === '-') return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(seg)) throw new BadRequestError(`json patch: invalid array index "${seg}" in "${opPath}"`);
  const i = Number(seg);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new BadRequestError(`json patch: index out of range in "${opPath}"`);
  return i;
}

function removeAt(doc: Json, path: string[], opPath: string): Json {
  const [parent, last] = resolveParent(doc, path, opPath);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, last, opPath, false), 1)[0];
  if (isObject(parent) && last in parent) {
    const v = parent[last];
    delete parent[last];
    return v;
  }
  throw new BadRequestError(`json patch: path "${opPath}" does not exist`);
}

function addAt(doc: Json, path: string[], value: Json, opPath: string, replace: boolean): Json {
  if (path.length === 0) return value;
  const [parent, last] = resolveParent(doc, path, opPath);
  if (Array.isArray(parent)) {
    const i = arrayIndex(parent, last, opPath, !replace);
    if (replace) parent[i] = value;
    else parent.splice(i, 0, value);
  } else if (isObject(parent)) {
    if (replace && !(last in parent)) throw new BadRequestError(`json patch: path "${opPath}" does not exist`);
    parent[last] = value;
  } else throw new BadRequestError(`json patch: path "${opPath}" does not exist`);
  return doc;
}

/** RFC 6902 JSON patch; the document is copied, so a failing operation changes nothing. */
export function jsonPatch(target: unknown, ops: unknown): any {
  if (!Array.isArray(ops)) throw new BadRequestError('json patch: body must be an array of operations');
  let doc = JSON.parse(JSON.stringify(target)) as Json;
  for (const raw of ops as JsonPatchOp[]) {
    if (!isObject(raw as unknown) || typeof raw.path !== 'string') throw new BadRequestError('json patch: every operation needs "op" and "path"');
    const path = parsePointer(raw.path);
    switch (raw.op) {
      case 'add':
        doc = addAt(doc, path, structuredClone(raw.value ?? null), raw.path, false);
        break;
      case 'replace':
        doc = addAt(doc, path, structuredClone(raw.value ?? null), raw.path, true);
        break;
      case 'remove':
        removeAt(doc, path, raw.path);
        break;
      case 'move': {
        const v = removeAt(doc, parsePointer(raw.from ?? ''), raw.from ?? '');
        doc = addAt(doc, path, v, raw.path, false);
        break;
      }
      case 'copy': {
        const v = structuredClone(getAt(doc, parsePointer(raw.from ?? ''), raw.from ?? ''));
        doc = addAt(doc, path, v, raw.path, false);
        break;
      }
      case 'test':
        if (JSON.stringify(getAt(doc, path, raw.path)) !== JSON.stringify(raw.value)) {
          throw new BadRequestError(`json patch: test operation for path "${raw.path}" failed`);
        }
        break;
      default:
        throw new BadRequestError(`json patch: unknown operation "${String((raw as { op: unknown }).op)}"`);
    }
  }
  return doc;
}

export function normalizePatchType(t: PatchType | undefined): 'merge' | 'strategic' | 'json' {
  switch (t ?? 'merge') {
    case 'merge':
    case 'application/merge-patch+json':
      return 'merge';
    case 'strategic':
    case 'application/strategic-merge-patch+json':
      return 'strategic';
    case 'json':
    case 'application/json-patch+json':
      return 'json';
    default:
      throw new BadRequestError(`unsupported patch type "${String(t)}"; use merge, strategic or json`);
  }
}

/** Apply a patch of any supported type to a (copied) object. */
export function applyPatch(target: unknown, patch: unknown, type?: PatchType): any {
  const t = normalizePatchType(type);
  if (t === 'json') return jsonPatch(target, patch);
  if (!isObject(patch)) throw new BadRequestError(`${t} patch: body must be a JSON object`);
  return t === 'merge' ? mergePatch(target, patch) : strategicMerge(target, patch);
}
