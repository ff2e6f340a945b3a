// The EndpointSlice controller and the Endpoints controller in one loop over Services: for every Service
// with a selector, the pods it selects become EndpointSlices (at most 100 endpoints each, one set per IP
// family and port mapping, owned by the Service, labelled with its name and the managing controller) and
// the legacy Endpoints object (ready and not-ready addresses). Slices are updated in place, so a stable
// Service produces no writes.
import {
  Controller,
  deepCopy,
  type Endpoints,
  type EndpointSlice,
  type EndpointSubset,
  isAlreadyExists,
  isNotFound,
  type KubeObject,
  MANAGED_BY_LABEL,
  type Pod,
  SERVICE_NAME_LABEL,
  type Service,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { type DesiredEndpoint, desiredEndpoints } from './endpoints-desired.js';
import { LABEL_PAIR_INDEX, labelPairIndexFunc, SELECTOR_PAIR_INDEX, selectedByPairs, selectorPairIndexFunc, withOwnerIndexes } from './indexes.js';
import { controllerRef } from './pod-util.js';

export const ENDPOINTSLICE_CONTROLLER = 'endpointslice-controller.k8s.io';
const COMPONENT = 'endpoint-slice-controller';
export const MAX_ENDPOINTS_PER_SLICE = 100;
const MAX_ENDPOINTS_PER_ENDPOINTS = 1000;
const OVER_CAPACITY = 'endpoints.kubernetes.io/over-capacity';
const SERVICE_INDEX = 'service-name';

export interface EndpointSliceControllerOptions {
  workers?: number;
  maxEndpointsPerSlice?: number;
  /** Also maintain the legacy Endpoints object (default true, as kube-controller-manager does). */
  endpoints?: boolean;
}

function stable(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x));
}

export class EndpointSliceController {
  readonly controller: Controller;
  private readonly services: SharedInformer<'Service'>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly slices: SharedInformer<'EndpointSlice'>;
  private readonly nodes: SharedInformer<'Node'>;
  private readonly maxPerSlice: number;
  private readonly withEndpoints: boolean;

  constructor(
    private readonly ctx: ControllerContext,
    opts: EndpointSliceControllerOptions = {},
  ) {
    this.maxPerSlice = opts.maxEndpointsPerSlice ?? MAX_ENDPOINTS_PER_SLICE;
    this.withEndpoints = opts.endpoints ?? true;
    this.services = withOwnerIndexes(ctx.informers.informer('Service'));
    this.services.addIndexers({ [SELECTOR_PAIR_INDEX]: selectorPairIndexFunc });
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.pods.addIndexers({ [LABEL_PAIR_INDEX]: labelPairIndexFunc });
    this.slices = withOwnerIndexes(ctx.informers.informer('EndpointSlice'));
    this.slices.addIndexers({ [SERVICE_INDEX]: sliceServiceIndex });
    this.nodes = ctx.informers.informer('Node');
    this.controller = new Controller({
      name: COMPONENT,
      workers: opts.workers ?? 5,
      informers: [this.services, this.pods, this.slices, this.nodes],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.services.addEventHandler(this.controller.handler());
    const podChanged = (p: Pod) => {
      for (const s of this.servicesOf(p)) this.controller.enqueue(s);
    };
    this.pods.addEventHandler({
      onAdd: podChanged,
      onUpdate: (a, b) => {
        // Looked up first: a pod no Service selects (before or after) is settled by the label index alone.
        const services = new Set([...this.servicesOf(a), ...this.servicesOf(b)]);
        if (services.size === 0) return;
        if (endpointRelevant(a) !== endpointRelevant(b) || stable(a.metadata.labels) !== stable(b.metadata.labels)) {
          for (const s of services) this.controller.enqueue(s);
        }
      },
      onDelete: podChanged,
    });
    const sliceChanged = (s: EndpointSlice) => {
      const svc = s.metadata.labels?.[SERVICE_NAME_LABEL];
      if (svc && s.metadata.labels?.[MANAGED_BY_LABEL] === ENDPOINTSLICE_CONTROLLER) this.controller.enqueue(`${s.metadata.namespace}/${svc}`);
    };
    this.slices.addEventHandler({ onUpdate: (_a, b) => sliceChanged(b), onDelete: sliceChanged });
  }

  /** The Services selecting the pod: only those with a selector pair the pod carries are looked at. */
  private servicesOf(p: Pod): Service[] {
    const ns = p.metadata.namespace ?? '';
    const seen = new Set<string>();
    const out: Service[] = [];
    for (const [k, v] of Object.entries(p.metadata.labels ?? {})) {
      for (const key of this.services.indexer.indexKeys(SELECTOR_PAIR_INDEX, `${ns}/${k}=${v}`)) {
        if (seen.has(key)) continue;
        seen.add(key);
        const s = this.services.indexer.getByKey(key) as Service | undefined;
        if (s?.spec.selector && Object.entries(s.spec.selector).every(([sk, sv]) => p.metadata.labels?.[sk] === sv)) out.push(s);
      }
    }
    return out;
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const svc = this.services.lister.get(ns, name) as Service | undefined;
    // Slices of a deleted Service go with it (owner references); its Endpoints object is removed here.
    if (!svc || svc.metadata.deletionTimestamp) {
      if (this.withEndpoints) {
        await this.ctx.store.delete('Endpoints', ns, name).catch((e) => {
          if (!isNotFound(e)) throw e;
        });
      }
      return undefined;
    }
    if (!svc.spec.selector || Object.keys(svc.spec.selector).length === 0 || svc.spec.type === 'ExternalName') return undefined;
    const pods = selectedByPairs<Pod>(this.pods, ns, svc.spec.selector);
    const nodeOf = (n: string) => this.nodes.lister.get(undefined, n);
    const families = (svc.spec.ipFamilies?.length ? svc.spec.ipFamilies : ['IPv4']).map((f) => (f === 'IPv6' ? 6 : 4) as 4 | 6);
    const existing = (this.slices.indexer.byIndex(SERVICE_INDEX, key) as EndpointSlice[]).filter(
      (s) => s.metadata.labels?.[MANAGED_BY_LABEL] === ENDPOINTSLICE_CONTROLLER,
    );
    const wanted: Omit<EndpointSlice, 'metadata'>[] = [];
    for (const fam of families) {
      const eps = desiredEndpoints(svc, pods, nodeOf, fam);
      // Group by resolved port set, then chunk.
      const groups = new Map<string, DesiredEndpoint[]>();
      for (const e of eps) {
        const k = stable(e.ports);
        groups.set(k, [...(groups.get(k) ?? []), e]);
      }
      if (groups.size === 0) groups.set(stable([]), []);
      for (const group of groups.values()) {
        const ports = group[0]?.ports ?? [];
        for (let i = 0; i === 0 || i < group.length; i += this.maxPerSlice) {
          wanted.push({
            apiVersion: 'discovery.k8s.io/v1',
            kind: 'EndpointSlice',
            addressType: fam === 6 ? 'IPv6' : 'IPv4',
            endpoints: group.slice(i, i + this.maxPerSlice).map((e) => e.endpoint),
            ports,
          });
        }
      }
    }
    await this.reconcileSlices(svc, existing, wanted);
    if (this.withEndpoints) await this.syncEndpoints(svc, desiredEndpoints(svc, pods, nodeOf, families[0]));
    return undefined;
  }

  private sliceLabels(svc: Service): Record<string, string> {
    return { ...(svc.metadata.labels ?? {}), [SERVICE_NAME_LABEL]: svc.metadata.name!, [MANAGED_BY_LABEL]: ENDPOINTSLICE_CONTROLLER };
  }

  private async reconcileSlices(svc: Service, existing: EndpointSlice[], wanted: Omit<EndpointSlice, 'metadata'>[]): Promise<void> {
    const labels = this.sliceLabels(svc);
    const pool = [...existing].sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
    const used = new Set<EndpointSlice>();
    // Reuse a slice of the same address type (content equal first, then any), create the rest.
    const take = (w: Omit<EndpointSlice, 'metadata'>) =>
      pool.find((s) => !used.has(s) && s.addressType === w.addressType && stable(s.endpoints) === stable(w.endpoints) && stable(s.ports ?? []) === stable(w.ports ?? [])) ??
      pool.find((s) => !used.has(s) && s.addressType === w.addressType);
    const writes: Promise<unknown>[] = [];
    for (const w of wanted) {
      const s = take(w);
      if (s) {
        used.add(s);
        const same = stable(s.endpoints) === stable(w.endpoints) && stable(s.ports ?? []) === stable(w.ports ?? []) && stable(s.metadata.labels) === stable(labels);
        if (same) continue;
        const next = deepCopy(s);
        next.endpoints = w.endpoints;
        next.ports = w.ports;
        next.metadata.labels = labels;
        writes.push(this.ctx.store.update(next));
      } else {
        writes.push(
          this.ctx.store.create({
            ...w,
            metadata: { generateName: `${svc.metadata.name}-`, namespace: svc.metadata.namespace, labels, ownerReferences: [controllerRef(svc)] },
          } as EndpointSlice),
        );
      }
    }
    for (const s of pool) {
      if (used.has(s)) continue;
      writes.push(
        this.ctx.store.delete('EndpointSlice', s.metadata.namespace, s.metadata.name!, { preconditions: { uid: s.metadata.uid } }).catch((e) => {
          if (!isNotFound(e)) throw e;
        }),
      );
    }
    const results = await Promise.allSettled(writes);
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) throw failed.reason;
  }

  private async syncEndpoints(svc: Service, eps: DesiredEndpoint[]): Promise<void> {
    const subsets: EndpointSubset[] = [];
    const byPorts = new Map<string, EndpointSubset>();
    let count = 0;
    for (const e of eps) {
      if (count >= MAX_ENDPOINTS_PER_ENDPOINTS) break;
      count++;
      const k = stable(e.ports);
      let sub = byPorts.get(k);
      if (!sub) {
        sub = { ports: e.ports.map((p) => ({ ...(p.name ? { name: p.name } : {}), port: p.port, protocol: p.protocol })) };
        byPorts.set(k, sub);
        subsets.push(sub);
      }
      const addr = { ip: e.endpoint.addresses[0], ...(e.endpoint.hostname ? { hostname: e.endpoint.hostname } : {}), ...(e.endpoint.nodeName ? { nodeName: e.endpoint.nodeName } : {}), targetRef: e.endpoint.targetRef };
      if (e.endpoint.conditions?.ready) (sub.addresses ??= []).push(addr);
      else if (!e.endpoint.conditions?.terminating || svc.spec.publishNotReadyAddresses) (sub.notReadyAddresses ??= []).push(addr);
    }
    const clean = subsets.filter((s) => s.addresses?.length || s.notReadyAddresses?.length);
    const labels = { ...(svc.metadata.labels ?? {}), 'endpoints.kubernetes.io/managed-by': 'endpoint-controller' };
    const annotations = eps.length > MAX_ENDPOINTS_PER_ENDPOINTS ? { [OVER_CAPACITY]: 'truncated' } : undefined;
    const cur = await this.ctx.store.get('Endpoints', svc.metadata.namespace, svc.metadata.name!).catch((e) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
    const body: Endpoints = {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: svc.metadata.name, namespace: svc.metadata.namespace, labels, ...(annotations ? { annotations } : {}) },
      ...(clean.length ? { subsets: clean } : {}),
    };
    if (!cur) {
      await this.ctx.store.create(body).catch((e) => {
        if (!isAlreadyExists(e)) throw e;
      });
      return;
    }
    if (stable(cur.subsets ?? []) === stable(body.subsets ?? []) && stable(cur.metadata.labels) === stable(labels)) return;
    const next = deepCopy(cur);
    next.subsets = body.subsets;
    if (!body.subsets) delete next.subsets;
    next.metadata.labels = labels;
    if (annotations) next.metadata.annotations = { ...(next.metadata.annotations ?? {}), ...annotations };
    await this.ctx.store.update(next);
  }
}

function sliceServiceIndex(o: KubeObject): string[] {
  const svc = o.metadata.labels?.[SERVICE_NAME_LABEL];
  return svc ? [`${o.metadata.namespace}/${svc}`] : [];
}

/** The pod facts endpoints depend on (IP, readiness, deletion, node, hostname). */
function endpointRelevant(p: Pod): string {
  return stable([p.status?.podIP, p.status?.podIPs, p.status?.phase, p.status?.conditions?.find((c) => c.type === 'Ready')?.status, !!p.metadata.deletionTimestamp, p.spec.nodeName, p.spec.hostname, p.spec.subdomain]);
}

