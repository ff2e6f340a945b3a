// From Services and EndpointSlices to what the rules need, per service port: its addresses and ports,
// its policies, and its endpoints with their readiness and node (kube-proxy's ServicePortMap and
// EndpointsMap, flattened).
import type { EndpointSlice, Service } from '@kemu/core';
import { ipFamily } from '@kemu/ip';
import { servicePortName } from './chain-names.js';

export interface EndpointInfo {
  ip: string;
  port: number;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  nodeName?: string;
}

export interface ServicePortInfo {
  /** "ns/name:port". */
  name: string;
  protocol: 'tcp' | 'udp' | 'sctp';
  clusterIP: string;
  port: number;
  nodePort?: number;
  externalIPs: string[];
  loadBalancerIPs: string[];
  sessionAffinitySeconds?: number;
  externalPolicyLocal: boolean;
  internalPolicyLocal: boolean;
  endpoints: EndpointInfo[];
}

const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/**
 * One entry per port of every Service that gets rules on `family`: headless Services (clusterIP None)
 * and ExternalName Services get none, as upstream.
 */
export function servicePorts(services: Service[], slices: EndpointSlice[], family: 4 | 6 = 4): ServicePortInfo[] {
  const byService = new Map<string, EndpointSlice[]>();
  for (const s of slices) {
    const svc = s.metadata.labels?.[SERVICE_NAME_LABEL];
    if (!svc || s.addressType !== (family === 4 ? 'IPv4' : 'IPv6')) continue;
    const k = `${s.metadata.namespace ?? 'default'}/${svc}`;
    const list = byService.get(k);
    if (list) list.push(s);
    else byService.set(k, [s]);
  }
  const out: ServicePortInfo[] = [];
  for (const svc of services) {
    const spec = svc.spec;
    if (!spec || spec.type === 'ExternalName') continue;
    const clusterIP = (spec.clusterIPs ?? (spec.clusterIP ? [spec.clusterIP] : [])).find((ip) => ipFamily(ip) === family);
    if (!clusterIP) continue; // headless ("None") or another family
    const ns = svc.metadata.namespace ?? 'default';
    const svcSlices = byService.get(`${ns}/${svc.metadata.name}`) ?? [];
    for (const p of spec.ports ?? []) {
      const protocol = (p.protocol ?? 'TCP').toLowerCase() as ServicePortInfo['protocol'];
      const endpoints: EndpointInfo[] = [];
      const seen = new Set<string>();
      for (const sl of svcSlices) {
        const sp = (sl.ports ?? []).find((x) => (x.name ?? '') === (p.name ?? '') && (x.protocol ?? 'TCP') === (p.protocol ?? 'TCP'));
        if (!sp) continue;
        for (const e of sl.endpoints ?? []) {
          const ip = e.addresses?.[0];
          if (!ip) continue;
          const key = `${ip}:${sp.port}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const c = e.conditions ?? {};
          endpoints.push({
            ip,
            port: sp.port,
            ready: c.ready !== false,
            serving: c.serving ?? c.ready !== false,
            terminating: c.terminating === true,
            nodeName: e.nodeName,
          });
        }
      }
      endpoints.sort((a, b) => (a.ip === b.ip ? a.port - b.port : a.ip < b.ip ? -1 : 1));
      const nodePorts = spec.type === 'NodePort' || spec.type === 'LoadBalancer';
      out.push({
        name: servicePortName(ns, svc.metadata.name ?? '', p.name),
        protocol,
        clusterIP,
        port: p.port,
        nodePort: nodePorts ? p.nodePort : undefined,
        externalIPs: (spec.externalIPs ?? []).filter((ip) => ipFamily(ip) === family),
        loadBalancerIPs:
          spec.type === 'LoadBalancer'
            ? (svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? '').filter((ip) => ipFamily(ip) === family)
            : [],
        sessionAffinitySeconds:
          spec.sessionAffinity === 'ClientIP' ? (spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? 10800) : undefined,
        externalPolicyLocal: spec.externalTrafficPolicy === 'Local' && (nodePorts || (spec.externalIPs?.length ?? 0) > 0),
        internalPolicyLocal: spec.internalTrafficPolicy === 'Local',
        endpoints,
      });
    }
  }
  return out;
}
