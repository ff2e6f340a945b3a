// What the policies mean, evaluated directly from the objects (no rules, no packets): whether a new
// connection from one pod to another on a port is allowed. `kemu policy matrix --expect` compares the
// datapath's verdicts with this, so a disagreement shows a bug in either.
import { matchLabels, type NetworkPolicy, type NetworkPolicyPeer, type NetworkPolicyPort, type Pod } from '@kemu/core';
import { type Family, parseCidr, parseIP, contains, ipFamily } from '@kemu/ip';
import { type NamespaceInfo, podIPOf } from './policy-rules.js';

export interface Connection {
  from: Pod;
  to: Pod;
  /** Absent: any protocol and port (an ICMP echo). */
  port?: number;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
  /** The address family the connection uses (a dual-stack pod has one address of each); default the `to` pod's primary. */
  family?: Family;
}

function types(np: NetworkPolicy) {
  const t = np.spec.policyTypes;
  return t?.length ? { ingress: t.includes('Ingress'), egress: t.includes('Egress') } : { ingress: true, egress: (np.spec.egress?.length ?? 0) > 0 };
}

function inBlock(ip: string, cidr: string): boolean {
  const c = parseCidr(cidr);
  const a = parseIP(ip);
  return !!c && !!a && contains(c, a.family, a.value);
}

function peerSelects(peer: NetworkPolicyPeer, policyNs: string, other: Pod, namespaces: NamespaceInfo[], family: Family): boolean {
  // An ipBlock holds addresses of one family: it selects the peer only by its address of that family.
  const ip = podIPOf(other, family) ?? '';
  if (peer.ipBlock) return inBlock(ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((e) => inBlock(ip, e));
  const ns = other.metadata.namespace ?? 'default';
  if (peer.namespaceSelector) {
    const labels = { 'kubernetes.io/metadata.name': ns, ...(namespaces.find((n) => n.name === ns)?.labels ?? {}) };
    if (!matchLabels(peer.namespaceSelector, labels)) return false;
  } else if (ns !== policyNs) return false;
  return !peer.podSelector || matchLabels(peer.podSelector, other.metadata.labels ?? {});
}

function portAllows(p: NetworkPolicyPort, c: Connection, server: Pod): boolean {
  if (c.port === undefined) return false; // a rule with ports never admits ICMP
  if ((p.protocol ?? 'TCP') !== (c.protocol ?? 'TCP')) return false;
  if (p.port === undefined) return true;
  if (typeof p.port === 'number') return c.port >= p.port && c.port <= (p.endPort ?? p.port);
  return (server.spec?.containers ?? []).some((k) =>
    (k.ports ?? []).some((cp) => cp.name === p.port && cp.containerPort === c.port && (cp.protocol ?? 'TCP') === (c.protocol ?? 'TCP')),
  );
}

function direction(dir: 'ingress' | 'egress', subject: Pod, other: Pod, c: Connection, policies: NetworkPolicy[], namespaces: NamespaceInfo[]): boolean {
  const ns = subject.metadata.namespace ?? 'default';
  const selecting = policies.filter(
    (np) => (np.metadata.namespace ?? 'default') === ns && types(np)[dir] && matchLabels(np.spec.podSelector ?? {}, subject.metadata.labels ?? {}),
  );
  if (selecting.length === 0) return true;
  return selecting.some((np) =>
    ((dir === 'ingress' ? np.spec.ingress : np.spec.egress) ?? []).some((rule) => {
      const peers = (dir === 'ingress' ? (rule as { from?: NetworkPolicyPeer[] }).from : (rule as { to?: NetworkPolicyPeer[] }).to) ?? [];
      const peerOk = peers.length === 0 || peers.some((p) => peerSelects(p, ns, other, namespaces, familyOf(c)));
      const portOk = !rule.ports?.length || rule.ports.some((p) => portAllows(p, c, c.to));
      return peerOk && portOk;
    }),
  );
}

function familyOf(c: Connection): Family {
  return c.family ?? (ipFamily(c.to.status?.podIP ?? '') || 4);
}

/** Whether the policies allow a new connection `c` (egress of the sender and ingress of the receiver). */
export function allowed(c: Connection, policies: NetworkPolicy[], namespaces: NamespaceInfo[]): boolean {
  return direction('egress', c.from, c.to, c, policies, namespaces) && direction('ingress', c.to, c.from, c, policies, namespaces);
}
