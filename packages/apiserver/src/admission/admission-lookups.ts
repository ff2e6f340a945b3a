// What the built-in admission plugins read besides the request: namespaces, ServiceAccounts, LimitRanges,
// PriorityClasses and StorageClasses. `storeLookups` reads the store on every call; `InformerAdmissionLookups`
// reads informer caches, as kube-apiserver's plugins read their listers, and falls back to a live read
// where upstream's do, so an object created just before the request is not missed while its watch event is
// still on the way: a namespace or ServiceAccount not in the cache, and a namespace with no LimitRange cached.
import { isNotFound, type KubeObject, SharedInformer, type Store } from '@kemu/core';

export interface AdmissionLookups {
  /** A namespace, or undefined when it does not exist. */
  namespace(name: string): Promise<KubeObject | undefined>;
  serviceAccount(namespace: string, name: string): Promise<KubeObject | undefined>;
  limitRanges(namespace: string): Promise<KubeObject[]>;
  priorityClass(name: string): Promise<KubeObject | undefined>;
  priorityClasses(): Promise<KubeObject[]>;
  storageClasses(): Promise<KubeObject[]>;
}

async function getOrUndefined(store: Store, kind: string, namespace: string, name: string): Promise<KubeObject | undefined> {
  try {
    return await store.get(kind, namespace, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Reads straight from the store. */
export function storeLookups(store: Store): AdmissionLookups {
  return {
    namespace: (name) => getOrUndefined(store, 'Namespace', '', name),
    serviceAccount: (namespace, name) => getOrUndefined(store, 'ServiceAccount', namespace, name),
    limitRanges: async (namespace) => (await store.list('LimitRange', { namespace })).items,
    priorityClass: (name) => getOrUndefined(store, 'PriorityClass', '', name),
    priorityClasses: async () => (await store.list('PriorityClass')).items,
    storageClasses: async () => (await store.list('StorageClass')).items,
  };
}

/** Reads informer caches (objects shared with the cache: callers must not change them). */
export class InformerAdmissionLookups implements AdmissionLookups {
  private readonly live: AdmissionLookups;
  private readonly namespaces: SharedInformer;
  private readonly serviceAccounts: SharedInformer;
  private readonly limits: SharedInformer;
  private readonly priorities: SharedInformer;
  private readonly storage: SharedInformer;

  constructor(store: Store) {
    this.live = storeLookups(store);
    this.namespaces = new SharedInformer(store, 'Namespace');
    this.serviceAccounts = new SharedInformer(store, 'ServiceAccount');
    this.limits = new SharedInformer(store, 'LimitRange');
    this.priorities = new SharedInformer(store, 'PriorityClass');
    this.storage = new SharedInformer(store, 'StorageClass');
  }

  private get all(): SharedInformer[] {
    return [this.namespaces, this.serviceAccounts, this.limits, this.priorities, this.storage];
  }

  async start(): Promise<void> {
    for (const i of this.all) i.start();
    await Promise.all(this.all.map((i) => i.waitForSync()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.all.map((i) => i.stop()));
  }

  async namespace(name: string): Promise<KubeObject | undefined> {
    return this.namespaces.lister.get(undefined, name) ?? this.live.namespace(name);
  }

  async serviceAccount(namespace: string, name: string): Promise<KubeObject | undefined> {
    return this.serviceAccounts.lister.get(namespace, name) ?? this.live.serviceAccount(namespace, name);
  }

  async limitRanges(namespace: string): Promise<KubeObject[]> {
    const cached = this.limits.lister.namespace(namespace).list();
    return cached.length ? cached : this.live.limitRanges(namespace);
  }

  async priorityClass(name: string): Promise<KubeObject | undefined> {
    return this.priorities.lister.get(undefined, name) ?? this.live.priorityClass(name);
  }

  async priorityClasses(): Promise<KubeObject[]> {
    return this.priorities.lister.list();
  }

  async storageClasses(): Promise<KubeObject[]> {
    return this.storage.lister.list();
  }
}
