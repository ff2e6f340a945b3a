// Informers the in-process nodes' agents share. Every node's policy agent watches every Pod, as each node's
// agent does upstream; in one process a cache per node only multiplies the same objects (5,000 nodes made
// 5,000 copies of every Pod event), so the nodes of one store share one set, started with the first node
// and stopped with the last.
import { InformerFactory, type Store } from '@kemu/core';

const shared = new WeakMap<Store, { factory: InformerFactory; users: number }>();

export function acquireNodeInformers(store: Store): { factory: InformerFactory; release(): Promise<void> } {
  let s = shared.get(store);
  if (!s) {
    s = { factory: new InformerFactory(store), users: 0 };
    shared.set(store, s);
  }
  s.users++;
  const held = s;
  let released = false;
  return {
    factory: held.factory,
    release: async () => {
      if (released) return;
      released = true;
      if (--held.users > 0) return;
      if (shared.get(store) === held) shared.delete(store);
      await held.factory.stop();
    },
  };
}
