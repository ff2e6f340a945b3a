// Printers of the networking kinds: Service and Endpoints (v1), EndpointSlice (discovery.k8s.io/v1),
// Ingress, IngressClass and NetworkPolicy (networking.k8s.io/v1).
import type { KubeObject } from '@kemu/core';
import { age } from './human-duration.js';
import { firstOf, formatLabels, formatLabelSelector } from './format.js';
import { column, NAME_COLUMN, registerPrinter } from './table.js';

const AGE = column('Age', 'string', 'Time since the object was created.');

interface ServicePort {
  port: number;
  nodePort?: number;
  protocol?: string;
}

/** `80/TCP,443:30443/TCP`, `<none>` without ports. */
function servicePorts(ports: ServicePort[] | undefined): string {
  if (!ports?.length) return '<none>';
  return ports.map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`).join(',');
}

/** The EXTERNAL-IP cell by service type. */
function externalIP(svc: KubeObject): string {
  const spec = svc.spec ?? {};
  const external: string[] = spec.externalIPs ?? [];
  switch (spec.type ?? 'ClusterIP') {
    case 'ClusterIP':
    case 'NodePort':
      return external.length ? external.join(',') : '<none>';
    case 'LoadBalancer': {
      const ingress = ((svc.status?.loadBalancer?.ingress ?? []) as { ip?: string; hostname?: string }[]).map((i) => i.ip || i.hostname || '').filter(Boolean);
      const all = [...ingress, ...external];
      return all.length ? all.join(',') : '<pending>';
    }
    case 'ExternalName':
      return spec.externalName ?? '';
    default:
      return '<unknown>';
  }
}

/** Register the printers of these kinds. */
export function registerNetworkPrinters(): void {
  registerPrinter('v1', 'Service', {
    columns: [
      NAME_COLUMN,
      column('Type', 'string', 'How the service is exposed.'),
      column('Cluster-IP', 'string', 'The virtual IP of the service.'),
      column('External-IP', 'string', 'Addresses the service is reachable at from outside.'),
      column('Port(s)', 'string', 'Ports of the service, with node ports.'),
      AGE,
      column('Selector', 'string', 'Labels of the pods the service routes to.', 1),
    ],
    row(o, now) {
      const spec = o.spec ?? {};
      return [
        o.metadata.name ?? '',
        spec.type ?? 'ClusterIP',
        spec.clusterIP || '<none>',
        externalIP(o),
        servicePorts(spec.ports),
        age(o.metadata.creationTimestamp, now),
        formatLabels(spec.selector),
      ];
    },
  });

  registerPrinter('v1', 'Endpoints', {
    columns: [NAME_COLUMN, column('Endpoints', 'string', 'Addresses and ports, the first three.'), AGE],
    row(o, now) {
      const list: string[] = [];
      for (const ss of o.subsets ?? []) {
        const addrs = ((ss.addresses ?? []) as { ip: string }[]).map((a) => a.ip);
        if (!ss.ports?.length) list.push(...addrs);
        else for (const p of ss.ports as { port: number }[]) for (const a of addrs) list.push(a.includes(':') ? `[${a}]:${p.port}` : `${a}:${p.port}`);
      }
      return [o.metadata.name ?? '', list.length ? firstOf(list, 3) : '<none>', age(o.metadata.creationTimestamp, now)];
    },
  });

  registerPrinter('discovery.k8s.io/v1', 'EndpointSlice', {
    columns: [
      NAME_COLUMN,
      column('AddressType', 'string', 'IPv4, IPv6 or FQDN.'),
      column('Ports', 'string', 'Port numbers of the slice.'),
      column('Endpoints', 'string', 'Addresses of the endpoints, the first three.'),
      AGE,
    ],
    row(o, now) {
      const ports = ((o.ports ?? []) as { port?: number }[]).map((p) => (typeof p.port === 'number' ? String(p.port) : '<unset>'));
      const addrs = ((o.endpoints ?? []) as { addresses?: string[] }[]).flatMap((e) => e.addresses ?? []);
      return [
        o.metadata.name ?? '',
        o.addressType ?? '',
        ports.length ? firstOf(ports, 3) : '<none>',
        addrs.length ? firstOf(addrs, 3) : '<none>',
        age(o.metadata.creationTimestamp, now),
      ];
    },
  });

  registerPrinter('networking.k8s.io/v1', 'Ingress', {
    columns: [
      NAME_COLUMN,
      column('Class', 'string', 'The IngressClass that handles the ingress.'),
      column('Hosts', 'string', 'Hosts the rules match.'),
      column('Address', 'string', 'Addresses of the load balancer.'),
      column('Ports', 'string', 'Ports served (443 with TLS).'),
      AGE,
    ],
    row(o, now) {
      const spec = o.spec ?? {};
      const hosts = ((spec.rules ?? []) as { host?: string }[]).map((r) => r.host || '*');
      const addrs = ((o.status?.loadBalancer?.ingress ?? []) as { ip?: string; hostname?: string }[]).map((i) => i.ip || i.hostname || '').filter(Boolean);
      return [
        o.metadata.name ?? '',
        spec.ingressClassName ?? '<none>',
        hosts.length ? firstOf(hosts, 4) : '*',
        addrs.join(','),
        spec.tls?.length ? '80, 443' : '80',
        age(o.metadata.creationTimestamp, now),
      ];
    },
  });

  registerPrinter('networking.k8s.io/v1', 'IngressClass', {
    columns: [NAME_COLUMN, column('Controller', 'string', 'The controller that handles the class.'), column('Parameters', 'string', 'Object holding its parameters.'), AGE],
    row(o, now) {
      const p = o.spec?.parameters;
      const params = p ? `${p.apiGroup ? `${p.kind}.${p.apiGroup}` : p.kind}/${p.name}` : '<none>';
      return [o.metadata.name ?? '', o.spec?.controller ?? '', params, age(o.metadata.creationTimestamp, now)];
    },
  });

  registerPrinter('networking.k8s.io/v1', 'NetworkPolicy', {
    columns: [NAME_COLUMN, column('Pod-Selector', 'string', 'The pods the policy applies to.'), AGE],
    row: (o, now) => [o.metadata.name ?? '', formatLabelSelector(o.spec?.podSelector), age(o.metadata.creationTimestamp, now)],
  });
}
