// The answer to one question, as CoreDNS's kubernetes plugin gives it: records for the cluster zone and the
// reverse zones, NXDOMAIN for a name that does not exist and NODATA (NOERROR, no answer) for a name that
// exists without records of the asked type, the zone's SOA in the authority section of both, and REFUSED
// for a name outside every zone this server serves. Pure: the server does the wire.
import type { Answer } from 'dns-packet';
import { ipFamily } from '@kemu/ip';
import type { ClusterIndex, EndpointEntry, PortEntry, ServiceEntry } from './cluster-index.js';
import { type ClusterName, REVERSE_ZONES, inZone, normalizeName, parseClusterName, reverseNameToIp } from './names.js';

/** The schema version `dns-version.<zone>` answers (kubernetes/dns specification). */
export const SCHEMA_VERSION = '1.1.0';

export interface ResolverOptions {
  /** The cluster domain, e.g. "cluster.local" (kubelet's --cluster-domain). */
  zone: string;
  /** TTL of every record and the SOA's minimum (default 5 s, as CoreDNS's kubernetes plugin). */
  ttl?: number;
  /** `pods` as CoreDNS: disabled, insecure (any address answers, kubeadm's default) or verified. */
  pods?: 'disabled' | 'insecure' | 'verified';
  /** The cluster DNS Service's addresses: `ns.dns.<zone>` answers with them. */
  nameserverIPs?: string[];
}

export type Rcode = 'NOERROR' | 'NXDOMAIN' | 'REFUSED' | 'NOTIMP' | 'FORMERR' | 'SERVFAIL';

export interface Resolution {
  rcode: Rcode;
  /** Authoritative (set for every name in a served zone). */
  authoritative: boolean;
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
}

export interface Question {
  name: string;
  type: string;
  class?: string;
}

/** What the name's lookup found: the records of every type it owns, or that it does not exist. */
type Found = { exists: false } | { exists: true; records: Answer[]; additionals?: Answer[] };

const NOTHING: Found = { exists: true, records: [] };

export class Resolver {
  readonly zone: string;
  private readonly ttl: number;

  constructor(
    private readonly o: ResolverOptions,
    private readonly index: () => ClusterIndex,
    /** The SOA serial: when the cluster's records last changed, in seconds. */
    private readonly serial: () => number = () => Math.floor(Date.now() / 1000),
  ) {
    this.zone = normalizeName(o.zone);
    this.ttl = o.ttl ?? 5;
  }

  /** The zone this server is authoritative for that holds `name`, if any. */
  zoneOf(name: string): string | undefined {
    if (inZone(name, this.zone)) return this.zone;
    return REVERSE_ZONES.find((z) => inZone(name, z));
  }

  resolve(q: Question): Resolution {
    const name = normalizeName(q.name);
    const zone = this.zoneOf(name);
    const empty = { answers: [], authorities: [], additionals: [] };
    if (!zone) return { rcode: 'REFUSED', authoritative: false, ...empty };
    if ((q.class ?? 'IN') !== 'IN') return { rcode: 'NOTIMP', authoritative: false, ...empty };
    const found = zone === this.zone ? this.lookupCluster(q.name, parseClusterName(name, zone)) : this.lookupReverse(q.name, zone, name);
    const soa = [this.soa(zone)];
    if (!found.exists) return { rcode: 'NXDOMAIN', authoritative: true, answers: [], authorities: soa, additionals: [] };
    // A CNAME owner answers every type with its CNAME.
    const cname = found.records.filter((r) => r.type === 'CNAME');
    const answers = cname.length > 0 ? cname : found.records.filter((r) => r.type === q.type);
    if (answers.length === 0) return { rcode: 'NOERROR', authoritative: true, answers: [], authorities: soa, additionals: [] };
    const additionals = q.type === 'SRV' || q.type === 'NS' ? (found.additionals ?? []) : [];
    return { rcode: 'NOERROR', authoritative: true, answers, authorities: [], additionals };
  }

  /** The SOA of a served zone, as CoreDNS writes it. */
  soa(zone: string): Answer {
    return {
      name: zone,
      type: 'SOA',
      class: 'IN',
      ttl: this.ttl,
      data: {
        mname: `ns.dns.${zone}`,
        rname: `hostmaster.${zone}`,
        serial: this.serial() >>> 0,
        refresh: 7200,
        retry: 1800,
        expire: 86400,
        minimum: this.ttl,
      },
    };
  }

  private rr(name: string, type: 'A' | 'AAAA' | 'CNAME' | 'PTR' | 'NS', data: string): Answer {
    return { name, type, class: 'IN', ttl: this.ttl, data };
  }

  private addressRecords(owner: string, ips: readonly string[]): Answer[] {
    return ips.map((ip) => this.rr(owner, ipFamily(ip) === 6 ? 'AAAA' : 'A', ip));
  }

  private lookupCluster(owner: string, n: ClusterName): Found {
    const idx = this.index();
    switch (n.kind) {
      case 'none':
        return { exists: false };
      case 'apex': {
        const ns = `ns.dns.${this.zone}`;
        return {
          exists: true,
          records: [this.soa(this.zone), this.rr(owner, 'NS', ns)].map((r) => ({ ...r, name: owner })),
          additionals: this.addressRecords(ns, this.o.nameserverIPs ?? []),
        };
      }
      case 'dns-version':
        return { exists: true, records: [{ name: owner, type: 'TXT', class: 'IN', ttl: this.ttl, data: SCHEMA_VERSION }] };
      case 'nameserver':
        return (this.o.nameserverIPs ?? []).length > 0 ? { exists: true, records: this.addressRecords(owner, this.o.nameserverIPs!) } : { exists: false };
      case 'branch':
        return NOTHING;
      case 'namespace':
        return idx.namespaces.has(n.namespace) ? NOTHING : { exists: false };
      case 'pod': {
        const mode = this.o.pods ?? 'insecure';
        if (mode === 'disabled') return { exists: false };
        if (mode === 'verified' && !idx.podIPs.has(`${n.namespace}/${n.ip}`)) return { exists: false };
        if (mode === 'insecure' && !idx.namespaces.has(n.namespace)) return { exists: false };
        return { exists: true, records: this.addressRecords(owner, [n.ip]) };
      }
      case 'service':
        return this.lookupService(owner, n, idx);
    }
  }

  private lookupService(owner: string, n: Extract<ClusterName, { kind: 'service' }>, idx: ClusterIndex): Found {
    const svc = idx.services.get(`${n.namespace}/${n.service}`);
    if (!svc) return { exists: false };
    const fqdn = `${svc.name}.${svc.namespace}.svc.${this.zone}`;
    if (svc.externalName) {
      // Only the Service's own name is an alias; nothing lives below it.
      if (n.endpoint || n.port) return { exists: false };
      return { exists: true, records: [this.rr(owner, 'CNAME', svc.externalName)] };
    }
    if (n.endpoint) {
      const eps = svc.endpoints.filter((e) => e.label === n.endpoint);
      if (eps.length === 0) return { exists: false };
      return { exists: true, records: this.addressRecords(owner, eps.map((e) => e.ip)) };
    }
    const matches = (p: PortEntry) => n.port === undefined || (p.name === n.port && p.protocol === n.protocol);
    const addresses = svc.headless ? svc.endpoints.map((e) => e.ip) : svc.clusterIPs;
    if (n.port !== undefined) {
      const named = svc.ports.some(matches) || (svc.headless && svc.endpoints.some((e) => e.ports.some(matches)));
      if (!named) return { exists: false };
    }
    const srv = this.srvRecords(owner, fqdn, svc, matches);
    return { exists: true, records: [...this.addressRecords(owner, addresses), ...srv.records], additionals: srv.additionals };
  }

  /**
   * SRV records: a ClusterIP Service's ports point at its own name; a headless Service's at each ready
   * endpoint's name. Weights split 100 evenly among the records, as CoreDNS does.
   */
  private srvRecords(owner: string, fqdn: string, svc: ServiceEntry, matches: (p: PortEntry) => boolean): { records: Answer[]; additionals: Answer[] } {
    const targets: { target: string; port: number; ips: string[] }[] = [];
    if (svc.headless) {
      for (const e of svc.endpoints as EndpointEntry[])
        for (const p of e.ports) if (matches(p)) targets.push({ target: `${e.label}.${fqdn}`, port: p.port, ips: [e.ip] });
    } else {
      for (const p of svc.ports) if (matches(p)) targets.push({ target: fqdn, port: p.port, ips: svc.clusterIPs });
    }
    const weight = targets.length > 0 ? Math.floor(100 / targets.length) : 0;
    const records: Answer[] = targets.map((t) => ({ name: owner, type: 'SRV', class: 'IN', ttl: this.ttl, data: { priority: 0, weight, port: t.port, target: t.target } }));
    const additionals: Answer[] = [];
    const added = new Set<string>();
    for (const t of targets) {
      if (added.has(t.target)) continue;
      added.add(t.target);
      additionals.push(...this.addressRecords(t.target, t.ips));
    }
    return { records, additionals };
  }

  private lookupReverse(owner: string, zone: string, name: string): Found {
    const ip = reverseNameToIp(name);
    if (!ip) return name === zone ? { exists: true, records: [this.soa(zone)].map((r) => ({ ...r, name: owner })) } : { exists: false };
    const names = this.index().reverse.get(ip);
    if (!names) return { exists: false };
    return { exists: true, records: names.map((t) => this.rr(owner, 'PTR', t)) };
  }
}
