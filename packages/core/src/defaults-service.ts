// Defaulting of Service, Endpoints, EndpointSlice and NetworkPolicy, as the API server applies it.
import type { EndpointPort, Endpoints, EndpointSlice, Service } from './api-service.js';
import type { NetworkPolicy, NetworkPolicyPort } from './api-networking.js';

/** Seconds a ClientIP session sticks by default (3 hours). */
export const DEFAULT_CLIENT_IP_TIMEOUT = 10800;

export function defaultService(svc: Service): void {
  svc.spec ??= {};
  const s = svc.spec;
  s.type ??= 'ClusterIP';
  s.sessionAffinity ??= 'None';
  if (s.sessionAffinity === 'ClientIP') {
    s.sessionAffinityConfig ??= {};
    s.sessionAffinityConfig.clientIP ??= {};
    s.sessionAffinityConfig.clientIP.timeoutSeconds ??= DEFAULT_CLIENT_IP_TIMEOUT;
  }
  for (const p of s.ports ?? []) {
    if (!p || typeof p !== 'object') continue;
    p.protocol ??= 'TCP';
    if (p.targetPort === undefined || p.targetPort === 0 || p.targetPort === '') p.targetPort = p.port;
  }
  if (s.type === 'NodePort' || s.type === 'LoadBalancer') s.externalTrafficPolicy ??= 'Cluster';
  if (s.type !== 'ExternalName') s.internalTrafficPolicy ??= 'Cluster';
  if (s.type === 'LoadBalancer') s.allocateLoadBalancerNodePorts ??= true;
  // clusterIP and clusterIPs[0] are one value written two ways: fill whichever is missing.
  if (s.clusterIP && !s.clusterIPs?.length) s.clusterIPs = [s.clusterIP];
  else if (!s.clusterIP && s.clusterIPs?.length) s.clusterIP = s.clusterIPs[0];
}

function defaultPorts(ports: EndpointPort[] | null | undefined): void {
  for (const p of ports ?? []) {
    if (!p || typeof p !== 'object') continue;
    p.protocol ??= 'TCP';
  }
}

export function defaultEndpoints(ep: Endpoints): void {
  for (const s of ep.subsets ?? []) defaultPorts(s?.ports);
}

export function defaultEndpointSlice(slice: EndpointSlice): void {
  slice.endpoints ??= [];
  for (const p of slice.ports ?? []) {
    if (!p || typeof p !== 'object') continue;
    p.name ??= '';
    p.protocol ??= 'TCP';
  }
}

function defaultPolicyPorts(ports: NetworkPolicyPort[] | undefined): void {
  for (const p of ports ?? []) if (p && typeof p === 'object') p.protocol ??= 'TCP';
}

export function defaultNetworkPolicy(np: NetworkPolicy): void {
  np.spec ??= { podSelector: {} };
  const s = np.spec;
  for (const r of s.ingress ?? []) defaultPolicyPorts(r?.ports);
  for (const r of s.egress ?? []) defaultPolicyPorts(r?.ports);
  if (!s.policyTypes?.length) {
    // Ingress is always isolated; egress only when the policy has egress rules.
    s.policyTypes = s.egress?.length ? ['Ingress', 'Egress'] : ['Ingress'];
  }
}
