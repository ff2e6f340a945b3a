// A store that sends the calls on some kinds to another store: one kemu controller can do the work of two
// upstream ones (the EndpointSlice controller also keeps Endpoints, upstream's endpoint controller), and
// each half then acts under its own upstream identity.
import type { Store } from '@kemu/core';

export function storeByKind(base: Store, byKind: Record<string, Store>): Store {
  const to = (kind: string) => byKind[kind] ?? base;
  return {
    create: (obj, o) => to(obj.kind).create(obj, o),
    get: (kind, ns, name) => to(kind).get(kind, ns, name),
    list: (kind, o) => to(kind).list(kind, o),
    update: (obj, o) => to(obj.kind).update(obj, o),
    updateStatus: (obj, o) => to(obj.kind).updateStatus(obj, o),
    patch: (kind, ns, name, p, type, o) => to(kind).patch(kind, ns, name, p, type, o),
    delete: (kind, ns, name, o) => to(kind).delete(kind, ns, name, o),
    watch: (kind, o) => to(kind).watch(kind, o),
    bind: (b, o) => to('Pod').bind(b, o),
    resourceVersion: () => base.resourceVersion(),
    close: () => base.close(),
  };
}
