// A name looked up as a pod's stub resolver does with its resolv.conf: the search list and ndots decide
// which fully qualified names are asked, in which order (glibc res_search), and the first that has records
// wins. Lets `kemu trace` resolve "web" or "web.shop" from a pod the way the pod itself would.
import type { Answer } from 'dns-packet';
import type { Resolver } from './resolver.js';

export interface SearchConfig {
  /** resolv.conf's search domains. */
  searches: readonly string[];
  /** resolv.conf's ndots (5 for ClusterFirst pods, 1 when unset). */
  ndots?: number;
}

/** The names a stub resolver asks for `name`, in order. */
export function searchCandidates(name: string, cfg: SearchConfig): string[] {
  if (name.endsWith('.')) return [name.slice(0, -1)];
  const dots = name.split('.').length - 1;
  const searched = cfg.searches.filter((s) => s && s !== '.').map((s) => `${name}.${s.replace(/\.$/, '')}`);
  return dots >= (cfg.ndots ?? 1) ? [name, ...searched] : [...searched, name];
}

export interface SearchResult {
  /** The fully qualified name that answered. */
  name: string;
  /** Addresses of the asked family, after following CNAMEs inside the served zones. */
  addresses: string[];
  /** CNAMEs followed, in order (an ExternalName Service pointing outside the cluster ends here). */
  cnames: string[];
}

/** The addresses `name` has for a pod with `cfg`, or undefined when no candidate has any. */
export function lookupWithSearch(resolver: Resolver, name: string, cfg: SearchConfig, type: 'A' | 'AAAA' = 'A'): SearchResult | undefined {
  for (const candidate of searchCandidates(name, cfg)) {
    const cnames: string[] = [];
    let current = candidate;
    for (let hop = 0; hop < 8; hop++) {
      const r = resolver.resolve({ name: current, type });
      if (r.rcode !== 'NOERROR' || r.answers.length === 0) break;
      const alias = r.answers.find((a): a is Answer & { data: string } => a.type === 'CNAME');
      if (!alias) {
        const addresses = r.answers.filter((a) => a.type === type).map((a) => (a as { data: string }).data);
        return { name: candidate, addresses, cnames };
      }
      cnames.push(alias.data);
      current = alias.data;
      if (!resolver.zoneOf(current.toLowerCase())) return { name: candidate, addresses: [], cnames };
    }
  }
  return undefined;
}
