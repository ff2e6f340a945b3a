// What `kemu trace FROM TO` may name as TO: a pod (`name` or `ns/name`), a Service (`svc/NAME[:PORT]`,
// qualified as `svc/NS/NAME[:PORT]`), or an address (`IP`, `IP:PORT`, `[IPv6]:PORT`). With a port the
// probe is a TCP connect, without one an ICMP echo. A DNS name (`NAME[:PORT]` with a dot in NAME, or
// `NAME:PORT`) is resolved by the cluster DNS as the FROM pod would resolve it; `dns:NAME` traces that
// lookup alone (the pod's queries to the cluster DNS and their answers).
import { ipFamily } from '@kemu/ip';

export type TraceTarget =
  | { kind: 'pod'; namespace: string; name: string }
  | { kind: 'service'; namespace: string; name: string; port?: string }
  | { kind: 'ip'; ip: string; port?: number }
  | { kind: 'dns'; name: string; port?: number }
  | { kind: 'lookup'; name: string };

function port(s: string, what: string): number {
  if (!/^\d{1,5}$/.test(s) || Number(s) < 1 || Number(s) > 65535) throw new Error(`invalid port "${s}" in ${what}`);
  return Number(s);
}

const DNS_NAME = /^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$/i;

export function parseTraceTarget(to: string, namespace = 'default'): TraceTarget {
  if (to.startsWith('dns:')) {
    const name = to.slice('dns:'.length);
    if (!DNS_NAME.test(name) || name.length > 254) throw new Error(`invalid DNS name "${name}" in ${to}: use dns:NAME, e.g. dns:web.default`);
    return { kind: 'lookup', name };
  }
  if (to.startsWith('svc/') || to.startsWith('service/')) {
    const rest = to.slice(to.indexOf('/') + 1);
    const [path, p] = rest.split(':', 2) as [string, string | undefined];
    const parts = path.split('/');
    const [ns, name] = parts.length === 2 ? (parts as [string, string]) : [namespace, parts[0]!];
    if (parts.length > 2 || !name) throw new Error(`invalid Service "${to}": use svc/NAME[:PORT]`);
    if (p !== undefined && p === '') throw new Error(`invalid Service "${to}": empty port`);
    return { kind: 'service', namespace: ns, name, port: p };
  }
  if (ipFamily(to)) return { kind: 'ip', ip: to };
  const v6 = /^\[([^\]]+)\]:(\d+)$/.exec(to);
  if (v6 && ipFamily(v6[1]!) === 6) return { kind: 'ip', ip: v6[1]!, port: port(v6[2]!, to) };
  const v4 = /^([^:]+):([^:]*)$/.exec(to);
  if (v4 && ipFamily(v4[1]!) === 4) return { kind: 'ip', ip: v4[1]!, port: port(v4[2]!, to) };
  const parts = to.split('/');
  if (parts.length <= 2 && parts.every((x) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(x))) {
    const [ns, name] = parts.length === 2 ? (parts as [string, string]) : [namespace, parts[0]!];
    return { kind: 'pod', namespace: ns, name };
  }
  const dns = /^([a-z0-9_.-]+)(?::([^:]*))?$/i.exec(to);
  // A dotted name, or a one-label name with a port (a pod takes no port: `web:80` is what `curl web:80` in a
  // pod would resolve through its search path).
  if (dns && (dns[1]!.includes('.') || dns[2] !== undefined) && dns[1]!.split('.').slice(0, dns[1]!.endsWith('.') ? -1 : undefined).every((l) => l.length > 0 && l.length < 64))
    return { kind: 'dns', name: dns[1]!, port: dns[2] === undefined ? undefined : port(dns[2], to) };
  throw new Error(`invalid target "${to}": use a pod name, svc/NAME[:PORT], a DNS name (NAME:PORT, NAME.NS[:PORT]), IP or IP:PORT`);
}
