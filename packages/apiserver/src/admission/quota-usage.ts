// What an object counts against a ResourceQuota, as upstream's quota evaluators count it: object counts
// (`pods`, `services`, `count/deployments.apps`, ...), a pod's compute requests and limits (the larger of
// the containers' sum and any init container, plus overhead; terminal pods count nothing), a claim's
// storage, a Service's node ports and load balancers. One home for the arithmetic, shared by the admission
// plugin and the usage recalculation.
import { kindForResource, type KubeObject, parseQuantity, Quantity } from '@kemu/core';

export type Usage = Map<string, Quantity>;

/** Resources whose presence in a quota makes every container state them (upstream's validation set). */
export const POD_COMPUTE_REQUIRED = ['requests.cpu', 'requests.memory', 'limits.cpu', 'limits.memory', 'cpu', 'memory'];

/** The kinds whose objects a quota resource name counts (for recalculation). */
export function kindsForQuotaResource(name: string): string[] {
  if (name.startsWith('count/')) {
    const rest = name.slice('count/'.length);
    const dot = rest.indexOf('.');
    const info = kindForResource(dot < 0 ? rest : rest.slice(0, dot));
    const group = dot < 0 ? '' : rest.slice(dot + 1);
    return info && info.group === group ? [info.kind] : [];
  }
  if (name === 'pods' || name === 'cpu' || name === 'memory' || name.startsWith('requests.') && !name.endsWith('storage') || name.startsWith('limits.')) {
    return ['Pod'];
  }
  if (name === 'requests.ephemeral-storage') return ['Pod'];
  if (name === 'persistentvolumeclaims' || name === 'requests.storage' || name.includes('.storageclass.storage.k8s.io/')) return ['PersistentVolumeClaim'];
  if (name === 'services' || name.startsWith('services.')) return ['Service'];
  const simple: Record<string, string> = { configmaps: 'ConfigMap', secrets: 'Secret', replicationcontrollers: 'ReplicationController', resourcequotas: 'ResourceQuota' };
  return simple[name] ? [simple[name]] : [];
}

function addTo(u: Usage, key: string, q: Quantity): void {
  const prev = u.get(key);
  u.set(key, prev ? prev.add(q) : q);
}

function sumList(lists: (Record<string, string | number> | undefined)[]): Map<string, Quantity> {
  const out = new Map<string, Quantity>();
  for (const l of lists) for (const [k, v] of Object.entries(l ?? {})) addTo(out, k, parseQuantity(v));
  return out;
}

function maxInto(a: Map<string, Quantity>, b: Record<string, string | number> | undefined): void {
  for (const [k, v] of Object.entries(b ?? {})) {
    const q = parseQuantity(v);
    const cur = a.get(k);
    if (!cur || cur.cmp(q) < 0) a.set(k, q);
  }
}

/** A pod's effective requests or limits: max(sum of containers, each init container) + overhead. */
export function podResources(spec: Record<string, any>, which: 'requests' | 'limits'): Map<string, Quantity> {
  const sum = sumList((spec.containers ?? []).map((c: any) => c.resources?.[which]));
  for (const c of spec.initContainers ?? []) maxInto(sum, c.resources?.[which]);
  for (const [k, v] of Object.entries(spec.overhead ?? {})) if (sum.has(k)) addTo(sum, k, parseQuantity(v as string));
  return sum;
}

const ONE = () => Quantity.fromValue(1);

/** The quota usage of one object of a resource in a group. */
export function objectUsage(group: string, resource: string, obj: KubeObject): Usage {
  const u: Usage = new Map();
  u.set(group ? `count/${resource}.${group}` : `count/${resource}`, ONE());
  if (group !== '') return u;
  switch (resource) {
    case 'pods': {
      const phase = obj.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') return new Map();
      u.set('pods', ONE());
      const spec = obj.spec ?? {};
      for (const [k, q] of podResources(spec, 'requests')) {
        if (k === 'cpu' || k === 'memory' || k === 'ephemeral-storage') {
          u.set(`requests.${k}`, q);
          if (k !== 'ephemeral-storage') u.set(k, q);
        } else if (!k.includes('/') || k.includes('.')) u.set(`requests.${k}`, q);
      }
      for (const [k, q] of podResources(spec, 'limits')) if (k === 'cpu' || k === 'memory' || k === 'ephemeral-storage') u.set(`limits.${k}`, q);
      return u;
    }
    case 'persistentvolumeclaims': {
      u.set('persistentvolumeclaims', ONE());
      const storage = obj.spec?.resources?.requests?.storage;
      if (storage !== undefined) {
        const q = parseQuantity(storage);
        u.set('requests.storage', q);
        const cls = obj.spec?.storageClassName;
        if (cls) {
          u.set(`${cls}.storageclass.storage.k8s.io/requests.storage`, q);
          u.set(`${cls}.storageclass.storage.k8s.io/persistentvolumeclaims`, ONE());
        }
      }
      return u;
    }
    case 'services': {
      u.set('services', ONE());
      const type = obj.spec?.type;
      if (type === 'LoadBalancer') u.set('services.loadbalancers', ONE());
      if (type === 'NodePort' || type === 'LoadBalancer') u.set('services.nodeports', Quantity.fromValue((obj.spec?.ports ?? []).length));
      return u;
    }
    case 'configmaps':
    case 'secrets':
    case 'replicationcontrollers':
    case 'resourcequotas':
      u.set(resource, ONE());
      return u;
    default:
      return u;
  }
}

/** new - old, keeping only resources that changed. */
export function usageDelta(next: Usage, prev: Usage | undefined): Usage {
  const d: Usage = new Map();
  for (const [k, q] of next) {
    const diff = prev?.get(k) ? q.sub(prev.get(k)!) : q;
    if (!diff.isZero()) d.set(k, diff);
  }
  for (const [k, q] of prev ?? []) if (!next.has(k)) d.set(k, q.neg());
  return d;
}

/** Container names missing each required compute resource (the basis of "must specify" errors). */
export function missingComputeResources(spec: Record<string, any>, required: readonly string[]): Map<string, string[]> {
  const missing = new Map<string, string[]>();
  const need = required.filter((r) => POD_COMPUTE_REQUIRED.includes(r));
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
    for (const r of need) {
      const [which, res] = r.startsWith('limits.') ? ['limits', r.slice(7)] : ['requests', r.startsWith('requests.') ? r.slice(9) : r];
      if (c.resources?.[which]?.[res] === undefined) {
        const list = missing.get(r) ?? [];
        if (!list.includes(c.name)) list.push(c.name);
        missing.set(r, list);
      }
    }
  }
  return missing;
}
