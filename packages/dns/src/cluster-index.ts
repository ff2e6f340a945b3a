// What the DNS server knows of the cluster, indexed for lookups: Services with their ports and (for headless
// Services) ready endpoints, addresses back to names, and pod addresses per namespace. Built whole from the
// informers' lists, as CoreDNS's kubernetes plugin reads its caches; rebuilt after a change.
import type { EndpointSlice, Namespace, Pod, Service } from '@kemu/core';
import { SERVICE_NAME_LABEL } from '@kemu/core';
import { canonicalIP } from '@kemu/ip';
import { ipToLabel } from './names.js';

export interface PortEntry {
  /** Lower case; '' for an unnamed port (no SRV name of its own). */
  name: string;
  /** Lower case: tcp, udp or sctp. */
  protocol: string;
  port: number;
}

export interface EndpointEntry {
  /** The endpoint's DNS label: its hostname, or its address with dashes. */
  label: string;
  ip: string;
  ports: PortEntry[];
}

export interface ServiceEntry {
  namespace: string;
  name: string;
  /** Cluster IPs; [] for a headless Service. */
  clusterIPs: string[];
  headless: boolean;
  /** Set for type ExternalName. */
  externalName?: string;
  ports: PortEntry[];
  /** Ready endpoints (headless Services answer with these). */
  endpoints: EndpointEntry[];
}

export interface ClusterIndex {
  /** "ns/name" to the Service. */
  services: Map<string, ServiceEntry>;
  /** Namespaces that exist (a Namespace object, or a Service in it). */
  namespaces: Set<string>;
  /** Canonical address to the names a PTR query answers (without the zone suffix's trailing dot). */
  reverse: Map<string, string[]>;
  /** "ns/ip" of every pod with an address, for `pods verified`. */
  podIPs: Set<string>;
}

export interface ClusterObjects {
  services: readonly Service[];
  endpointSlices: readonly EndpointSlice[];
  pods?: readonly Pod[];
  namespaces?: readonly Namespace[];
}

function portEntry(p: { name?: string; protocol?: string; port: number }): PortEntry {
  return { name: (p.name ?? '').toLowerCase(), protocol: (p.protocol ?? 'TCP').toLowerCase(), port: p.port };
}

/** Indexes the cluster's objects for `zone` (normalized, e.g. "cluster.local"). */
export function buildClusterIndex(objs: ClusterObjects, zone: string): ClusterIndex {
  const services = new Map<string, ServiceEntry>();
  const namespaces = new Set<string>();
  const reverse = new Map<string, string[]>();
  const addReverse = (ip: string, name: string) => {
    const list = reverse.get(ip);
    if (!list) reverse.set(ip, [name]);
    else if (!list.includes(name)) list.push(name);
  };
  for (const ns of objs.namespaces ?? []) if (ns.metadata.name) namespaces.add(ns.metadata.name);

  const slicesOf = new Map<string, EndpointSlice[]>();
  for (const s of objs.endpointSlices) {
    const svc = s.metadata.labels?.[SERVICE_NAME_LABEL];
    if (!svc || s.addressType === 'FQDN') continue;
    const k = `${s.metadata.namespace ?? 'default'}/${svc}`;
    const list = slicesOf.get(k);
    if (list) list.push(s);
    else slicesOf.set(k, [s]);
  }

  const endpointPtrs: [string, string][] = [];
  for (const svc of objs.services) {
    const spec = svc.spec ?? {};
    const namespace = svc.metadata.namespace ?? 'default';
    const name = svc.metadata.name ?? '';
    namespaces.add(namespace);
    const fqdn = `${name}.${namespace}.svc.${zone}`;
    const externalName = spec.type === 'ExternalName' && spec.externalName ? spec.externalName : undefined;
    const clusterIPs = externalName
      ? []
      : (spec.clusterIPs ?? (spec.clusterIP ? [spec.clusterIP] : [])).map((ip) => canonicalIP(ip)).filter((ip): ip is string => !!ip);
    const headless = !externalName && clusterIPs.length === 0;
    const endpoints: EndpointEntry[] = [];
    const seen = new Set<string>();
    for (const sl of slicesOf.get(`${namespace}/${name}`) ?? []) {
      const ports = (sl.ports ?? []).map(portEntry);
      for (const ep of sl.endpoints ?? []) {
        if (ep.conditions?.ready === false) continue; // nil means ready, as upstream reads it
        for (const raw of ep.addresses ?? []) {
          const ip = canonicalIP(raw);
          if (!ip || seen.has(ip)) continue;
          seen.add(ip);
          const label = (ep.hostname ?? ipToLabel(ip)).toLowerCase();
          endpoints.push({ label, ip, ports });
          endpointPtrs.push([ip, `${label}.${fqdn}`]);
        }
      }
    }
    services.set(`${namespace}/${name}`, {
      namespace,
      name,
      clusterIPs,
      headless,
      externalName,
      ports: (spec.ports ?? []).map(portEntry),
      endpoints,
    });
    for (const ip of clusterIPs) addReverse(ip, fqdn);
  }
  // A cluster IP's own name comes first; an endpoint's names follow.
  for (const [ip, n] of endpointPtrs) addReverse(ip, n);

  const podIPs = new Set<string>();
  for (const p of objs.pods ?? []) {
    const ns = p.metadata.namespace ?? 'default';
    const ips = p.status?.podIPs?.map((x) => x.ip) ?? (p.status?.podIP ? [p.status.podIP] : []);
    for (const raw of ips) {
      const ip = canonicalIP(raw);
      if (ip) podIPs.add(`${ns}/${ip}`);
    }
  }
  return { services, namespaces, reverse, podIPs };
}
