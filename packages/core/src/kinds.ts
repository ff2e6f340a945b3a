// The kind registry: API group/version, plural resource, scope, status subresource and the fields a field
// selector may use, per kind. `registerKind` is the extension point for kinds defined elsewhere.
import type {
  ConfigMap,
  Event,
  Namespace,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
} from './api-core.js';
import type { KubeObject } from './api-meta.js';
import type { BlockAffinity, IPAMBlock, IPPool, Lease, PriorityClass } from './api-misc.js';
import type { CSIDriver, CSINode, StorageClass, VolumeAttachment } from './api-storage.js';
import { BadRequestError } from './errors.js';

/** Built-in kinds and their TypeScript types. */
export interface KindMap {
  Pod: Pod;
  Node: Node;
  Namespace: Namespace;
  ConfigMap: ConfigMap;
  Event: Event;
  PersistentVolume: PersistentVolume;
  PersistentVolumeClaim: PersistentVolumeClaim;
  StorageClass: StorageClass;
  VolumeAttachment: VolumeAttachment;
  CSIDriver: CSIDriver;
  CSINode: CSINode;
  PriorityClass: PriorityClass;
  Lease: Lease;
  IPPool: IPPool;
  IPAMBlock: IPAMBlock;
  BlockAffinity: BlockAffinity;
}

export type BuiltinKind = keyof KindMap;
/** The object type for a kind name: the built-in type, or KubeObject for registered kinds. */
export type ObjectOf<K extends string> = K extends BuiltinKind ? KindMap[K] : KubeObject;

export type FieldGetter = (obj: any) => string;

export interface KindInfo {
  kind: string;
  /** `v1` or `group/version`. */
  apiVersion: string;
  group: string;
  version: string;
  /** Lower-case plural resource name, e.g. `pods`. */
  resource: string;
  namespaced: boolean;
  /** Whether `status` is a subresource (ignored by update, written by updateStatus). */
  hasStatus: boolean;
  /** Field selector keys beyond metadata.name/metadata.namespace. */
  fields: Record<string, FieldGetter>;
}

const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

const registry = new Map<string, KindInfo>();
const byResource = new Map<string, KindInfo>();

export function registerKind(info: Omit<KindInfo, 'group' | 'version' | 'fields'> & Partial<KindInfo>): KindInfo {
  const slash = info.apiVersion.indexOf('/');
  const full: KindInfo = {
    group: slash < 0 ? '' : info.apiVersion.slice(0, slash),
    version: slash < 0 ? info.apiVersion : info.apiVersion.slice(slash + 1),
    fields: {},
    ...info,
  };
  registry.set(full.kind, full);
  byResource.set(full.resource, full);
  return full;
}

function builtin(
  kind: BuiltinKind | 'Binding',
  apiVersion: string,
  resource: string,
  namespaced: boolean,
  hasStatus: boolean,
  fields: Record<string, FieldGetter> = {},
): void {
  registerKind({ kind, apiVersion, resource, namespaced, hasStatus, fields });
}

builtin('Pod', 'v1', 'pods', true, true, {
  'spec.nodeName': (o: Pod) => str(o.spec?.nodeName),
  'spec.restartPolicy': (o: Pod) => str(o.spec?.restartPolicy),
  'spec.schedulerName': (o: Pod) => str(o.spec?.schedulerName),
  'spec.serviceAccountName': (o: Pod) => str(o.spec?.serviceAccountName),
  'spec.hostNetwork': (o: Pod) => String(o.spec?.hostNetwork === true),
  'status.phase': (o: Pod) => str(o.status?.phase),
  'status.podIP': (o: Pod) => str(o.status?.podIP),
  'status.nominatedNodeName': (o: Pod) => str(o.status?.nominatedNodeName),
});
builtin('Node', 'v1', 'nodes', false, true, {
  'spec.unschedulable': (o: Node) => String(o.spec?.unschedulable === true),
});
builtin('Namespace', 'v1', 'namespaces', false, true, {
  'status.phase': (o: Namespace) => str(o.status?.phase),
});
builtin('ConfigMap', 'v1', 'configmaps', true, false);
builtin('Event', 'v1', 'events', true, false, {
  'involvedObject.kind': (o: Event) => str(o.involvedObject?.kind),
  'involvedObject.namespace': (o: Event) => str(o.involvedObject?.namespace),
  'involvedObject.name': (o: Event) => str(o.involvedObject?.name),
  'involvedObject.uid': (o: Event) => str(o.involvedObject?.uid),
  'involvedObject.apiVersion': (o: Event) => str(o.involvedObject?.apiVersion),
  'involvedObject.resourceVersion': (o: Event) => str(o.involvedObject?.resourceVersion),
  'involvedObject.fieldPath': (o: Event) => str(o.involvedObject?.fieldPath),
  reason: (o: Event) => str(o.reason),
  reportingComponent: (o: Event) => str(o.reportingComponent),
  source: (o: Event) => str(o.source?.component),
  type: (o: Event) => str(o.type),
});
builtin('PersistentVolume', 'v1', 'persistentvolumes', false, true);
builtin('PersistentVolumeClaim', 'v1', 'persistentvolumeclaims', true, true);
builtin('Binding', 'v1', 'bindings', true, false);
builtin('StorageClass', 'storage.k8s.io/v1', 'storageclasses', false, false);
builtin('VolumeAttachment', 'storage.k8s.io/v1', 'volumeattachments', false, true);
builtin('CSIDriver', 'storage.k8s.io/v1', 'csidrivers', false, false);
builtin('CSINode', 'storage.k8s.io/v1', 'csinodes', false, false);
builtin('PriorityClass', 'scheduling.k8s.io/v1', 'priorityclasses', false, false);
builtin('Lease', 'coordination.k8s.io/v1', 'leases', true, false);
builtin('IPPool', 'crd.projectcalico.org/v1', 'ippools', false, false);
builtin('IPAMBlock', 'crd.projectcalico.org/v1', 'ipamblocks', false, false);
builtin('BlockAffinity', 'crd.projectcalico.org/v1', 'blockaffinities', false, false);

/** Remove a kind registered at runtime (a CustomResourceDefinition's kind when the CRD is deleted). */
export function unregisterKind(kind: string): void {
  const k = registry.get(kind);
  if (!k) return;
  registry.delete(kind);
  if (byResource.get(k.resource) === k) byResource.delete(k.resource);
}

/** Registry entry for a kind, or undefined when unknown. */
export function lookupKind(kind: string): KindInfo | undefined {
  return registry.get(kind);
}

/** Registry entry for a kind; BadRequest when unknown. */
export function kindInfo(kind: string): KindInfo {
  const k = registry.get(kind);
  if (!k) throw new BadRequestError(`no kind "${kind}" is registered`);
  return k;
}

/** Registry entry by plural resource name (`pods`). */
export function kindForResource(resource: string): KindInfo | undefined {
  return byResource.get(resource);
}

/** All registered kinds that the store persists (everything but virtual subresource bodies). */
export function storedKinds(): KindInfo[] {
  return [...registry.values()].filter((k) => k.kind !== 'Binding');
}

/** Field getter for a field selector key on a kind; BadRequest for unsupported fields (as the API server). */
export function fieldGetter(info: KindInfo, field: string): FieldGetter {
  if (field === 'metadata.name') return (o) => str(o.metadata?.name);
  if (field === 'metadata.namespace' && info.namespaced) return (o) => str(o.metadata?.namespace);
  const g = info.fields[field];
  if (!g) {
    throw new BadRequestError(
      `field label not supported: ${field}` + ` (kind ${info.kind} supports ${['metadata.name', ...(info.namespaced ? ['metadata.namespace'] : []), ...Object.keys(info.fields)].join(', ')})`,
    );
  }
  return g;
}
