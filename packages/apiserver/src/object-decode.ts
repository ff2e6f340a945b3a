// Turning a decoded request body into the object a handler writes: apiVersion and kind filled from the URL
// when absent (the official Python client leaves them out), refused when they name another kind, the
// namespace checked against the URL's, and the fields every object shares type-checked so a wrong JSON
// type is a 400 naming the field (as Go's decoder reports it) instead of a failure deeper down.
import { BadRequestError, type KindInfo, type KubeObject } from '@kemu/core';

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'bool' : typeof v;
}

const META_STRINGS = ['name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'selfLink'];

function cannotUnmarshal(info: KindInfo, v: unknown, goField: string, goType: string): BadRequestError {
  return new BadRequestError(
    `${info.kind} in version "${info.version}" cannot be handled as a ${info.kind}: json: cannot unmarshal ${jsonType(v)} into Go struct field ${goField} of type ${goType}`,
  );
}

function checkStringMap(info: KindInfo, v: unknown, goField: string) {
  if (v === undefined || v === null) return;
  if (!isObject(v)) throw cannotUnmarshal(info, v, goField, 'map[string]string');
  for (const x of Object.values(v)) if (typeof x !== 'string') throw cannotUnmarshal(info, x, goField, 'string');
}

/** Type checks of ObjectMeta and the top-level sections every kind shares. */
export function checkCommonShape(info: KindInfo, obj: Record<string, unknown>): void {
  const m = obj.metadata;
  if (m !== undefined && m !== null) {
    if (!isObject(m)) throw cannotUnmarshal(info, m, `${info.kind}.metadata`, 'v1.ObjectMeta');
    for (const k of META_STRINGS)
      if (m[k] !== undefined && m[k] !== null && typeof m[k] !== 'string') throw cannotUnmarshal(info, m[k], `ObjectMeta.metadata.${k}`, 'string');
    checkStringMap(info, m.labels, 'ObjectMeta.metadata.labels');
    checkStringMap(info, m.annotations, 'ObjectMeta.metadata.annotations');
    if (m.finalizers !== undefined && m.finalizers !== null) {
      if (!Array.isArray(m.finalizers)) throw cannotUnmarshal(info, m.finalizers, 'ObjectMeta.metadata.finalizers', '[]string');
      for (const f of m.finalizers) if (typeof f !== 'string') throw cannotUnmarshal(info, f, 'ObjectMeta.metadata.finalizers', 'string');
    }
    for (const k of ['ownerReferences', 'managedFields'] as const) {
      const list = m[k];
      if (list === undefined || list === null) continue;
      if (!Array.isArray(list) || list.some((x) => !isObject(x)))
        throw cannotUnmarshal(info, list, `ObjectMeta.metadata.${k}`, k === 'ownerReferences' ? '[]v1.OwnerReference' : '[]v1.ManagedFieldsEntry');
    }
    if (m.generation !== undefined && m.generation !== null && !Number.isInteger(m.generation))
      throw cannotUnmarshal(info, m.generation, 'ObjectMeta.metadata.generation', 'int64');
  }
  for (const section of ['spec', 'status'] as const) {
    const v = obj[section];
    if (v !== undefined && v !== null && !isObject(v)) throw cannotUnmarshal(info, v, `${info.kind}.${section}`, `v1.${info.kind}${section === 'spec' ? 'Spec' : 'Status'}`);
  }
  if (info.kind === 'ConfigMap') checkStringMap(info, obj.data, 'ConfigMap.data');
  if (info.kind === 'Secret') {
    checkStringMap(info, obj.data, 'Secret.data');
    checkStringMap(info, obj.stringData, 'Secret.stringData');
  }
}

/**
 * The body of a create/update as the object to write for `info` at the URL's namespace (and name, for PUT).
 * The decoded body is the request's own, so it becomes that object in place (members keep their order;
 * apiVersion, kind and metadata are added at the end when absent).
 */
export function objectFromBody(info: KindInfo, body: unknown, urlNamespace: string, urlName?: string): KubeObject {
  if (!isObject(body)) throw new BadRequestError(`the request body must be a Kubernetes object (a JSON object), not ${jsonType(body)}`);
  const obj = body as Record<string, unknown>;
  if (obj.apiVersion !== undefined && typeof obj.apiVersion !== 'string') throw cannotUnmarshal(info, obj.apiVersion, 'TypeMeta.apiVersion', 'string');
  if (obj.kind !== undefined && typeof obj.kind !== 'string') throw cannotUnmarshal(info, obj.kind, 'TypeMeta.kind', 'string');
  if (obj.apiVersion && obj.apiVersion !== info.apiVersion)
    throw new BadRequestError(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${info.apiVersion})`);
  if (obj.kind && obj.kind !== info.kind) throw new BadRequestError(`the kind in the data (${obj.kind}) does not match the expected kind (${info.kind})`);
  checkCommonShape(info, obj);
  obj.apiVersion = info.apiVersion;
  obj.kind = info.kind;
  if (!isObject(obj.metadata)) obj.metadata = {};
  const out = obj as unknown as KubeObject;
  if (info.namespaced) {
    const ns = out.metadata.namespace;
    if (ns && urlNamespace && ns !== urlNamespace)
      throw new BadRequestError('the namespace of the provided object does not match the namespace sent on the request');
    if (urlNamespace) out.metadata.namespace = urlNamespace;
  }
  // A namespace on a cluster-scoped object is left for validation to refuse (Invalid), not dropped.
  if (urlName !== undefined) {
    if (!out.metadata.name) out.metadata.name = urlName;
    if (out.metadata.name !== urlName)
      throw new BadRequestError(`the name of the object (${out.metadata.name}) does not match the name on the URL (${urlName})`);
  }
  return out;
}
