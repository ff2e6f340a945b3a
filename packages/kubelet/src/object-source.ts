// The objects a pod's env and volumes refer to, read from the store (the kubelet's ConfigMap, Secret and
// Service managers). A missing object is `undefined`; other errors propagate.
import { type ConfigMap, isNotFound, type KubeObject, lookupKind, type Secret, type Store } from '@kemu/core';
import type { EnvObjectSource } from './container-env.js';
import type { ServiceForEnv } from './service-env.js';

async function getOrUndefined<T>(get: () => Promise<T>): Promise<T | undefined> {
  try {
    return await get();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function storeObjectSource(store: Store, nodeName: string): EnvObjectSource {
  return {
    configMap: (ns, name) => getOrUndefined(() => store.get('ConfigMap', ns, name) as Promise<ConfigMap>),
    secret: (ns, name) => getOrUndefined(() => store.get('Secret', ns, name) as Promise<Secret>),
    async services(namespace) {
      // Services are served once the workload kinds are registered; before that there are none.
      if (!lookupKind('Service')) return [];
      // The API server's Service by a list narrowed to its name: where it does not exist (an emulated cluster
      // without it) a get would cost an error per container start.
      const [list, apiServer] = await Promise.all([
        store.list('Service', { namespace }),
        namespace === 'default' ? undefined : store.list('Service', { namespace: 'default', fieldSelector: 'metadata.name=kubernetes' }),
      ]);
      const items = list.items as KubeObject[] as ServiceForEnv[];
      return apiServer?.items.length ? [...items, ...(apiServer.items as KubeObject[] as ServiceForEnv[])] : items;
    },
    async nodeAllocatable() {
      const node = await getOrUndefined(() => store.get('Node', undefined, nodeName));
      return node?.status?.allocatable ?? node?.status?.capacity ?? {};
    },
  };
}
