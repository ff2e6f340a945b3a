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

/** Objects by each of their labels, as `namespace/key=value`: the pods an equality selector can match. */
export const LABEL_PAIR_INDEX = 'label-pairs';
export const labelPairIndexFunc: IndexFunc<KubeObject> = (o) => Object.entries(o.metadata.labels ?? {}).map(([k, v]) => `${o.metadata.namespace ?? ''}/${k}=${v}`);

/** Services by each pair of their (equality) selector, as `namespace/key=value`: the Services a pod's labels can select. */
export const SELECTOR_PAIR_INDEX = 'selector-pairs';
export const selectorPairIndexFunc: IndexFunc<KubeObject> = (o) =>
  Object.entries((o.spec?.selector as Record<string, string> | undefined) ?? {}).map(([k, v]) => `${o.metadata.namespace ?? ''}/${k}=${v}`);

/**
 * The objects of `namespace` a set-based equality selector (a Service's spec.selector) selects, read through
 * the label-pair index: only the objects carrying the selector's rarest pair are looked at, not the namespace.
 */
export function selectedByPairs<T extends KubeObject>(inf: SharedInformer<any, any>, namespace: string, selector: Record<string, string>): T[] {
  let best: string[] | undefined;
  for (const [k, v] of Object.entries(selector)) {
    const keys = inf.indexer.indexKeys(LABEL_PAIR_INDEX, `${namespace}/${k}=${v}`);
    if (!best || keys.length < best.length) best = keys;
    if (best.length === 0) return [];
  }
  const out: T[] = [];
  for (const key of best ?? []) {
    const o = inf.indexer.getByKey(key) as T | undefined;
    if (o && Object.entries(selector).every(([k, v]) => o.metadata.labels?.[k] === v)) out.push(o);
  }
  return out;
}
