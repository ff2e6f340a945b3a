// kube-proxy's change tracking (upstream ServiceChangeTracker and EndpointsChangeTracker, in one): Service
// and EndpointSlice events name the Services they touch, and an update recomputes the service ports of
// those Services alone, so a sync costs what changed rather than what exists.
import type { EndpointSlice, IndexFunc, KubeObject, Service, SharedInformer } from '@kemu/core';
import { type ServicePortInfo, servicePorts } from './service-ports.js';

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** EndpointSlices by the Service they belong to, as `namespace/name`. */
export const SLICE_SERVICE_INDEX = 'kube-proxy-slice-service';
export const sliceServiceIndexFunc: IndexFunc<KubeObject> = (o) => {
  const svc = o.metadata.labels?.[SERVICE_NAME_LABEL];
  return svc ? [`${o.metadata.namespace ?? 'default'}/${svc}`] : [];
};

export class ChangeTracker {
  /** Service ports by Service (`namespace/name`), as of the last update. */
  private readonly byService = new Map<string, ServicePortInfo[]>();
  /** Services named by events since the last update. */
  private pending = new Set<string>();
  private all = true;

  constructor(
    private readonly services: SharedInformer<'Service'>,
    private readonly slices: SharedInformer<'EndpointSlice'>,
  ) {
    slices.addIndexers({ [SLICE_SERVICE_INDEX]: sliceServiceIndexFunc });
    const svc = (s: Service) => this.pending.add(`${s.metadata.namespace ?? 'default'}/${s.metadata.name}`);
    const slice = (s: EndpointSlice) => {
      for (const k of sliceServiceIndexFunc(s)) this.pending.add(k);
    };
    services.addEventHandler({ onAdd: svc, onUpdate: (a, b) => (svc(a), svc(b)), onDelete: svc });
    slices.addEventHandler({ onAdd: slice, onUpdate: (a, b) => (slice(a), slice(b)), onDelete: slice });
  }

  /** Whether events arrived since the last update. */
  get dirty(): boolean {
    return this.all || this.pending.size > 0;
  }

  /** The next update recomputes every Service (after a failed sync, or for a full one). */
  invalidate(): void {
    this.all = true;
  }

  /**
   * Brings the service ports up to date from the informers' caches and returns the Services whose ports
   * may have changed (every one after invalidate()).
   */
  update(): { changed: Set<string>; all: boolean } {
    const all = this.all;
    let keys: Iterable<string>;
    if (all) {
      const now = new Set<string>(this.byService.keys());
      for (const s of this.services.indexer.list() as Service[]) now.add(`${s.metadata.namespace ?? 'default'}/${s.metadata.name}`);
      keys = now;
    } else keys = this.pending;
    this.all = false;
    this.pending = new Set();
    const changed = new Set<string>();
    for (const key of keys) {
      changed.add(key);
      const slash = key.indexOf('/');
      const svc = this.services.lister.get(key.slice(0, slash), key.slice(slash + 1)) as Service | undefined;
      if (!svc) {
        this.byService.delete(key);
        continue;
      }
      const ports = servicePorts([svc], this.slices.indexer.byIndex(SLICE_SERVICE_INDEX, key) as EndpointSlice[]);
      if (ports.length) this.byService.set(key, ports);
      else this.byService.delete(key);
    }
    return { changed, all };
  }

  /** The service ports of one Service (none for headless and ExternalName ones). */
  portsOf(key: string): ServicePortInfo[] {
    return this.byService.get(key) ?? [];
  }

  /** Every Service with service ports, and its ports. */
  entries(): IterableIterator<[string, ServicePortInfo[]]> {
    return this.byService.entries();
  }
}
