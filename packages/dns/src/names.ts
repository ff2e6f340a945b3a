// The Kubernetes DNS schema's names (kubernetes/dns docs/specification.md, as CoreDNS's kubernetes plugin
// reads them): what a query name inside the cluster zone asks for, and the reverse-lookup names. Pure.
import { formatIpAddr, parseIPv4, parseIPv6, parseIpAddr } from '@kemu/ip';

/** What a name inside the cluster zone refers to. */
export type ClusterName =
  /** The zone itself (`cluster.local`). */
  | { kind: 'apex' }
  /** `dns-version.<zone>`, the schema's version record. */
  | { kind: 'dns-version' }
  /** `ns.dns.<zone>`, the name server the apex NS record names. */
  | { kind: 'nameserver' }
  /** `svc.<zone>` or `pod.<zone>`: names that exist only as parents. */
  | { kind: 'branch'; branch: 'svc' | 'pod' }
  /** `<ns>.svc.<zone>` or `<ns>.pod.<zone>`. */
  | { kind: 'namespace'; branch: 'svc' | 'pod'; namespace: string }
  /**
   * `<svc>.<ns>.svc.<zone>`, `<endpoint>.<svc>.<ns>.svc.<zone>` or `_<port>._<proto>.<svc>.<ns>.svc.<zone>`.
   * `port` and `protocol` are lower case, without their underscores.
   */
  | { kind: 'service'; namespace: string; service: string; endpoint?: string; port?: string; protocol?: string }
  /** `<a-b-c-d>.<ns>.pod.<zone>` (IPv6 with `-` for `:`); `ip` is canonical. */
  | { kind: 'pod'; namespace: string; ip: string }
  /** Inside the zone, but no name of the schema: it cannot exist (NXDOMAIN). */
  | { kind: 'none' };

/** Lower case, without the trailing dot: the form names are compared in. */
export function normalizeName(name: string): string {
  const n = name.toLowerCase();
  return n.endsWith('.') ? n.slice(0, -1) : n;
}

/** True when `name` is `zone` or below it (both normalized). */
export function inZone(name: string, zone: string): boolean {
  return zone === '' || name === zone || name.endsWith(`.${zone}`);
}

/** The labels of `name` left of `zone`, in order; [] for the apex. `name` must be in the zone. */
function labelsBelow(name: string, zone: string): string[] {
  if (name === zone) return [];
  const rest = zone === '' ? name : name.slice(0, -(zone.length + 1));
  return rest.split('.');
}

/** Reads a name (normalized, inside `zone`) as the Kubernetes DNS schema does. */
export function parseClusterName(name: string, zone: string): ClusterName {
  const l = labelsBelow(name, zone);
  if (l.length === 0) return { kind: 'apex' };
  if (l.some((x) => x === '')) return { kind: 'none' };
  if (l.length === 1 && l[0] === 'dns-version') return { kind: 'dns-version' };
  if (l.length === 2 && l[0] === 'ns' && l[1] === 'dns') return { kind: 'nameserver' };
  const branch = l[l.length - 1];
  if (branch !== 'svc' && branch !== 'pod') return { kind: 'none' };
  if (l.length === 1) return { kind: 'branch', branch };
  const namespace = l[l.length - 2];
  if (l.length === 2) return { kind: 'namespace', branch, namespace };
  if (branch === 'pod') {
    if (l.length !== 3) return { kind: 'none' };
    const ip = podLabelToIp(l[0]);
    return ip ? { kind: 'pod', namespace, ip } : { kind: 'none' };
  }
  const service = l[l.length - 3];
  if (l.length === 3) return { kind: 'service', namespace, service };
  if (l.length === 4) return l[0].startsWith('_') ? { kind: 'none' } : { kind: 'service', namespace, service, endpoint: l[0] };
  if (l.length === 5) {
    const [port, protocol] = l;
    if (!port.startsWith('_') || !protocol.startsWith('_') || port.length < 2 || protocol.length < 2) return { kind: 'none' };
    return { kind: 'service', namespace, service, port: port.slice(1), protocol: protocol.slice(1) };
  }
  return { kind: 'none' };
}

/** A pod label's address: `10-244-1-5` or `fd00--5` (IPv6 with `-` for `:`). */
export function podLabelToIp(label: string): string | undefined {
  const v4 = label.split('-');
  if (v4.length === 4 && parseIPv4(v4.join('.'))) return v4.join('.');
  const v6 = label.replace(/-/g, ':');
  const b = parseIPv6(v6);
  return b ? formatIpAddr({ family: 6, bytes: b }) : undefined;
}

/** The label the schema gives an address: dots (IPv4) or colons (IPv6) as dashes. */
export function ipToLabel(ip: string): string {
  const a = parseIpAddr(ip);
  const text = a ? formatIpAddr(a) : ip;
  return text.replace(/[.:]/g, '-');
}

/** The reverse zones a cluster DNS server answers PTR queries in. */
export const REVERSE_ZONES = ['in-addr.arpa', 'ip6.arpa'] as const;

/**
 * The address a reverse name stands for (`5.1.244.10.in-addr.arpa` is 10.244.1.5; ip6.arpa has 32 nibbles),
 * or undefined for a name above a whole address or not a reverse name.
 */
export function reverseNameToIp(name: string): string | undefined {
  if (name.endsWith('.in-addr.arpa')) {
    const parts = name.slice(0, -'.in-addr.arpa'.length).split('.');
    if (parts.length !== 4 || !parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p))) return undefined;
    const ip = parts.reverse().join('.');
    return parseIPv4(ip) ? ip : undefined;
  }
  if (name.endsWith('.ip6.arpa')) {
    const nibbles = name.slice(0, -'.ip6.arpa'.length).split('.');
    if (nibbles.length !== 32 || !nibbles.every((n) => /^[0-9a-f]$/.test(n))) return undefined;
    const hex = nibbles.reverse().join('');
    const b = parseIPv6(hex.match(/.{4}/g)!.join(':'));
    return b ? formatIpAddr({ family: 6, bytes: b }) : undefined;
  }
  return undefined;
}

/** The reverse name of an address (no trailing dot). */
export function ipToReverseName(ip: string): string {
  const a = parseIpAddr(ip);
  if (!a) throw new Error(`not an IP address: ${JSON.stringify(ip)}`);
  if (a.family === 4) return `${[...a.bytes].reverse().join('.')}.in-addr.arpa`;
  const nibbles: string[] = [];
  for (const byte of a.bytes) nibbles.push((byte >> 4).toString(16), (byte & 15).toString(16));
  return `${nibbles.reverse().join('.')}.ip6.arpa`;
}
