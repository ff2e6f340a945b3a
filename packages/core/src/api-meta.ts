// Object metadata shared by every kind, with the field names of the Kubernetes JSON API.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: string;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
}

export interface TypeMeta {
  apiVersion: string;
  kind: string;
}

/** Any API object: what the store handles generically. */
export interface KubeObject extends TypeMeta {
  metadata: ObjectMeta;
  // Kinds add spec/status/data fields of their own.
  [field: string]: any;
}

export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion: string;
  kind: string;
  metadata: ListMeta;
  items: T[];
}

export type LabelSelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface LabelSelectorRequirement {
  key: string;
  operator: LabelSelectorOperator;
  values?: string[];
}

/** Structured selector (`matchLabels` + `matchExpressions`), ANDed. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime?: string;
  lastProbeTime?: string;
  lastHeartbeatTime?: string;
  reason?: string;
  message?: string;
}

/** Options for deletion (`metav1.DeleteOptions`). */
export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  dryRun?: boolean;
}

/** RFC 3339 timestamp with second precision, as Kubernetes serialises `metav1.Time`. */
export function rfc3339(d?: Date): string {
  const ms = d ? d.getTime() : Date.now();
  const sec = Math.floor(ms / 1000);
  // Many objects are stamped within one second: format each second once.
  if (sec !== lastSec) {
    lastSec = sec;
    lastStamp = `${new Date(sec * 1000).toISOString().slice(0, 19)}Z`;
  }
  return lastStamp;
}
let lastSec = -1;
let lastStamp = '';

/** RFC 3339 with microseconds, as Kubernetes serialises `metav1.MicroTime` (Lease times, Events). */
export function microTime(d: Date = new Date()): string {
  return `${d.toISOString().slice(0, 23)}000Z`;
}

/** `namespace/name` for namespaced objects, `name` otherwise (client-go's MetaNamespaceKeyFunc). */
export function objectKey(obj: { metadata: ObjectMeta }): string {
  const m = obj.metadata;
  return m.namespace ? `${m.namespace}/${m.name}` : (m.name ?? '');
}

/** Inverse of objectKey. */
export function splitObjectKey(key: string): { namespace: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** A deep, mutable copy of an API object (objects from watches and informer caches are frozen). */
export function deepCopy<T>(obj: T): T {
  return obj === undefined ? obj : (JSON.parse(JSON.stringify(obj)) as T);
}

/** The controller owner reference of an object, if any. */
export function controllerOf(obj: { metadata: ObjectMeta }): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}
