// networking.k8s.io/v1 NetworkPolicy as iptables filter rules for one node's pods, the way a CNI's
// policy agent enforces it: a pod selected by a policy of a type (Ingress, Egress) is isolated for that
// direction; a packet passes if any rule of any such policy allows it, else it is dropped with a comment
// naming the policies. Replies of allowed connections pass by conntrack. Rules are checked in the node's
// FORWARD path, which every pod packet crosses (routed, or bridged with br_netfilter). Each address family
// has its own rule set, as iptables and ip6tables keep separate tables: a dual-stack pod is matched by its
// address of that family, and an ipBlock only by the family its CIDR is of.
import { createHash } from 'node:crypto';
import { matchLabels, type NetworkPolicy, type NetworkPolicyPeer, type NetworkPolicyPort, type Pod } from '@kemu/core';
import { type Family, ipFamily } from '@kemu/ip';

export interface NamespaceInfo {
  name: string;
  labels: Record<string, string>;
}

export interface PolicyInput {
  policies: NetworkPolicy[];
  pods: Pod[];
  namespaces: NamespaceInfo[];
  nodeName: string;
}

export interface PolicyRuleSet {
  filter: string[];
  chains: string[];
}

export const POLICY_CHAIN = 'KEMU-POLICY';
/** Chains made per pod or ipBlock; any not in the desired rules is deleted on sync. */
export const PER_POD_CHAIN = /^KEMU-NP-[IEB]-[0-9A-F]{12}$/;
const ALLOW = '0x10000';

const hash = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 12).toUpperCase();
const q = (s: string) => `"${s.replace(/(["\\])/g, '\\$1')}"`;

/** The pod's address of `family` (status.podIPs, or podIP), when it has its own network and still runs. */
export function podIPOf(p: Pod, family: Family): string | undefined {
  if (p.spec?.hostNetwork) return undefined;
  if (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') return undefined;
  const ips = [...(p.status?.podIPs ?? []).map((x) => x.ip), p.status?.podIP];
  return ips.find((ip): ip is string => !!ip && ipFamily(ip) === family);
}

function policyTypes(np: NetworkPolicy): { ingress: boolean; egress: boolean } {
  const t = np.spec.policyTypes;
  if (t?.length) return { ingress: t.includes('Ingress'), egress: t.includes('Egress') };
  return { ingress: true, egress: (np.spec.egress?.length ?? 0) > 0 };
}

/** The pod addresses a peer selects, or an ipBlock. */
function peerMatches(peer: NetworkPolicyPeer, policyNs: string, input: PolicyInput, family: Family): { ips: string[] } | { cidr: string; except: string[] } {
  if (peer.ipBlock) {
    // A block of the other family selects nothing here.
    if (ipFamily(peer.ipBlock.cidr.split('/')[0]!) !== family) return { ips: [] };
    return { cidr: peer.ipBlock.cidr, except: (peer.ipBlock.except ?? []).filter((e) => ipFamily(e.split('/')[0]!) === family) };
  }
  const nsOk = (ns: string) => {
    if (!peer.namespaceSelector) return ns === policyNs;
    const info = input.namespaces.find((n) => n.name === ns);
    return matchLabels(peer.namespaceSelector, { 'kubernetes.io/metadata.name': ns, ...(info?.labels ?? {}) });
  };
  const ips: string[] = [];
  for (const p of input.pods) {
    const ip = podIPOf(p, family);
    if (!ip || !nsOk(p.metadata.namespace ?? 'default')) continue;
    if (peer.podSelector && !matchLabels(peer.podSelector, p.metadata.labels ?? {})) continue;
    ips.push(ip);
  }
  return { ips: [...new Set(ips)].sort() };
}

/** `-p proto --dport ...` for a port spec; named ports resolve against `namedOn` (the pod that serves it). */
function portMatch(port: NetworkPolicyPort, namedOn: Pod | undefined): string | null {
  const proto = (port.protocol ?? 'TCP').toLowerCase();
  if (port.port === undefined) return `-p ${proto}`;
  let n: number | undefined;
  if (typeof port.port === 'number') n = port.port;
  else {
    for (const c of namedOn?.spec?.containers ?? [])
      for (const cp of c.ports ?? []) if (cp.name === port.port && (cp.protocol ?? 'TCP').toLowerCase() === proto) n = cp.containerPort;
    if (n === undefined) return null; // a name the pod does not serve matches nothing
  }
  const range = port.endPort !== undefined && typeof port.port === 'number' ? `${n}:${port.endPort}` : `${n}`;
  return `-p ${proto} -m ${proto} --dport ${range}`;
}

/** The filter rules of one address family (4 for iptables, 6 for ip6tables). */
export function buildPolicyRules(input: PolicyInput, family: Family = 4): PolicyRuleSet {
  const host = family === 4 ? 32 : 128;
  const podIP = (p: Pod) => podIPOf(p, family);
  const filter: string[] = [
    `-A ${POLICY_CHAIN} -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment "replies of allowed connections" -j ACCEPT`,
  ];
  const chains = new Set<string>([POLICY_CHAIN]);
  const jumps: string[] = [];
  const body: string[] = [];
  const local = input.pods.filter((p) => p.spec?.nodeName === input.nodeName && podIP(p));
  for (const pod of local) {
    const ns = pod.metadata.namespace ?? 'default';
    const ip = podIP(pod)!;
    const selecting = input.policies.filter(
      (np) => (np.metadata.namespace ?? 'default') === ns && matchLabels(np.spec.podSelector ?? {}, pod.metadata.labels ?? {}),
    );
    for (const dir of ['ingress', 'egress'] as const) {
      const pols = selecting.filter((np) => policyTypes(np)[dir]);
      if (pols.length === 0) continue;
      const chain = `KEMU-NP-${dir === 'ingress' ? 'I' : 'E'}-${hash(`${ns}/${pod.metadata.name}/${dir}`)}`;
      chains.add(chain);
      jumps.push(`-A ${POLICY_CHAIN} ${dir === 'ingress' ? '-d' : '-s'} ${ip}/${host} -m comment --comment ${q(`${dir} of ${ns}/${pod.metadata.name}`)} -j ${chain}`);
      body.push(`-A ${chain} -j MARK --set-xmark 0x0/${ALLOW}`);
      for (const np of pols) {
        const name = `${ns}/${np.metadata.name}`;
        const rules = (dir === 'ingress' ? np.spec.ingress : np.spec.egress) ?? [];
        rules.forEach((rule, i) => {
          const peers = (dir === 'ingress' ? (rule as { from?: NetworkPolicyPeer[] }).from : (rule as { to?: NetworkPolicyPeer[] }).to) ?? [];
          const comment = `-m comment --comment ${q(`${name} ${dir} rule ${i}`)}`;
          const allow = `-j MARK --set-xmark ${ALLOW}/${ALLOW}`;
          const side = dir === 'ingress' ? '-s' : '-d';
          // Targets of the rule's ports: ingress ports are the selected pod's; egress ports the peer's.
          const portsFor = (server: Pod | undefined) => {
            if (!rule.ports?.length) return [''];
            return rule.ports.map((p) => portMatch(p, server)).filter((x): x is string => x !== null).map((x) => ` ${x}`);
          };
          if (peers.length === 0) {
            for (const pm of portsFor(dir === 'ingress' ? pod : undefined)) body.push(`-A ${chain}${pm} ${comment} ${allow}`);
            return;
          }
          for (const peer of peers) {
            const m = peerMatches(peer, ns, input, family);
            if ('cidr' in m) {
              const sub = `KEMU-NP-B-${hash(`${chain}/${name}/${i}/${m.cidr}/${m.except.join(',')}`)}`;
              chains.add(sub);
              for (const pm of portsFor(dir === 'ingress' ? pod : undefined)) body.push(`-A ${chain} ${side} ${m.cidr}${pm} ${comment} -j ${sub}`);
              for (const ex of m.except) body.push(`-A ${sub} ${side} ${ex} -m comment --comment ${q(`${name} ${dir} rule ${i} except ${ex}`)} -j RETURN`);
              body.push(`-A ${sub} ${allow}`);
              continue;
            }
            for (const peerIP of m.ips) {
              const server = dir === 'ingress' ? pod : input.pods.find((p) => podIP(p) === peerIP);
              for (const pm of portsFor(server)) body.push(`-A ${chain} ${side} ${peerIP}/${host}${pm} ${comment} ${allow}`);
            }
          }
        });
      }
      body.push(`-A ${chain} -m mark --mark ${ALLOW}/${ALLOW} -j RETURN`);
      const names = pols.map((np) => `${ns}/${np.metadata.name}`).join(', ');
      body.push(`-A ${chain} -m comment --comment ${q(`NetworkPolicy ${names}: no ${dir} rule allows this`)} -j DROP`);
    }
  }
  // Egress of the sender first, then ingress of the receiver: both must allow a new connection.
  jumps.sort((a, b) => Number(a.includes(' -d ')) - Number(b.includes(' -d ')));
  for (const l of jumps) filter.push(l);
  for (const l of body) filter.push(l);
  return { filter, chains: [...chains] };
}

/** What iptables-save text `current` shows of the filter table: its chains, and whether FORWARD jumps to the agent's chain. */
function filterTableOf(current: string): { chains: Set<string>; jump: boolean } {
  const chains = new Set<string>();
  let jump = false;
  let inFilter = false;
  for (const l of current.split('\n')) {
    if (l.startsWith('*')) inFilter = l === '*filter';
    else if (inFilter && l.startsWith(':')) chains.add(l.slice(1).split(' ')[0]!);
    else if (inFilter && l.startsWith('-A FORWARD ') && l.endsWith(`-j ${POLICY_CHAIN}`)) jump = true;
  }
  return { chains, jump };
}

/**
 * Whether the filter table in `current` (iptables-save text) holds anything of the agent's: its chain, a
 * per-pod chain or FORWARD's jump. With no NetworkPolicy and none of these there is nothing to enforce and
 * nothing to clean up, so the agent leaves the table alone (a jump to an empty chain changes no packet's fate).
 */
export function holdsPolicyRules(current: string): boolean {
  const { chains, jump } = filterTableOf(current);
  return jump || [...chains].some((c) => c === POLICY_CHAIN || PER_POD_CHAIN.test(c));
}

/**
 * iptables-restore input (`--noflush`) for the filter table: the policy chains refilled, per-pod chains
 * that `current` still holds but the policies no longer need deleted, and FORWARD's jump ensured.
 */
export function policyRestoreInput(rules: PolicyRuleSet, current: string): string {
  const { chains: have, jump } = filterTableOf(current);
  const stale = [...have].filter((c) => PER_POD_CHAIN.test(c) && !rules.chains.includes(c));
  const out = ['*filter', ...rules.chains.map((c) => `:${c} - [0:0]`), ...stale.map((c) => `:${c} - [0:0]`)];
  if (!jump) out.push(`-I FORWARD 1 -m comment --comment "kemu network policy" -j ${POLICY_CHAIN}`);
  for (const l of rules.filter) out.push(l);
  for (const c of stale) out.push(`-X ${c}`);
  out.push('COMMIT');
  return `${out.join('\n')}\n`;
}
