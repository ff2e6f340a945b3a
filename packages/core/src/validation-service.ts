// Validation of Service, Endpoints and EndpointSlice with the API server's field paths and wording.
import { isIP } from 'node:net';
import type { EndpointPort, Endpoints, EndpointSlice, Service, ServicePort } from './api-service.js';
import type { KubeObject } from './api-meta.js';
import type { FieldErrors } from './field-errors.js';
import { dns1123Label, dns1123Subdomain, portName } from './names.js';
import { validateLabels } from './validation.js';

export const SERVICE_TYPES = ['ClusterIP', 'ExternalName', 'LoadBalancer', 'NodePort'] as const;
export const PROTOCOLS = ['SCTP', 'TCP', 'UDP'] as const;
const AFFINITY = ['ClientIP', 'None'] as const;
const TRAFFIC_POLICIES = ['Cluster', 'Local'] as const;
const FAMILY_POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'] as const;
const FAMILIES = ['IPv4', 'IPv6'] as const;
const ADDRESS_TYPES = ['FQDN', 'IPv4', 'IPv6'] as const;
const MAX_SLICE_ENDPOINTS = 1000;
const MAX_SLICE_ADDRESSES = 100;
const MAX_SLICE_PORTS = 20000;
const IP_EXAMPLE = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

const oneOf = (v: unknown, set: readonly string[]) => typeof v === 'string' && set.includes(v);

export function isPortNumber(v: unknown): v is number {
  return Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535;
}

export function checkPortNumber(e: FieldErrors, path: string, v: unknown): void {
  if (!isPortNumber(v)) e.invalid(path, v, 'must be between 1 and 65535, inclusive');
}

/** A port given as a number or a container port name (Service targetPort, NetworkPolicy port). */
export function checkPortNumOrName(e: FieldErrors, path: string, v: unknown): void {
  if (typeof v === 'number') checkPortNumber(e, path, v);
  else if (typeof v === 'string') e.check(path, v, portName(v));
  else e.invalid(path, v, 'must be an integer or a string');
}

export function isHeadless(svc: Service): boolean {
  return svc.spec?.clusterIP === 'None';
}

function validateServicePorts(e: FieldErrors, svc: Service): void {
  const s = svc.spec;
  const ports = s.ports ?? [];
  if (!Array.isArray(ports)) {
    e.invalid('spec.ports', ports, 'must be a list');
    return;
  }
  if (ports.length === 0 && !isHeadless(svc) && s.type !== 'ExternalName') e.required('spec.ports');
  const names = new Set<string>();
  const keys = new Set<string>();
  const nodePorts = new Set<string>();
  ports.forEach((p: ServicePort, i) => {
    const path = `spec.ports[${i}]`;
    if (!p || typeof p !== 'object') {
      e.invalid(path, p, 'must be an object');
      return;
    }
    if (ports.length > 1 && !p.name) e.required(`${path}.name`);
    else if (p.name) {
      e.check(`${path}.name`, p.name, dns1123Label(p.name));
      if (names.has(p.name)) e.duplicate(`${path}.name`, p.name);
      names.add(p.name);
    }
    checkPortNumber(e, `${path}.port`, p.port);
    if (!oneOf(p.protocol, PROTOCOLS)) e.notSupported(`${path}.protocol`, p.protocol ?? '', PROTOCOLS);
    if (p.targetPort !== undefined) checkPortNumOrName(e, `${path}.targetPort`, p.targetPort);
    const key = `${p.port}/${p.protocol}`;
    if (keys.has(key)) e.duplicate(path, { port: p.port, protocol: p.protocol });
    keys.add(key);
    if (p.nodePort !== undefined && p.nodePort !== 0) {
      if (s.type === 'ClusterIP' || s.type === 'ExternalName') {
        e.forbidden(`${path}.nodePort`, `may not be used when \`type\` is '${s.type}'`);
      } else {
        checkPortNumber(e, `${path}.nodePort`, p.nodePort);
        const nk = `${p.nodePort}/${p.protocol}`;
        if (nodePorts.has(nk)) e.duplicate(`${path}.nodePort`, p.nodePort);
        nodePorts.add(nk);
      }
    }
    if (p.appProtocol !== undefined && typeof p.appProtocol !== 'string') e.invalid(`${path}.appProtocol`, p.appProtocol, 'must be a string');
  });
}

function validateClusterIPs(e: FieldErrors, svc: Service): void {
  const s = svc.spec;
  const ips = s.clusterIPs ?? [];
  if (s.clusterIP && ips.length && ips[0] !== s.clusterIP) {
    e.invalid('spec.clusterIPs', ips, 'first value must match `clusterIP`');
  }
  if (s.type === 'ExternalName') {
    if (s.clusterIP || ips.length) e.forbidden('spec.clusterIPs', 'may not be set for ExternalName services');
    return;
  }
  if (ips.length > 2) e.invalid('spec.clusterIPs', ips, 'may only hold up to 2 values');
  ips.forEach((ip, i) => {
    if (ip === 'None') {
      if (i > 0 || ips.length > 1) e.invalid(`spec.clusterIPs[${i}]`, ip, 'must be empty when the first value is \'None\'');
      return;
    }
    if (typeof ip !== 'string' || isIP(ip) === 0) e.invalid(`spec.clusterIPs[${i}]`, ip, IP_EXAMPLE);
  });
  if (ips.length === 2 && isIP(ips[0]) !== 0 && isIP(ips[0]) === isIP(ips[1])) {
    e.invalid('spec.clusterIPs', ips, 'may specify no more than one IP for each IP family');
  }
  if (isHeadless(svc) && s.type !== 'ClusterIP') {
    e.invalid('spec.clusterIPs[0]', 'None', 'may not be set to \'None\' for LoadBalancer or NodePort services');
  }
}

export function validateService(e: FieldErrors, obj: KubeObject): void {
  const svc = obj as Service;
  const s = svc.spec;
  if (!s || typeof s !== 'object') {
    e.required('spec');
    return;
  }
  if (!oneOf(s.type, SERVICE_TYPES)) e.notSupported('spec.type', s.type ?? '', SERVICE_TYPES);
  if (s.type === 'ExternalName') {
    if (!s.externalName) e.required('spec.externalName');
    else {
      const name = s.externalName.endsWith('.') ? s.externalName.slice(0, -1) : s.externalName;
      e.check('spec.externalName', s.externalName, dns1123Subdomain(name));
    }
  } else if (s.externalName && s.type !== undefined) {
    // Kept but unused unless the type is ExternalName, as the API server does.
  }
  validateServicePorts(e, svc);
  validateClusterIPs(e, svc);
  validateLabels(e, 'spec.selector', s.selector);
  if (!oneOf(s.sessionAffinity, AFFINITY)) e.notSupported('spec.sessionAffinity', s.sessionAffinity ?? '', AFFINITY);
  const timeout = s.sessionAffinityConfig?.clientIP?.timeoutSeconds;
  if (s.sessionAffinity === 'ClientIP' && timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0 && timeout <= 86400)) {
    e.invalid('spec.sessionAffinityConfig.clientIP.timeoutSeconds', timeout, 'must be greater than 0 and less than 86400');
  } else if (s.sessionAffinity === 'None' && s.sessionAffinityConfig?.clientIP) {
    e.invalid('spec.sessionAffinityConfig', s.sessionAffinityConfig, "must not be set when session affinity is None");
  }
  if (s.externalTrafficPolicy !== undefined) {
    if (s.type !== 'NodePort' && s.type !== 'LoadBalancer') {
      e.invalid('spec.externalTrafficPolicy', s.externalTrafficPolicy, "may only be set when `type` is 'NodePort' or 'LoadBalancer'");
    } else if (!oneOf(s.externalTrafficPolicy, TRAFFIC_POLICIES)) {
      e.notSupported('spec.externalTrafficPolicy', s.externalTrafficPolicy, TRAFFIC_POLICIES);
    }
  } else if (s.type === 'NodePort' || s.type === 'LoadBalancer') {
    e.required('spec.externalTrafficPolicy');
  }
  if (s.internalTrafficPolicy !== undefined && !oneOf(s.internalTrafficPolicy, TRAFFIC_POLICIES)) {
    e.notSupported('spec.internalTrafficPolicy', s.internalTrafficPolicy, TRAFFIC_POLICIES);
  }
  if (s.healthCheckNodePort !== undefined && s.healthCheckNodePort !== 0) {
    if (s.type !== 'LoadBalancer' || s.externalTrafficPolicy !== 'Local') {
      e.invalid('spec.healthCheckNodePort', s.healthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'");
    } else checkPortNumber(e, 'spec.healthCheckNodePort', s.healthCheckNodePort);
  }
  if (s.ipFamilyPolicy !== undefined && !oneOf(s.ipFamilyPolicy, FAMILY_POLICIES)) {
    e.notSupported('spec.ipFamilyPolicy', s.ipFamilyPolicy, FAMILY_POLICIES);
  }
  const fams = s.ipFamilies ?? [];
  if (fams.length > 2) e.invalid('spec.ipFamilies', fams, 'may specify no more than 2 ipFamilies');
  const seenFam = new Set<string>();
  fams.forEach((f, i) => {
    if (!oneOf(f, FAMILIES)) e.notSupported(`spec.ipFamilies[${i}]`, f, FAMILIES);
    else if (seenFam.has(f)) e.duplicate(`spec.ipFamilies[${i}]`, f);
    seenFam.add(f);
  });
  if (s.ipFamilyPolicy === 'SingleStack' && fams.length > 1) {
    e.invalid('spec.ipFamilies', fams, 'when `ipFamilyPolicy` is `SingleStack`, may specify at most one IP family');
  }
  (s.clusterIPs ?? []).forEach((ip, i) => {
    const f = isIP(ip);
    if (f && fams[i] && fams[i] !== `IPv${f}`) {
      e.invalid(`spec.clusterIPs[${i}]`, ip, `expected an IPv${fams[i] === 'IPv4' ? 4 : 6} value as indicated by \`ipFamilies[${i}]\``);
    }
  });
  (s.externalIPs ?? []).forEach((ip, i) => {
    if (typeof ip !== 'string' || isIP(ip) === 0) e.invalid(`spec.externalIPs[${i}]`, ip, IP_EXAMPLE);
  });
  if (s.allocateLoadBalancerNodePorts !== undefined && s.type !== 'LoadBalancer') {
    e.forbidden('spec.allocateLoadBalancerNodePorts', 'may only be used when `type` is \'LoadBalancer\'');
  }
}

export function validateServiceUpdate(e: FieldErrors, next: KubeObject, prev: KubeObject): void {
  const a = (prev as Service).spec ?? {};
  const b = (next as Service).spec ?? {};
  // Cluster IPs may not change once set, except when the type moves to or from ExternalName.
  if (a.type !== 'ExternalName' && b.type !== 'ExternalName') {
    (a.clusterIPs ?? []).forEach((ip, i) => {
      const now = b.clusterIPs?.[i];
      if (now !== undefined && now !== ip) e.invalid(`spec.clusterIPs[${i}]`, b.clusterIPs, 'may not change once set');
      if (now === undefined && i === 0) e.invalid('spec.clusterIPs[0]', b.clusterIPs ?? [], 'primary clusterIP can not be unset');
    });
    (a.ipFamilies ?? []).forEach((f, i) => {
      const now = b.ipFamilies?.[i];
      if (now !== undefined && now !== f) e.invalid(`spec.ipFamilies[${i}]`, now, 'may not change once set');
    });
  }
}

function checkEndpointIP(e: FieldErrors, path: string, ip: unknown): void {
  if (typeof ip !== 'string' || isIP(ip) === 0) {
    e.invalid(path, ip, IP_EXAMPLE);
    return;
  }
  if (ip === '0.0.0.0' || ip === '::') e.invalid(path, ip, 'may not be unspecified (0.0.0.0)');
  else if (/^127\./.test(ip) || ip === '::1') e.invalid(path, ip, 'may not be in the loopback range (127.0.0.0/8, ::1/128)');
  else if (/^169\.254\./.test(ip) || /^fe[89ab]/i.test(ip)) e.invalid(path, ip, 'may not be in the link-local range (169.254.0.0/16, fe80::/10)');
  else if (/^224\./.test(ip) || /^ff/i.test(ip)) e.invalid(path, ip, 'may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)');
}

function validateEndpointPorts(e: FieldErrors, path: string, ports: EndpointPort[] | null | undefined, nameRequired: boolean): void {
  const names = new Set<string>();
  (ports ?? []).forEach((p, i) => {
    const pp = `${path}[${i}]`;
    if (!p || typeof p !== 'object') {
      e.invalid(pp, p, 'must be an object');
      return;
    }
    if (nameRequired && (ports?.length ?? 0) > 1 && !p.name) e.required(`${pp}.name`);
    else if (p.name) {
      e.check(`${pp}.name`, p.name, dns1123Label(p.name));
      if (names.has(p.name)) e.duplicate(`${pp}.name`, p.name);
    }
    names.add(p.name ?? '');
    if (p.port !== undefined || nameRequired) checkPortNumber(e, `${pp}.port`, p.port);
    if (!oneOf(p.protocol, PROTOCOLS)) e.notSupported(`${pp}.protocol`, p.protocol ?? '', PROTOCOLS);
  });
}

export function validateEndpoints(e: FieldErrors, obj: KubeObject): void {
  const ep = obj as Endpoints;
  (ep.subsets ?? []).forEach((s, i) => {
    const path = `subsets[${i}]`;
    if (!s?.addresses?.length && !s?.notReadyAddresses?.length) {
      e.required(path, 'must specify `addresses` or `notReadyAddresses`');
    }
    for (const which of ['addresses', 'notReadyAddresses'] as const) {
      (s?.[which] ?? []).forEach((a, j) => {
        const ap = `${path}.${which}[${j}]`;
        checkEndpointIP(e, `${ap}.ip`, a?.ip);
        if (a?.hostname) e.check(`${ap}.hostname`, a.hostname, dns1123Label(a.hostname));
        if (a?.nodeName) e.check(`${ap}.nodeName`, a.nodeName, dns1123Subdomain(a.nodeName));
      });
    }
    validateEndpointPorts(e, `${path}.ports`, s?.ports, true);
  });
}

export function validateEndpointSlice(e: FieldErrors, obj: KubeObject): void {
  const slice = obj as EndpointSlice;
  if (!slice.addressType) e.required('addressType');
  else if (!oneOf(slice.addressType, ADDRESS_TYPES)) e.notSupported('addressType', slice.addressType, ADDRESS_TYPES);
  const eps = slice.endpoints ?? [];
  if (!Array.isArray(eps)) {
    e.invalid('endpoints', eps, 'must be a list');
    return;
  }
  if (eps.length > MAX_SLICE_ENDPOINTS) e.tooMany('endpoints', eps.length, MAX_SLICE_ENDPOINTS);
  eps.forEach((ep, i) => {
    const path = `endpoints[${i}]`;
    const addrs = ep?.addresses ?? [];
    if (addrs.length === 0) e.required(`${path}.addresses`, 'must contain at least 1 address');
    else if (addrs.length > MAX_SLICE_ADDRESSES) e.tooMany(`${path}.addresses`, addrs.length, MAX_SLICE_ADDRESSES);
    addrs.forEach((a, j) => {
      const ap = `${path}.addresses[${j}]`;
      if (slice.addressType === 'IPv4' && isIP(a) !== 4) e.invalid(ap, a, 'must be a valid IPv4 address');
      else if (slice.addressType === 'IPv6' && isIP(a) !== 6) e.invalid(ap, a, 'must be a valid IPv6 address');
      else if (slice.addressType === 'FQDN') e.check(ap, a, dns1123Subdomain(a));
    });
    if (ep?.hostname) e.check(`${path}.hostname`, ep.hostname, dns1123Label(ep.hostname));
    if (ep?.nodeName) e.check(`${path}.nodeName`, ep.nodeName, dns1123Subdomain(ep.nodeName));
    for (const c of ['ready', 'serving', 'terminating'] as const) {
      const v = ep?.conditions?.[c];
      if (v !== undefined && v !== null && typeof v !== 'boolean') e.invalid(`${path}.conditions.${c}`, v, 'must be a boolean');
    }
  });
  const ports = slice.ports ?? [];
  if (ports.length > MAX_SLICE_PORTS) e.tooMany('ports', ports.length, MAX_SLICE_PORTS);
  validateEndpointPorts(e, 'ports', ports, false);
}

export function validateEndpointSliceUpdate(e: FieldErrors, next: KubeObject, prev: KubeObject): void {
  if (next.addressType !== prev.addressType) e.invalid('addressType', next.addressType, 'field is immutable');
}
