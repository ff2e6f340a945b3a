// What a Service's endpoints should be, computed once and written both as EndpointSlices and as the legacy
// Endpoints object: one entry per pod with an IP, its readiness (ready, serving, terminating), node, zone,
// hostname under the Service's subdomain, and the Service's ports resolved against the pod's named ports.
import type { Endpoint, EndpointPort, Node, Pod, Service } from '@kemu/core';
import { isPodReady, isPodTerminal } from './pod-util.js';

export const ZONE_LABEL = 'topology.kubernetes.io/zone';

export interface DesiredEndpoint {
  pod: Pod;
  endpoint: Endpoint;
  /** Resolved ports; pods resolving named ports differently land in different slices. */
  ports: EndpointPort[];
}

/** A Service port's target on a pod: a number, or the pod's container port of that name. */
export function resolveTargetPort(svcPort: NonNullable<Service['spec']['ports']>[number], pod: Pod): number | undefined {
  const t = svcPort.targetPort ?? svcPort.port;
  if (typeof t === 'number') return t;
  for (const c of pod.spec.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name === t && (p.protocol ?? 'TCP') === (svcPort.protocol ?? 'TCP')) return p.containerPort;
  }
  return undefined;
}

export function desiredEndpoints(svc: Service, pods: Pod[], nodeOf: (name: string) => Node | undefined, family: 4 | 6): DesiredEndpoint[] {
  const out: DesiredEndpoint[] = [];
  for (const pod of pods) {
    if (isPodTerminal(pod)) continue;
    const ips = (pod.status?.podIPs?.map((x) => x.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : [])).filter((ip) => ip.includes(':') === (family === 6));
    if (!ips.length) continue;
    const terminating = !!pod.metadata.deletionTimestamp;
    const ready = isPodReady(pod);
    const endpoint: Endpoint = {
      addresses: [ips[0]],
      conditions: {
        ready: (svc.spec.publishNotReadyAddresses ? true : ready) && !terminating,
        serving: svc.spec.publishNotReadyAddresses ? true : ready,
        terminating,
      },
      targetRef: { kind: 'Pod', namespace: pod.metadata.namespace, name: pod.metadata.name, uid: pod.metadata.uid },
    };
    if (pod.spec.nodeName) {
      endpoint.nodeName = pod.spec.nodeName;
      const zone = nodeOf(pod.spec.nodeName)?.metadata.labels?.[ZONE_LABEL];
      if (zone) endpoint.zone = zone;
    }
    if (pod.spec.hostname && pod.spec.subdomain === svc.metadata.name && svc.metadata.namespace === pod.metadata.namespace) {
      endpoint.hostname = pod.spec.hostname;
    }
    const ports: EndpointPort[] = [];
    for (const sp of svc.spec.ports ?? []) {
      const port = resolveTargetPort(sp, pod);
      if (port === undefined) continue;
      ports.push({ name: sp.name ?? '', port, protocol: sp.protocol ?? 'TCP', ...(sp.appProtocol ? { appProtocol: sp.appProtocol } : {}) });
    }
    out.push({ pod, endpoint, ports });
  }
  return out.sort((a, b) => (a.pod.metadata.name ?? '').localeCompare(b.pod.metadata.name ?? ''));
}
