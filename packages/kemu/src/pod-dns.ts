// A name looked up from inside a pod: its resolv.conf (what the kubelet writes: clusterDNS, search list,
// ndots) drives a stub resolver whose queries, where the cluster network carries datagrams (the simulated
// datapath), leave the pod's namespace as real UDP packets to the nameserver, cross kube-proxy's DNAT to
// the DNS server's socket and come back un-NATed, each with its path. Elsewhere the cluster's resolver
// answers in process with the same search rules.
import type { Pod } from '@kemu/core';
import { type DnsExchange, lookupWithSearch, type Resolver, type SearchResult, searchCandidates, type StubQuery, stubLookup } from '@kemu/dns';
import { podDNSConfig } from '@kemu/kubelet';
import type { TraceHop } from '@kemu/netsim';
import type { ClusterNetwork } from './cluster-network.js';
import { DNS_PORT } from './cluster-dns.js';

export interface PodLookup {
  name: string;
  result?: SearchResult;
  /** The queries the pod's stub sent, with each one's path (empty off the simulated datapath). */
  queries: (StubQuery & { trace: TraceHop[]; text: string })[];
  /** Whether the queries travelled the cluster network (false: answered in process). */
  viaDatapath: boolean;
  /** What failed, when nothing resolved. */
  error?: string;
}

function resolvConf(pod: Pod, clusterDNS: string[], zone: string) {
  const { config } = podDNSConfig(pod, { clusterDNS, clusterDomain: zone });
  const ndots = Number((config.options ?? []).find((x) => x.startsWith('ndots:'))?.slice('ndots:'.length) ?? 1);
  return { nameservers: config.servers ?? [], searches: config.searches ?? [], ndots };
}

export async function lookupFromPod(o: {
  network: ClusterNetwork;
  /** The pod's namespace as its runtime reports it. */
  netns: string;
  pod: Pod;
  clusterDNS: string[];
  resolver: Resolver;
  name: string;
}): Promise<PodLookup> {
  const cfg = resolvConf(o.pod, o.clusterDNS, o.resolver.zone);
  const exchangeUdp = o.network.exchangeUdp?.bind(o.network);
  if (!exchangeUdp) {
    const result = lookupWithSearch(o.resolver, o.name, cfg);
    return { name: o.name, result, queries: [], viaDatapath: false, error: result ? undefined : notFound(o.name, cfg) };
  }
  const paths: { trace: TraceHop[]; text: string; error?: string }[] = [];
  const exchange: DnsExchange = async (server, query) => {
    const r = await exchangeUdp(o.netns, server, DNS_PORT, query);
    paths.push({ trace: r.trace, text: r.text, error: r.error?.message });
    return r.reply;
  };
  const r = await stubLookup(exchange, o.name, cfg);
  const queries = r.queries.map((q, i) => ({ ...q, error: q.error === 'no reply' ? (paths[i]?.error ?? q.error) : q.error, trace: paths[i]?.trace ?? [], text: paths[i]?.text ?? '' }));
  let error: string | undefined;
  if (!r.result) {
    const silent = queries.find((q) => q.rcode === undefined);
    error = silent
      ? `${o.name}: the cluster DNS at ${silent.server}:${DNS_PORT} gave no answer for ${silent.name} (${silent.error})`
      : notFound(o.name, cfg);
  }
  return { name: o.name, result: r.result, queries, viaDatapath: true, error };
}

function notFound(name: string, cfg: { searches: string[]; ndots: number }): string {
  return `${name}: no such name in the cluster DNS (asked ${searchCandidates(name, cfg).join(', ')})`;
}

/** One line per query, then the path of the last one (the query that settled it), for a trace's text. */
export function lookupText(l: PodLookup): string {
  if (!l.viaDatapath) return '';
  const lines = l.queries.map(
    (q) => `dns: ${q.name} ${q.type} @${q.server}:${DNS_PORT}: ${q.rcode ?? q.error}${q.addresses.length ? ` ${q.addresses.join(' ')}` : ''}${q.cnames.length ? ` (alias ${q.cnames.join(' -> ')})` : ''}`,
  );
  const last = l.queries.at(-1);
  return [...lines, ...(last?.text ? [last.text.trimEnd()] : [])].join('\n');
}
