// Validation of a pod's DNS settings (spec.dnsConfig with spec.dnsPolicy), with the API server's field paths,
// limits and wording: a None pod must bring its own nameservers; at most 3 nameservers, 32 search domains
// and 2048 characters of search line; every nameserver an IP, every search domain a DNS subdomain.
import { isIP } from 'node:net';
import type { PodSpec } from './api-core.js';
import type { FieldErrors } from './field-errors.js';
import { dns1123Subdomain } from './names.js';

export const MAX_DNS_NAMESERVERS = 3;
export const MAX_DNS_SEARCH_PATHS = 32;
export const MAX_DNS_SEARCH_LIST_CHARS = 2048;

export function validatePodDNSConfig(e: FieldErrors, s: PodSpec): void {
  const c = s.dnsConfig;
  if (s.dnsPolicy === 'None') {
    if (!c) return e.required('spec.dnsConfig', 'must provide `dnsConfig` when `dnsPolicy` is None');
    if (!c.nameservers?.length) return e.required('spec.dnsConfig.nameservers', 'must provide at least one DNS nameserver when `dnsPolicy` is None');
  }
  if (!c) return;
  const nameservers = c.nameservers ?? [];
  if (nameservers.length > MAX_DNS_NAMESERVERS)
    e.invalid('spec.dnsConfig.nameservers', nameservers, `must not have more than ${MAX_DNS_NAMESERVERS} nameservers`);
  nameservers.forEach((ns, i) => {
    if (!isIP(ns)) e.invalid(`spec.dnsConfig.nameservers[${i}]`, ns, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)');
  });
  const searches = c.searches ?? [];
  if (searches.length > MAX_DNS_SEARCH_PATHS)
    e.invalid('spec.dnsConfig.searches', searches, `must not have more than ${MAX_DNS_SEARCH_PATHS} search paths`);
  if (searches.join(' ').length > MAX_DNS_SEARCH_LIST_CHARS)
    e.invalid('spec.dnsConfig.searches', searches, `must not have more than ${MAX_DNS_SEARCH_LIST_CHARS} characters (including spaces) in the search list`);
  searches.forEach((search, i) => {
    // A trailing dot is fine.
    const name = search.endsWith('.') ? search.slice(0, -1) : search;
    e.check(`spec.dnsConfig.searches[${i}]`, name, dns1123Subdomain(name));
  });
  (c.options ?? []).forEach((op, i) => {
    if (!op.name) e.required(`spec.dnsConfig.options[${i}]`, 'must not be empty');
  });
}
