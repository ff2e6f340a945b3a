// kube-proxy's iptables mode: the filter and nat rules for a node, in the layout upstream generates, as
// iptables-restore input. ClusterIP: KUBE-SERVICES -> KUBE-SVC-* -> KUBE-SEP-* (statistic probabilities
// 1/n, 1/(n-1), ..., then the last one unconditionally) -> DNAT. NodePort, external and load-balancer IPs:
// KUBE-EXT-* (masquerade, or for externalTrafficPolicy Local only this node's endpoints via KUBE-SVL-*).
// sessionAffinity ClientIP: the recent match. No usable endpoints: REJECT in filter; Local policies with no
// local endpoint: DROP. Packets to be masqueraded carry the 0x4000 mark to KUBE-POSTROUTING.
import {
  endpointChain,
  externalChain,
  PER_SERVICE_CHAIN,
  serviceChain,
  serviceLocalChain,
} from './chain-names.js';
import type { EndpointInfo, ServicePortInfo } from './service-ports.js';

export interface NodeContext {
  nodeName: string;
  /** The cluster's pod network: Service traffic from outside it is masqueraded (kube-proxy --cluster-cidr). */
  clusterCIDR?: string;
  /** kube-proxy's --masquerade-bit (default 14: mark 0x4000). */
  masqueradeBit?: number;
}

export interface RuleSet {
  filter: string[];
  nat: string[];
  /** Chains these rules declare in each table (the per-Service ones are deleted when no longer here). */
  chains: { filter: string[]; nat: string[] };
}

/** Jumps from the built-in chains into kube-proxy's own, which kube-proxy ensures exist (iptables -C/-I). */
export const BASE_JUMPS: { table: 'filter' | 'nat'; chain: string; rule: string }[] = [
  { table: 'filter', chain: 'INPUT', rule: '-m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS' },
  { table: 'filter', chain: 'INPUT', rule: '-m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES' },
  { table: 'filter', chain: 'FORWARD', rule: '-m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD' },
  { table: 'filter', chain: 'FORWARD', rule: '-m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' },
  { table: 'filter', chain: 'FORWARD', rule: '-m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES' },
  { table: 'filter', chain: 'OUTPUT', rule: '-m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES' },
  { table: 'nat', chain: 'PREROUTING', rule: '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES' },
  { table: 'nat', chain: 'OUTPUT', rule: '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES' },
  { table: 'nat', chain: 'POSTROUTING', rule: '-m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING' },
];

const q = (s: string) => (/^[A-Za-z0-9_./:=,+@%-]+$/.test(s) ? s : `"${s}"`);

/** The endpoints a chain may use: ready ones, else serving-and-terminating ones (graceful termination). */
function usable(eps: EndpointInfo[]): EndpointInfo[] {
  const ready = eps.filter((e) => e.ready);
  return ready.length ? ready : eps.filter((e) => e.serving && e.terminating);
}

/** The probability rule i of n carries, as kube-proxy prints it. */
export function probability(i: number, n: number): string {
  return (1 / (n - i)).toFixed(10);
}

/** One service port's rules: its lines in the shared chains and its own chains (KUBE-SVC/SVL/EXT/SEP). */
export interface ServiceRules {
  /** Lines in filter's KUBE-SERVICES and KUBE-EXTERNAL-SERVICES. */
  filter: string[];
  /** Lines in nat's KUBE-SERVICES. */
  natServices: string[];
  /** Lines in nat's KUBE-NODEPORTS. */
  natNodePorts: string[];
  /** The rules of the service port's own chains. */
  nat: string[];
  /** The service port's own chains. */
  chains: string[];
}

const masqueradeMark = (node: NodeContext) => `0x${(1 << (node.masqueradeBit ?? 14)).toString(16)}`;

export function serviceRules(sp: ServicePortInfo, node: NodeContext): ServiceRules {
  const filter: string[] = [];
  const nat: string[] = [];
  const natServices: string[] = [];
  const natNodePorts: string[] = [];
  const perService: string[] = [];
  const proto = sp.protocol;
  const svc = serviceChain(sp.name, proto);
  const svl = serviceLocalChain(sp.name, proto);
  const ext = externalChain(sp.name, proto);
  const all = usable(sp.endpoints);
  const local = all.filter((e) => e.nodeName === node.nodeName);
  const hasExternal = sp.nodePort !== undefined || sp.externalIPs.length > 0 || sp.loadBalancerIPs.length > 0;
  const clusterEps = sp.internalPolicyLocal ? local : all;
  const externalEps = sp.externalPolicyLocal ? local : all;
  // Cluster IP.
  if (clusterEps.length === 0) {
    const why = sp.internalPolicyLocal && all.length ? 'has no local endpoints' : 'has no endpoints';
    const target = why === 'has no endpoints' ? 'REJECT --reject-with icmp-port-unreachable' : 'DROP';
    filter.push(
      `-A KUBE-SERVICES -d ${sp.clusterIP}/32 -p ${proto} -m comment --comment ${q(`${sp.name} ${why}`)} -m ${proto} --dport ${sp.port} -j ${target}`,
    );
  } else {
    natServices.push(`-A KUBE-SERVICES -d ${sp.clusterIP}/32 -p ${proto} -m comment --comment ${q(`${sp.name} cluster IP`)} -m ${proto} --dport ${sp.port} -j ${sp.internalPolicyLocal ? svl : svc}`);
  }

  // External destinations: node ports, external IPs, load-balancer IPs.
  if (hasExternal) {
    if (externalEps.length === 0) {
      const why = sp.externalPolicyLocal && all.length ? 'has no local endpoints' : 'has no endpoints';
      const target = why === 'has no endpoints' ? 'REJECT --reject-with icmp-port-unreachable' : 'DROP';
      for (const ip of [...sp.externalIPs, ...sp.loadBalancerIPs])
        filter.push(`-A KUBE-EXTERNAL-SERVICES -d ${ip}/32 -p ${proto} -m comment --comment ${q(`${sp.name} ${why}`)} -m ${proto} --dport ${sp.port} -j ${target}`);
      if (sp.nodePort !== undefined)
        filter.push(`-A KUBE-EXTERNAL-SERVICES -p ${proto} -m comment --comment ${q(`${sp.name} ${why}`)} -m addrtype --dst-type LOCAL -m ${proto} --dport ${sp.nodePort} -j ${target}`);
    }
    if (externalEps.length > 0 || (sp.externalPolicyLocal && all.length > 0)) {
      for (const ip of sp.externalIPs)
        natServices.push(`-A KUBE-SERVICES -d ${ip}/32 -p ${proto} -m comment --comment ${q(`${sp.name} external IP`)} -m ${proto} --dport ${sp.port} -j ${ext}`);
      for (const ip of sp.loadBalancerIPs)
        natServices.push(`-A KUBE-SERVICES -d ${ip}/32 -p ${proto} -m comment --comment ${q(`${sp.name} loadbalancer IP`)} -m ${proto} --dport ${sp.port} -j ${ext}`);
      if (sp.nodePort !== undefined)
        natNodePorts.push(`-A KUBE-NODEPORTS -p ${proto} -m comment --comment ${q(sp.name)} -m ${proto} --dport ${sp.nodePort} -j ${ext}`);
      perService.push(ext);
      if (sp.externalPolicyLocal) {
        // Pods and the node itself may use any endpoint; traffic from outside keeps its source.
        if (node.clusterCIDR)
          nat.push(`-A ${ext} -s ${node.clusterCIDR} -m comment --comment ${q(`pod traffic for ${sp.name} external destinations`)} -j ${svc}`);
        nat.push(`-A ${ext} -m comment --comment ${q(`masquerade LOCAL traffic for ${sp.name} external destinations`)} -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ`);
        nat.push(`-A ${ext} -m comment --comment ${q(`route LOCAL traffic for ${sp.name} external destinations`)} -m addrtype --src-type LOCAL -j ${svc}`);
        nat.push(`-A ${ext} -j ${svl}`);
      } else {
        nat.push(`-A ${ext} -m comment --comment ${q(`masquerade traffic for ${sp.name} external destinations`)} -j KUBE-MARK-MASQ`);
        nat.push(`-A ${ext} -j ${svc}`);
      }
    }
  }

  // The endpoint chains: KUBE-SVC-* over every usable endpoint, KUBE-SVL-* over this node's.
  const needSvc = (!sp.internalPolicyLocal && clusterEps.length > 0) || (sp.externalPolicyLocal && all.length > 0 && hasExternal) || (!sp.externalPolicyLocal && hasExternal && externalEps.length > 0);
  const needSvl = (sp.internalPolicyLocal && clusterEps.length > 0) || (sp.externalPolicyLocal && hasExternal);
  const seps = new Map<EndpointInfo, string>();
  const sepOf = (e: EndpointInfo) => {
    let c = seps.get(e);
    if (!c) seps.set(e, (c = endpointChain(sp.name, proto, `${e.ip}:${e.port}`)));
    return c;
  };
  const lb = (chain: string, eps: EndpointInfo[]) => {
    perService.push(chain);
    if (chain === svc && node.clusterCIDR)
      nat.push(`-A ${chain} ! -s ${node.clusterCIDR} -d ${sp.clusterIP}/32 -p ${proto} -m comment --comment ${q(`${sp.name} cluster IP`)} -m ${proto} --dport ${sp.port} -j KUBE-MARK-MASQ`);
    if (sp.sessionAffinitySeconds !== undefined)
      for (const e of eps)
        nat.push(`-A ${chain} -m comment --comment ${q(`${sp.name} -> ${e.ip}:${e.port}`)} -m recent --rcheck --seconds ${sp.sessionAffinitySeconds} --reap --name ${sepOf(e)} --mask 255.255.255.255 --rsource -j ${sepOf(e)}`);
    eps.forEach((e, i) => {
      const stat = i < eps.length - 1 ? ` -m statistic --mode random --probability ${probability(i, eps.length)}` : '';
      nat.push(`-A ${chain} -m comment --comment ${q(`${sp.name} -> ${e.ip}:${e.port}`)}${stat} -j ${sepOf(e)}`);
    });
  };
  if (needSvc) lb(svc, all);
  if (needSvl) lb(svl, local);
  for (const [e, chain] of seps) {
    perService.push(chain);
    nat.push(`-A ${chain} -s ${e.ip}/32 -m comment --comment ${q(sp.name)} -j KUBE-MARK-MASQ`);
    if (sp.sessionAffinitySeconds !== undefined)
      nat.push(`-A ${chain} -p ${proto} -m comment --comment ${q(sp.name)} -m recent --set --name ${chain} --mask 255.255.255.255 --rsource -m ${proto} -j DNAT --to-destination ${e.ip}:${e.port}`);
    else nat.push(`-A ${chain} -p ${proto} -m comment --comment ${q(sp.name)} -m ${proto} -j DNAT --to-destination ${e.ip}:${e.port}`);
  }

  return { filter, natServices, natNodePorts, nat, chains: [...new Set(perService)] };
}

export function buildRules(ports: ServicePortInfo[], node: NodeContext): RuleSet {
  return assembleRules(
    ports.map((sp) => serviceRules(sp, node)),
    node,
  );
}

/**
 * The node's rule set from every service port's rules. With `only`, the per-service chains and their rules
 * are those of `only` alone (upstream's partial sync: the shared chains are rewritten whole, a service port's
 * own chains only when it changed; the others are left as they are).
 */
export function assembleRules(parts: Iterable<ServiceRules>, node: NodeContext, only?: Iterable<ServiceRules>): RuleSet {
  const mark = masqueradeMark(node);
  const filter: string[] = [
    `-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP`,
    `-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark ${mark}/${mark} -j ACCEPT`,
    `-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
  ];
  const nat: string[] = [];
  const natNodePorts: string[] = [];
  const base = [
    `-A KUBE-POSTROUTING -m mark ! --mark ${mark}/${mark} -j RETURN`,
    `-A KUBE-POSTROUTING -j MARK --xor-mark ${mark}`,
    `-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully`,
    `-A KUBE-MARK-MASQ -j MARK --or-mark ${mark}`,
  ];
  const chains: string[] = ['KUBE-SERVICES', 'KUBE-NODEPORTS', 'KUBE-POSTROUTING', 'KUBE-MARK-MASQ'];
  // Loops, not push(...lines): 10,000 Services make more lines than a call's arguments may hold.
  for (const r of parts) {
    for (const l of r.filter) filter.push(l);
    for (const l of r.natServices) nat.push(l);
    for (const l of r.natNodePorts) natNodePorts.push(l);
  }
  nat.push(`-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`);
  for (const l of natNodePorts) nat.push(l);
  for (const l of base) nat.push(l);
  for (const r of only ?? parts) {
    for (const l of r.nat) nat.push(l);
    for (const c of r.chains) chains.push(c);
  }
  return {
    filter,
    nat,
    chains: { filter: ['KUBE-NODEPORTS', 'KUBE-SERVICES', 'KUBE-EXTERNAL-SERVICES', 'KUBE-FORWARD', 'KUBE-PROXY-FIREWALL'], nat: [...new Set(chains)] },
  };
}

/**
 * iptables-restore input for a `--noflush` restore: kube-proxy's chains declared (so flushed) and
 * refilled, per-Service chains that `current` (iptables-save output) still holds but the rules no
 * longer name deleted, and any missing jump from a built-in chain inserted at its top.
 */
export function restoreInput(rules: RuleSet, current: string): string {
  const have = { filter: new Set<string>(), nat: new Set<string>() };
  const lines = { filter: new Set<string>(), nat: new Set<string>() };
  let table: 'filter' | 'nat' | null = null;
  for (const l of current.split('\n')) {
    if (l.startsWith('*')) table = l === '*filter' ? 'filter' : l === '*nat' ? 'nat' : null;
    else if (table && l.startsWith(':')) have[table].add(l.slice(1).split(' ')[0]!);
    else if (table && l.startsWith('-A ')) lines[table].add(l);
  }
  const out: string[] = [];
  for (const t of ['filter', 'nat'] as const) {
    out.push(`*${t}`);
    const declared = new Set(rules.chains[t]);
    for (const c of rules.chains[t]) out.push(`:${c} - [0:0]`);
    const stale = [...have[t]].filter((c) => PER_SERVICE_CHAIN.test(c) && !declared.has(c));
    for (const c of stale) out.push(`:${c} - [0:0]`);
    for (const j of BASE_JUMPS) {
      if (j.table !== t) continue;
      if (![...lines[t]].some((l) => sameRule(l, `-A ${j.chain} ${j.rule}`))) out.push(`-I ${j.chain} 1 ${j.rule}`);
    }
    // A loop, not push(...lines): 10,000 Services make more lines than a call's arguments may hold.
    for (const l of rules[t]) out.push(l);
    for (const c of stale) out.push(`-X ${c}`);
    out.push('COMMIT');
  }
  return `${out.join('\n')}\n`;
}

/**
 * iptables-restore input for a partial sync (`--noflush`): the chains `rules` declares flushed and refilled,
 * and `stale` per-service chains (which the last sync wrote and nothing names any more) flushed and deleted;
 * every other chain is left as it is. Nothing is read back from the tables: the periodic full sync
 * (restoreInput) repairs whatever someone else changed. With `written` (each shared chain's rules as the
 * tables hold them, by `table chain`, kept up to date here), a shared chain whose rules did not change is
 * left out: the result is the same, and an endpoint change then rewrites the Service's own chains alone.
 */
export function partialRestoreInput(rules: RuleSet, stale: string[], written?: Map<string, string>): string {
  const out: string[] = [];
  for (const t of ['filter', 'nat'] as const) {
    const byChain = new Map<string, string[]>();
    for (const c of rules.chains[t]) byChain.set(c, []);
    for (const l of rules[t]) {
      const c = l.slice(3, l.indexOf(' ', 3));
      let ls = byChain.get(c);
      if (!ls) byChain.set(c, (ls = []));
      ls.push(l);
    }
    const write: [string, string[]][] = [];
    for (const [c, ls] of byChain) {
      if (written && !PER_SERVICE_CHAIN.test(c)) {
        const text = ls.join('\n');
        if (written.get(`${t} ${c}`) === text) continue;
        written.set(`${t} ${c}`, text);
      }
      write.push([c, ls]);
    }
    const dropping = t === 'nat' ? stale : [];
    if (write.length === 0 && dropping.length === 0) continue;
    out.push(`*${t}`);
    for (const [c] of write) out.push(`:${c} - [0:0]`);
    for (const c of dropping) out.push(`:${c} - [0:0]`);
    for (const [, ls] of write) for (const l of ls) out.push(l);
    for (const c of dropping) out.push(`-X ${c}`);
    out.push('COMMIT');
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

/** Each shared (not per-service) chain's rules in `rules`, by `table chain`, as partialRestoreInput compares them. */
export function sharedChains(rules: RuleSet): Map<string, string> {
  const m = new Map<string, string>();
  for (const t of ['filter', 'nat'] as const) {
    const byChain = new Map<string, string[]>();
    for (const c of rules.chains[t]) if (!PER_SERVICE_CHAIN.test(c)) byChain.set(c, []);
    for (const l of rules[t]) byChain.get(l.slice(3, l.indexOf(' ', 3)))?.push(l);
    for (const [c, ls] of byChain) m.set(`${t} ${c}`, ls.join('\n'));
  }
  return m;
}

/** Whether two rule lines say the same, ignoring how iptables-save quotes and orders a comment. */
function sameRule(a: string, b: string): boolean {
  const norm = (s: string) => s.replace(/"/g, '').replace(/\s+/g, ' ').split(' ').sort().join(' ');
  return norm(a) === norm(b);
}
