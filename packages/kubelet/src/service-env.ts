// The Service environment variables a container starts with (upstream's kubelet/envvars): for each Service
// with a cluster IP, `<NAME>_SERVICE_HOST`/`_PORT`, one `_SERVICE_PORT_<PORT-NAME>` per named port, and the
// Docker-link style `<NAME>_PORT`, `<NAME>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}`.
import { isIPv6 } from 'node:net';

/** The fields of a Service the variables come from. */
export interface ServiceForEnv {
  metadata: { name?: string; namespace?: string };
  spec?: { clusterIP?: string; ports?: { name?: string; port: number; protocol?: string }[] };
}

/** Upper case, `-` to `_` (upstream's makeEnvVariableName). */
export function envVariableName(s: string): string {
  return s.replaceAll('-', '_').toUpperCase();
}

function isServiceIPSet(svc: ServiceForEnv): boolean {
  const ip = svc.spec?.clusterIP;
  return ip !== undefined && ip !== '' && ip !== 'None';
}

const joinHostPort = (host: string, port: number) => (isIPv6(host) || host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** Variables of the given Services, in their order. */
export function serviceEnvVars(services: ServiceForEnv[]): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const svc of services) {
    if (!isServiceIPSet(svc)) continue;
    const ip = svc.spec!.clusterIP!;
    const ports = svc.spec?.ports ?? [];
    const prefix = envVariableName(svc.metadata.name ?? '');
    out.push({ name: `${prefix}_SERVICE_HOST`, value: ip });
    if (ports.length) out.push({ name: `${prefix}_SERVICE_PORT`, value: String(ports[0].port) });
    for (const p of ports) {
      if (p.name) out.push({ name: `${prefix}_SERVICE_PORT_${envVariableName(p.name)}`, value: String(p.port) });
    }
    ports.forEach((p, i) => {
      const proto = (p.protocol || 'TCP').toLowerCase();
      const url = `${proto}://${joinHostPort(ip, p.port)}`;
      if (i === 0) out.push({ name: `${prefix}_PORT`, value: url });
      const pp = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      out.push({ name: pp, value: url }, { name: `${pp}_PROTO`, value: proto }, { name: `${pp}_PORT`, value: String(p.port) }, { name: `${pp}_ADDR`, value: ip });
    });
  }
  return out;
}

/**
 * The Services a pod in `namespace` sees: every Service of its namespace when `enableServiceLinks`, and the
 * API server's own `kubernetes` Service of `default` always (a same-named one in the pod's namespace wins).
 */
export function servicesForPod(all: ServiceForEnv[], namespace: string, enableServiceLinks: boolean): ServiceForEnv[] {
  const byName = new Map<string, ServiceForEnv>();
  for (const svc of all) {
    if (!isServiceIPSet(svc)) continue;
    const name = svc.metadata.name ?? '';
    const ns = svc.metadata.namespace ?? 'default';
    if (ns === 'default' && name === 'kubernetes') {
      if (!byName.has(name)) byName.set(name, svc);
    } else if (ns === namespace && enableServiceLinks) byName.set(name, svc);
  }
  return [...byName.values()].sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
}
