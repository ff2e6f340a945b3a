// Index functions shared by the controllers' informers (one function object each, so informers shared
// between controllers accept the same index more than once).
import { type IndexFunc, type KubeObject, NAMESPACE_INDEX, namespaceIndexFunc, type SharedInformer } from '@kemu/core';

export const CONTROLLER_UID_INDEX = 'controller-uid';
export const controllerUidIndexFunc: IndexFunc<KubeObject> = (o) => {
  const r = o.metadata.ownerReferences?.find((x) => x.controller);
  return r ? [r.uid] : [];
};

/** Objects without a controller, by namespace: the adoption candidates (so a sync never scans its namespace). */
export const ORPHAN_INDEX = 'orphans-by-namespace';
export const orphanIndexFunc: IndexFunc<KubeObject> = (o) => (o.metadata.ownerReferences?.some((x) => x.controller) ? [] : [o.metadata.namespace ?? '']);

/** Add the namespace, controller-uid and orphan indexes to an informer. */
export function withOwnerIndexes<T extends SharedInformer<any, any>>(inf: T): T {
  inf.addIndexers({ [NAMESPACE_INDEX]: namespaceIndexFunc, [CONTROLLER_UID_INDEX]: controllerUidIndexFunc, [ORPHAN_INDEX]: orphanIndexFunc });
  return inf;
}

export { NAMESPACE_INDEX };
