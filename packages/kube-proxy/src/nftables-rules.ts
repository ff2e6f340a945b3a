// kube-proxy's nftables mode (--proxy-mode=nftables): one table, `ip kube-proxy` (or `ip6 kube-proxy`),
// in the layout upstream generates. Services are found by verdict-map lookups (service-ips keyed by
// address . protocol . port, service-nodeports by protocol . port), so the cost of finding one does not
// grow with their number; each service port has a `service-*` chain (and `local-*`, `external-*` where its
// policies need them) spreading connections over `endpoint-*` chains with `numgen random mod N`. Services
// without usable endpoints are rejected (or dropped) in the filter chains, before DNAT, through the
// no-endpoint-services / no-endpoint-nodeports maps; cluster-ips-check rejects unused ports of a
// ClusterIP. The rules of each service port are built separately, so a sync rewrites only what changed.
import { createHash } from 'node:crypto';
import { ipFamily } from '@kemu/ip';
import { nftEndpointBase, nftServiceBase } from './chain-names.js';
import type { NodeContext } from './iptables-rules.js';
import type { EndpointInfo, ServicePortInfo } from './service-ports.js';

export interface NftNodeContext extends NodeContext {
  /** The Service CIDRs: addresses in them that no Service holds are dropped ("unallocated ClusterIPs"). */
  serviceCIDRs?: string[];
}

/** One element of a set or verdict map. */
export interface NftElementSpec {
  set: string;
  key: string;
  verdict?: string;
  comment?: string;
}

/** What one service port adds to the table: its chains (name -> rules), map elements and affinity sets. */
export interface NftServiceRules {
  chains: Map<string, string[]>;
  elements: NftElementSpec[];
  affinitySets: { name: string; timeoutS: number }[];
  /** Everything above as text: two service ports with equal signatures need no change. */
  signature: string;
}

export interface NftRules {
  family: 4 | 6;
  /** The fixed part: table, base chains, helper chains and their rules, maps and sets (one script). */
  base: string;
  /** Per service port, keyed "ns/name:port/proto". */
  services: Map<string, NftServiceRules>;
}

export const NFT_TABLE = 'kube-proxy';

/** Base chains: type, hook and priority as upstream registers them (filter before DNAT sees the VIPs). */
const BASE_CHAINS: [string, string, string, number][] = [
  ['filter-prerouting', 'filter', 'prerouting', -110],
  ['filter-input', 'filter', 'input', -110],
  ['filter-forward', 'filter', 'forward', -110],
  ['filter-output', 'filter', 'output', -110],
  ['filter-output-post-dnat', 'filter', 'output', -90],
  ['nat-prerouting', 'nat', 'prerouting', -100],
  ['nat-output', 'nat', 'output', -100],
  ['nat-postrouting', 'nat', 'postrouting', 100],
];

/** The regular chains the base chains jump to, with the match in front of the jump. */
const JUMPS: [string, string, string][] = [
  ['nodeport-endpoints-check', 'filter-input', 'ct state new '],
  ['service-endpoints-check', 'filter-input', 'ct state new '],
  ['service-endpoints-check', 'filter-forward', 'ct state new '],
  ['service-endpoints-check', 'filter-output', 'ct state new '],
  ['firewall-check', 'filter-prerouting', 'ct state new '],
  ['firewall-check', 'filter-output', 'ct state new '],
  ['services', 'nat-output', ''],
  ['services', 'nat-prerouting', ''],
  ['masquerading', 'nat-postrouting', ''],
  ['cluster-ips-check', 'filter-forward', 'ct state new '],
  ['cluster-ips-check', 'filter-output-post-dnat', 'ct state new '],
];

const MAPS = ['no-endpoint-services', 'no-endpoint-nodeports', 'firewall-ips', 'service-ips', 'service-nodeports'];

/** The endpoints a chain may use: ready ones, else serving-and-terminating ones (graceful termination). */
function usable(eps: EndpointInfo[]): EndpointInfo[] {
  const ready = eps.filter((e) => e.ready);
  return ready.length ? ready : eps.filter((e) => e.serving && e.terminating);
}

const ipx = (family: 4 | 6) => (family === 4 ? 'ip' : 'ip6');
const addrType = (family: 4 | 6) => (family === 4 ? 'ipv4_addr' : 'ipv6_addr');

/** The table's fixed part, as `nft -f` commands: created if missing, helper chains flushed and refilled. */
export function nftBase(node: NftNodeContext, family: 4 | 6 = 4): string {
  const T = `${ipx(family)} ${NFT_TABLE}`;
  const X = ipx(family);
  const mark = `0x${(1 << (node.masqueradeBit ?? 14)).toString(16)}`;
  const noLocalhost = family === 4 ? 'ip daddr != 127.0.0.0/8' : 'ip6 daddr != ::1';
  const o: string[] = [`add table ${T} { comment "rules for kube-proxy" ; }`];
  for (const [name, type, hook, prio] of BASE_CHAINS) o.push(`add chain ${T} ${name} { type ${type} hook ${hook} priority ${prio} ; }`, `flush chain ${T} ${name}`);
  const made = new Set<string>();
  const ensure = (c: string, comment?: string) => {
    if (made.has(c)) return;
    made.add(c);
    o.push(`add chain ${T} ${c}${comment ? ` { comment "${comment}" ; }` : ''}`, `flush chain ${T} ${c}`);
  };
  for (const [dst, src, pre] of JUMPS) {
    ensure(dst);
    o.push(`add rule ${T} ${src} ${pre}jump ${dst}`);
  }
  for (const c of ['services', 'masquerading', 'mark-for-masquerade']) ensure(c);
  o.push(
    `add rule ${T} mark-for-masquerade mark set mark or ${mark}`,
    `add rule ${T} masquerading mark and ${mark} == 0 return`,
    `add rule ${T} masquerading mark set mark xor ${mark}`,
    `add rule ${T} masquerading masquerade fully-random`,
  );
  o.push(`add set ${T} cluster-ips { type ${addrType(family)} ; comment "Active ClusterIPs" ; }`);
  const mapDecl: Record<string, [string, string]> = {
    'no-endpoint-services': [`${addrType(family)} . inet_proto . inet_service`, 'vmap to drop or reject packets to services with no endpoints'],
    'no-endpoint-nodeports': ['inet_proto . inet_service', 'vmap to drop or reject packets to service nodeports with no endpoints'],
    'firewall-ips': [`${addrType(family)} . inet_proto . inet_service`, 'destinations that are subject to LoadBalancerSourceRanges'],
    'service-ips': [`${addrType(family)} . inet_proto . inet_service`, 'ClusterIP, ExternalIP and LoadBalancer IP traffic'],
    'service-nodeports': ['inet_proto . inet_service', 'NodePort traffic'],
  };
  for (const m of MAPS) o.push(`add map ${T} ${m} { type ${mapDecl[m]![0]} : verdict ; comment "${mapDecl[m]![1]}" ; }`);
  ensure('reject-chain', 'helper for @no-endpoint-services / @no-endpoint-nodeports');
  o.push(`add rule ${T} reject-chain reject`);
  o.push(`add rule ${T} service-endpoints-check ${X} daddr . meta l4proto . th dport vmap @no-endpoint-services`);
  o.push(`add rule ${T} nodeport-endpoints-check fib daddr type local ${noLocalhost} meta l4proto . th dport vmap @no-endpoint-nodeports`);
  o.push(`add rule ${T} firewall-check ${X} daddr . meta l4proto . th dport vmap @firewall-ips`);
  o.push(`add rule ${T} services ${X} daddr . meta l4proto . th dport vmap @service-ips`);
  o.push(`add rule ${T} services fib daddr type local ${noLocalhost} meta l4proto . th dport vmap @service-nodeports`);
  o.push(`add rule ${T} cluster-ips-check ${X} daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"`);
  const cidrs = (node.serviceCIDRs ?? []).filter((c) => ipFamily(c.split('/')[0]!) === family);
  if (cidrs.length) o.push(`add rule ${T} cluster-ips-check ${X} daddr { ${cidrs.join(', ')} } drop comment "Drop traffic to unallocated ClusterIPs"`);
  return `${o.join('\n')}\n`;
}

/** The rules of one service port on this node. */
export function nftServiceRules(sp: ServicePortInfo, node: NftNodeContext, family: 4 | 6 = 4): NftServiceRules {
  const X = ipx(family);
  const proto = sp.protocol;
  const base = nftServiceBase(sp.name, proto);
  const clusterChain = `service-${base}`;
  const localChain = `local-${base}`;
  const externalChain = `external-${base}`;
  const all = usable(sp.endpoints);
  const local = all.filter((e) => e.nodeName === node.nodeName);
  const hasEndpoints = all.length > 0;
  const externallyAccessible = sp.nodePort !== undefined || sp.externalIPs.length > 0 || sp.loadBalancerIPs.length > 0;
  const usesCluster = hasEndpoints && (!sp.internalPolicyLocal || externallyAccessible);
  const usesLocal = local.length > 0 && (sp.internalPolicyLocal || sp.externalPolicyLocal);
  const internalChain = sp.internalPolicyLocal ? localChain : clusterChain;
  const hasInternal = hasEndpoints && (!sp.internalPolicyLocal || local.length > 0);
  const externalPolicyChain = sp.externalPolicyLocal ? localChain : clusterChain;
  const hasExternal = hasEndpoints && (!sp.externalPolicyLocal || local.length > 0);
  const usesExternal = hasEndpoints && externallyAccessible;
  const internalFilter = !hasEndpoints ? 'goto reject-chain' : 'drop';
  const externalFilter = internalFilter;

  const chains = new Map<string, string[]>();
  const elements: NftElementSpec[] = [];
  const key = (ip: string) => `${ip} . ${proto} . ${sp.port}`;
  elements.push({ set: 'cluster-ips', key: sp.clusterIP });
  if (hasInternal) elements.push({ set: 'service-ips', key: key(sp.clusterIP), verdict: `goto ${internalChain}` });
  else elements.push({ set: 'no-endpoint-services', key: key(sp.clusterIP), verdict: internalFilter, comment: sp.name });
  for (const ip of [...sp.externalIPs, ...sp.loadBalancerIPs]) {
    if (hasEndpoints) elements.push({ set: 'service-ips', key: key(ip), verdict: `goto ${externalChain}` });
    if (!hasExternal) elements.push({ set: 'no-endpoint-services', key: key(ip), verdict: externalFilter, comment: sp.name });
  }
  if (sp.nodePort !== undefined) {
    if (hasEndpoints) elements.push({ set: 'service-nodeports', key: `${proto} . ${sp.nodePort}`, verdict: `goto ${externalChain}` });
    if (!hasExternal) elements.push({ set: 'no-endpoint-nodeports', key: `${proto} . ${sp.nodePort}`, verdict: externalFilter, comment: sp.name });
  }

  const epChain = (e: EndpointInfo) => `endpoint-${nftEndpointBase(sp.name, proto, e.ip, e.port)}`;
  const affinity = (e: EndpointInfo) => `affinity-${nftEndpointBase(sp.name, proto, e.ip, e.port)}`;
  const sticky = sp.sessionAffinitySeconds !== undefined;
  const lb = (chain: string, eps: EndpointInfo[]): string[] => {
    const rules: string[] = [];
    if (sticky) for (const e of eps) rules.push(`${X} saddr @${affinity(e)} goto ${epChain(e)}`);
    rules.push(`numgen random mod ${eps.length} vmap { ${eps.map((e, i) => `${i} : goto ${epChain(e)}`).join(' , ')} }`);
    return rules;
  };
  if (usesCluster) chains.set(clusterChain, lb(clusterChain, all));
  if (usesLocal) chains.set(localChain, lb(localChain, local));
  // Off-cluster traffic to a ClusterIP is masqueraded, in case its endpoint is on another node.
  if (hasInternal && node.clusterCIDR && chains.has(internalChain))
    chains.get(internalChain)!.unshift(`${X} daddr ${sp.clusterIP} ${proto} dport ${sp.port} ${X} saddr != ${node.clusterCIDR} jump mark-for-masquerade`);
  if (usesExternal) {
    const ext: string[] = [];
    if (!sp.externalPolicyLocal) ext.push('jump mark-for-masquerade');
    else {
      if (node.clusterCIDR && usesCluster) ext.push(`${X} saddr ${node.clusterCIDR} goto ${clusterChain} comment "short-circuit pod traffic"`);
      ext.push('fib saddr type local jump mark-for-masquerade comment "masquerade local traffic"');
      if (usesCluster) ext.push(`fib saddr type local goto ${clusterChain} comment "short-circuit local traffic"`);
    }
    if (hasExternal) ext.push(`goto ${externalPolicyChain}`);
    chains.set(externalChain, ext);
  }
  const reachable = new Map<string, EndpointInfo>();
  if (usesCluster) for (const e of all) reachable.set(epChain(e), e);
  if (usesLocal) for (const e of local) reachable.set(epChain(e), e);
  const affinitySets: { name: string; timeoutS: number }[] = [];
  for (const [chain, e] of reachable) {
    const rules = [`${X} saddr ${e.ip} jump mark-for-masquerade`];
    if (sticky) {
      affinitySets.push({ name: affinity(e), timeoutS: sp.sessionAffinitySeconds! });
      rules.push(`update @${affinity(e)} { ${X} saddr }`);
    }
    rules.push(`meta l4proto ${proto} dnat to ${family === 6 ? `[${e.ip}]` : e.ip}:${e.port}`);
    chains.set(chain, rules);
  }
  // A digest, not the text: a 2.5M-endpoint cluster keeps one per service port.
  const signature = createHash('sha1').update(JSON.stringify([[...chains], elements, affinitySets])).digest('base64');
  return { chains, elements, affinitySets, signature };
}

/** The whole table for a node: the fixed part and every service port's rules. */
export function buildNftables(ports: ServicePortInfo[], node: NftNodeContext, family: 4 | 6 = 4): NftRules {
  const services = new Map<string, NftServiceRules>();
  for (const sp of ports) services.set(`${sp.name}/${sp.protocol}`, nftServiceRules(sp, node, family));
  return { family, base: nftBase(node, family), services };
}

/** Chains and sets a listing (`nft list table`) shows, to find what an earlier run left behind. */
export function listedObjects(listing: string): { chains: string[]; sets: string[] } {
  const chains: string[] = [];
  const sets: string[] = [];
  for (const m of listing.matchAll(/^\t(chain|set|map) (\S+) \{$/gm)) (m[1] === 'chain' ? chains : sets).push(m[2]!);
  return { chains, sets };
}

const isServiceChain = (c: string) => c.includes('/');
const isAffinitySet = (s: string) => s.startsWith('affinity-');

/**
 * The `nft -f` transaction from `previous` (what the last sync wrote; null for a full sync) to `desired`.
 * A full sync rewrites everything and removes per-Service chains and affinity sets that `existing` (the
 * current listing) holds but `desired` does not; an incremental one touches only service ports whose rules
 * changed: their elements, chains and sets, with chains that went flushed and deleted after the map
 * elements that named them.
 */
export function nftablesScript(desired: NftRules, previous: NftRules | null, existing?: { chains: string[]; sets: string[] }): string {
  const T = `${ipx(desired.family)} ${NFT_TABLE}`;
  const o: string[] = [];
  const elementLine = (verb: 'add' | 'delete', e: NftElementSpec) =>
    `${verb} element ${T} ${e.set} { ${e.key}${verb === 'add' && e.comment !== undefined ? ` comment "${e.comment}"` : ''}${verb === 'add' && e.verdict ? ` : ${e.verdict}` : ''} }`;
  // nft resolves a jump when the rule is added: every chain is declared before any rule is written.
  const ruleLines: string[] = [];
  const writeChain = (name: string, rules: string[], isNew: boolean) => {
    o.push(`add chain ${T} ${name}`);
    if (!isNew) o.push(`flush chain ${T} ${name}`);
    for (const r of rules) ruleLines.push(`add rule ${T} ${name} ${r}`);
  };
  const dropChains: string[] = [];
  const dropSets: string[] = [];
  if (!previous) {
    o.push(desired.base.trimEnd());
    o.push(`flush set ${T} cluster-ips`);
    for (const m of MAPS) o.push(`flush map ${T} ${m}`);
    const want = new Set<string>();
    const wantSets = new Set<string>();
    for (const s of desired.services.values()) {
      for (const a of s.affinitySets) {
        wantSets.add(a.name);
        o.push(`add set ${T} ${a.name} { type ${addrType(desired.family)} ; flags dynamic,timeout ; timeout ${a.timeoutS}s ; }`);
      }
      for (const [name, rules] of s.chains) {
        want.add(name);
        writeChain(name, rules, false);
      }
    }
    for (const l of ruleLines) o.push(l);
    for (const s of desired.services.values()) for (const e of s.elements) o.push(elementLine('add', e));
    for (const c of existing?.chains ?? []) if (isServiceChain(c) && !want.has(c)) dropChains.push(c);
    for (const s of existing?.sets ?? []) if (isAffinitySet(s) && !wantSets.has(s)) dropSets.push(s);
  } else {
    const adds: NftElementSpec[] = [];
    for (const k of new Set([...previous.services.keys(), ...desired.services.keys()])) {
      const before = previous.services.get(k);
      const after = desired.services.get(k);
      if (before && after && before.signature === after.signature) continue;
      const oldEls = new Map((before?.elements ?? []).map((e) => [`${e.set}|${e.key}`, e]));
      const newEls = new Map((after?.elements ?? []).map((e) => [`${e.set}|${e.key}`, e]));
      for (const [id, e] of oldEls) {
        const n = newEls.get(id);
        if (!n || n.verdict !== e.verdict || n.comment !== e.comment) o.push(elementLine('delete', e));
      }
      for (const [id, e] of newEls) {
        const p = oldEls.get(id);
        if (!p || p.verdict !== e.verdict || p.comment !== e.comment) adds.push(e);
      }
      const newSets = new Set((after?.affinitySets ?? []).map((a) => a.name));
      for (const a of after?.affinitySets ?? [])
        if (!before?.affinitySets.some((b) => b.name === a.name)) o.push(`add set ${T} ${a.name} { type ${addrType(desired.family)} ; flags dynamic,timeout ; timeout ${a.timeoutS}s ; }`);
      for (const [name, rules] of after?.chains ?? []) {
        const had = before?.chains.get(name);
        if (had && had.length === rules.length && had.every((r, i) => r === rules[i])) continue;
        writeChain(name, rules, !had);
      }
      for (const name of before?.chains.keys() ?? []) if (!after?.chains.has(name)) dropChains.push(name);
      for (const a of before?.affinitySets ?? []) if (!newSets.has(a.name)) dropSets.push(a.name);
    }
    for (const l of ruleLines) o.push(l);
    for (const e of adds) o.push(elementLine('add', e));
  }
  // A chain goes once nothing names it: flushed (its jumps gone) and deleted in the same transaction.
  for (const c of dropChains) o.push(`flush chain ${T} ${c}`);
  for (const c of dropChains) o.push(`delete chain ${T} ${c}`);
  for (const s of dropSets) o.push(`delete set ${T} ${s}`);
  return o.length ? `${o.join('\n')}\n` : '';
}
