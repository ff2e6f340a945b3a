// The ResourceQuota controller: status.hard mirrors spec.hard and status.used counts what the namespace
// holds of each tracked resource (pods, services and their node ports and load balancers, claims and their
// storage, configmaps, secrets, `count/<resource>.<group>`, and the pods' cpu/memory requests and limits).
// Enforcement on create is admission's job; this keeps the usage it compares against.
import {
  Controller,
  deepCopy,
  isNotFound,
  kindForResource,
  type KubeObject,
  NAMESPACE_INDEX,
  namespaceIndexFunc,
  type Pod,
  parseQuantity,
  type Quantity,
  type ResourceQuota,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { isPodTerminal } from './pod-util.js';

const COMPONENT = 'resourcequota-controller';
const TRACKED = ['Pod', 'Service', 'PersistentVolumeClaim', 'ConfigMap', 'Secret', 'ReplicationController', 'ResourceQuota', 'Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'];
const SIMPLE: Record<string, string> = {
  pods: 'Pod',
  services: 'Service',
  persistentvolumeclaims: 'PersistentVolumeClaim',
  configmaps: 'ConfigMap',
  secrets: 'Secret',
  replicationcontrollers: 'ReplicationController',
  resourcequotas: 'ResourceQuota',
};

/** Sum quantities keeping the format of the first one (so 1Gi + 512Mi reads 1536Mi, as upstream prints it). */
function sum(values: (string | Quantity | undefined)[]): Quantity {
  let q: Quantity | undefined;
  for (const v of values) if (v !== undefined) q = q ? q.add(v) : typeof v === 'string' ? parseQuantity(v) : v;
  return q ?? parseQuantity('0');
}

function sumPods(pods: Pod[], which: 'requests' | 'limits', res: string): Quantity {
  return sum(
    pods.map((p) => {
      // A pod's effective value: the larger of the sum of its containers and its largest init container.
      const values = (p.spec.containers ?? []).map((c) => c.resources?.[which]?.[res]);
      if (values.every((v) => v === undefined) && !(p.spec.initContainers ?? []).some((c) => c.resources?.[which]?.[res])) return undefined;
      let app = sum(values);
      for (const c of p.spec.initContainers ?? []) {
        const v = c.resources?.[which]?.[res];
        if (v !== undefined && parseQuantity(v).cmp(app) > 0) app = parseQuantity(v);
      }
      return app;
    }),
  );
}

export class ResourceQuotaController {
  readonly controller: Controller;
  private readonly quotas: SharedInformer<'ResourceQuota'>;
  private readonly informers = new Map<string, SharedInformer<string, KubeObject>>();

  constructor(private readonly ctx: ControllerContext) {
    this.quotas = ctx.informers.informer('ResourceQuota');
    this.quotas.addIndexers({ [NAMESPACE_INDEX]: namespaceIndexFunc });
    for (const k of TRACKED) {
      const inf = k === 'ResourceQuota' ? (this.quotas as unknown as SharedInformer<string, KubeObject>) : ctx.informers.informer(k);
      this.informers.set(k, inf);
    }
    this.controller = new Controller({
      name: COMPONENT,
      workers: 2,
      informers: [...new Set(this.informers.values())],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.quotas.addEventHandler(this.controller.handler());
    const changed = (o: KubeObject) => {
      for (const q of this.quotas.indexer.byIndex(NAMESPACE_INDEX, o.metadata.namespace ?? '')) this.controller.enqueue(q);
    };
    for (const [k, inf] of this.informers) {
      if (k === 'ResourceQuota') continue;
      inf.addEventHandler({ onAdd: changed, onUpdate: (_a, b) => changed(b), onDelete: changed });
    }
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private list(kind: string, ns: string): KubeObject[] {
    return (this.informers.get(kind)?.indexer.list() ?? []).filter((o) => o.metadata.namespace === ns);
  }

  /** Usage of one quota resource name in a namespace, or undefined when it is not one this controller counts. */
  usage(resource: string, ns: string): Quantity | undefined {
    const pods = () => (this.list('Pod', ns) as Pod[]).filter((p) => !isPodTerminal(p));
    const count = (n: number) => parseQuantity(String(n));
    if (resource in SIMPLE) return count(resource === 'pods' ? pods().length : this.list(SIMPLE[resource], ns).length);
    if (resource === 'services.nodeports') return count(this.list('Service', ns).reduce((n, s) => n + (s.spec?.type === 'NodePort' || s.spec?.type === 'LoadBalancer' ? (s.spec.ports ?? []).length : 0), 0));
    if (resource === 'services.loadbalancers') return count(this.list('Service', ns).filter((s) => s.spec?.type === 'LoadBalancer').length);
    if (resource === 'requests.storage') return sum(this.list('PersistentVolumeClaim', ns).map((c) => c.spec?.resources?.requests?.storage));
    const m = /^(requests|limits)\.(cpu|memory|ephemeral-storage)$/.exec(resource) ?? (/^(cpu|memory)$/.test(resource) ? ['', 'requests', resource] : null);
    if (m) return sumPods(pods(), m[1] as 'requests' | 'limits', m[2]);
    const c = /^count\/([^.]+)(?:\.(.+))?$/.exec(resource);
    if (c) {
      const info = kindForResource(c[1]);
      if (info && info.group === (c[2] ?? '') && this.informers.has(info.kind)) return count(this.list(info.kind, ns).length);
    }
    return undefined;
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.quotas.lister.get(ns, name) as ResourceQuota | undefined;
    if (!cached || cached.metadata.deletionTimestamp) return undefined;
    const hard = { ...(cached.spec?.hard ?? {}) };
    const used: Record<string, string> = {};
    for (const res of Object.keys(hard)) {
      const u = this.usage(res, ns);
      if (u) used[res] = u.toString();
    }
    const st = { hard, used };
    if (JSON.stringify(cached.status ?? {}) !== JSON.stringify(st)) {
      const next = deepCopy(cached);
      next.status = st;
      await this.ctx.store.updateStatus(next).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    return undefined;
  }
}
