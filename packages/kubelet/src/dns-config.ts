// A pod's DNS settings as the kubelet hands them to the runtime (CRI DNSConfig, which the runtime writes as
// the pod's resolv.conf), following the kubelet's dns configurer: dnsPolicy picks the base (the cluster DNS
// with its search path and ndots:5, the node's resolv.conf, or nothing), dnsConfig is merged on top, and
// the result is cut to the resolver's limits with a warning saying what was left out. Pure.
// The limits are the API's (the same the API server validates dnsConfig against).
import { MAX_DNS_NAMESERVERS, MAX_DNS_SEARCH_LIST_CHARS, MAX_DNS_SEARCH_PATHS, type Pod, type PodDNSConfigOption } from '@kemu/core';
import type { cri } from '@kemu/proto';

/** A search domain longer than a DNS name may be is dropped (some resolvers abort on one). */
const MAX_SEARCH_DOMAIN_LENGTH = 253;
/** The options a ClusterFirst pod gets. */
export const CLUSTER_FIRST_OPTIONS = ['ndots:5'] as const;
/** The longest node resolv.conf the kubelet reads. */
export const MAX_RESOLV_CONF_BYTES = 10 * 1024 * 1024;

/** The node's resolver settings (its resolv.conf, kubelet's --resolv-conf). */
export interface HostDNSConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export interface PodDNSContext {
  /** kubelet's clusterDNS: the cluster DNS Service's addresses. */
  clusterDNS: readonly string[];
  /** kubelet's clusterDomain ("" for none). */
  clusterDomain: string;
  /** The node's resolv.conf, parsed; undefined when --resolv-conf is "" (no host resolver). */
  host?: HostDNSConfig;
  /** The node's addresses: with no host resolver, each family's loopback is the nameserver. */
  nodeIPs?: readonly string[];
}

export interface PodDNSResult {
  config: cri.DNSConfig;
  /** Warning events the kubelet records on the pod (reason DNSConfigForming or MissingClusterDNS). */
  warnings: { reason: 'DNSConfigForming' | 'MissingClusterDNS'; message: string }[];
}

/**
 * Reads a resolv.conf as the kubelet does: nameserver lines accumulate, the last search line and the last
 * options line win, search domains lose a trailing dot, comments and unknown lines are ignored.
 */
export function parseResolvConf(text: string): HostDNSConfig {
  if (text.length > MAX_RESOLV_CONF_BYTES) throw new Error(`resolv.conf is longer than ${MAX_RESOLV_CONF_BYTES} bytes`);
  const out: HostDNSConfig = { servers: [], searches: [], options: [] };
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter(Boolean);
    if (fields.length === 0) continue;
    if (fields[0] === 'nameserver') {
      if (fields.length < 2) throw new Error('resolv.conf: nameserver list is empty');
      out.servers.push(fields[1]);
    } else if (fields[0] === 'search') {
      out.searches = fields.slice(1).map((s) => (s.endsWith('.') ? s.slice(0, -1) : s));
    } else if (fields[0] === 'options') {
      out.options = fields.slice(1);
    }
  }
  return out;
}

function omitDuplicates(list: readonly string[]): string[] {
  return [...new Set(list)];
}

/** Options by name: the pod's dnsConfig options replace the base's of the same name. */
function mergeOptions(base: readonly string[], pod: readonly PodDNSConfigOption[]): string[] {
  const byName = new Map<string, string>();
  for (const op of base) {
    const i = op.indexOf(':');
    byName.set(i === -1 ? op : op.slice(0, i), i === -1 ? '' : op.slice(i + 1));
  }
  for (const op of pod) byName.set(op.name ?? '', op.value ?? '');
  return [...byName].map(([name, value]) => (value === '' ? name : `${name}:${value}`));
}

type DNSType = 'none' | 'cluster' | 'host';

function dnsType(pod: Pod): DNSType {
  switch (pod.spec.dnsPolicy ?? 'ClusterFirst') {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'Default':
      return 'host';
    default:
      // ClusterFirst; a host-network pod falls back to the node's settings.
      return pod.spec.hostNetwork ? 'host' : 'cluster';
  }
}

/** The CRI DNSConfig for `pod`. */
export function podDNSConfig(pod: Pod, ctx: PodDNSContext): PodDNSResult {
  const warnings: PodDNSResult['warnings'] = [];
  const host = ctx.host ?? { servers: [], searches: [], options: [] };
  let config: cri.DNSConfig = { servers: [...host.servers], searches: [...host.searches], options: [...host.options] };
  let type = dnsType(pod);
  if (type === 'none') config = { servers: [], searches: [], options: [] };
  if (type === 'cluster') {
    if (ctx.clusterDNS.length > 0) {
      const ns = pod.metadata.namespace ?? 'default';
      const d = ctx.clusterDomain;
      const clusterSearch = d ? [`${ns}.svc.${d}`, `svc.${d}`, d] : [];
      config = { servers: [...ctx.clusterDNS], searches: omitDuplicates([...clusterSearch, ...host.searches]), options: [...CLUSTER_FIRST_OPTIONS] };
    } else {
      warnings.push({
        reason: 'MissingClusterDNS',
        message: 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.',
      });
      type = 'host';
    }
  }
  if (type === 'host' && !ctx.host) {
    // No node resolver: the local one, by the node's families, and no search.
    const loopbacks = (ctx.nodeIPs ?? []).map((ip) => (ip.includes(':') ? '::1' : '127.0.0.1'));
    config.servers = loopbacks.length > 0 ? loopbacks : ['127.0.0.1'];
    config.searches = ['.'];
  }
  const extra = pod.spec.dnsConfig;
  if (extra) {
    config.servers = omitDuplicates([...(config.servers ?? []), ...(extra.nameservers ?? [])]);
    config.searches = omitDuplicates([...(config.searches ?? []), ...(extra.searches ?? [])]);
    config.options = mergeOptions(config.options ?? [], extra.options ?? []);
  }
  return { config: fitLimits(config, warnings), warnings };
}

function fitLimits(config: cri.DNSConfig, warnings: PodDNSResult['warnings']): cri.DNSConfig {
  let servers = config.servers ?? [];
  if (servers.length > MAX_DNS_NAMESERVERS) {
    servers = servers.slice(0, MAX_DNS_NAMESERVERS);
    warnings.push({
      reason: 'DNSConfigForming',
      message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${servers.join(' ')}`,
    });
  }
  let searches = config.searches ?? [];
  let exceeded = false;
  if (searches.length > MAX_DNS_SEARCH_PATHS) {
    searches = searches.slice(0, MAX_DNS_SEARCH_PATHS);
    exceeded = true;
  }
  const fitting = searches.filter((s) => s.length <= MAX_SEARCH_DOMAIN_LENGTH);
  if (fitting.length !== searches.length) exceeded = true;
  searches = fitting;
  while (searches.length > 0 && searches.join(' ').length > MAX_DNS_SEARCH_LIST_CHARS) {
    searches = searches.slice(0, -1);
    exceeded = true;
  }
  if (exceeded)
    warnings.push({
      reason: 'DNSConfigForming',
      message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.join(' ')}`,
    });
  return { servers, searches, options: config.options ?? [] };
}
