// /proc/sys/net: forwarding and proxy_arp change behaviour; other keys are stored and read back.
import { NetsimError } from './errors.js';
import type { Ns } from './world-model.js';
import { linkByName, nsByName, type WorldState } from './world-state.js';

const SYSCTL_ROOTS = new Set(['ipv4', 'ipv6', 'core', 'bridge', 'netfilter', 'unix']);
/** Defaults a fresh namespace reports for keys the model stores but does not act on. */
const SYSCTL_DEFAULTS: Record<string, string> = {
  'net/ipv6/conf/*/accept_dad': '1',
  'net/ipv6/conf/*/dad_transmits': '1',
  'net/ipv6/conf/*/accept_ra': '1',
  'net/ipv6/conf/*/autoconf': '1',
  'net/ipv6/conf/*/hop_limit': '64',
  'net/ipv6/conf/*/mtu': '1500',
  'net/ipv4/conf/*/accept_redirects': '1',
  'net/ipv4/conf/*/send_redirects': '1',
  'net/ipv4/conf/*/secure_redirects': '1',
  'net/ipv4/ip_default_ttl': '64',
  'net/ipv4/ip_local_port_range': '32768\t60999',
  'net/core/somaxconn': '4096',
};

export function setForwarding(w: WorldState, nsName: string, family: 4 | 6, on: boolean): void {
  const ns = nsByName(w, nsName);
  if (family === 4) ns.fwd4 = on;
  else ns.fwd6 = on;
}

export function setSysctl(w: WorldState, nsName: string, key: string, value: string): void {
  const ns = nsByName(w, nsName);
  const k = sysctlKey(ns, key);
  const v = String(value).trim();
  if (v.length === 0 || v.length > 4096 || /[\0\n]/.test(v))
    throw new NetsimError('EINVAL', `sysctl ${key}=${value}`);
  const bool = k.endsWith('/forwarding') || k === 'net/ipv4/ip_forward' || k.endsWith('/proxy_arp');
  if (bool && v !== '0' && v !== '1') throw new NetsimError('EINVAL', `sysctl ${key}=${value}`);
  if (k === 'net/ipv4/ip_forward' || k === 'net/ipv4/conf/all/forwarding') ns.fwd4 = v === '1';
  else if (k === 'net/ipv6/conf/all/forwarding') ns.fwd6 = v === '1';
  else {
    const m = /^net\/ipv4\/conf\/([^/]+)\/proxy_arp$/.exec(k);
    if (m && m[1] !== 'all' && m[1] !== 'default') linkByName(ns, m[1]!).proxyArp = v === '1';
    else ns.sysctls.set(k, v);
  }
}

export function getSysctl(w: WorldState, nsName: string, key: string): string {
  const ns = nsByName(w, nsName);
  const k = sysctlKey(ns, key);
  if (k === 'net/ipv4/ip_forward' || k === 'net/ipv4/conf/all/forwarding') return ns.fwd4 ? '1' : '0';
  if (k === 'net/ipv6/conf/all/forwarding') return ns.fwd6 ? '1' : '0';
  const m = /^net\/ipv4\/conf\/([^/]+)\/proxy_arp$/.exec(k);
  if (m && m[1] !== 'all' && m[1] !== 'default') return linkByName(ns, m[1]!).proxyArp ? '1' : '0';
  return ns.sysctls.get(k) ?? SYSCTL_DEFAULTS[k.replace(/^(net\/ipv[46]\/conf)\/[^/]+\//, '$1/*/')] ?? '0';
}

export function sysctlKey(ns: Ns, key: string): string {
  if (typeof key !== 'string' || key.includes('\0') || key.includes('..') || key.length > 255) {
    throw new NetsimError('EINVAL', `invalid sysctl key ${String(key)}`);
  }
  let parts: string[];
  if (key.includes('/')) parts = key.replace(/^\/?(proc\/sys\/)?/, '').split('/');
  else {
    const d = key.split('.');
    // net.ipv4.conf.<dev>.<name>: the device name may itself contain dots.
    parts = d.length > 5 && d[2] === 'conf' ? [d[0]!, d[1]!, d[2]!, d.slice(3, -1).join('.'), d.at(-1)!] : d;
  }
  if (parts.some((x) => x === '') || parts[0] !== 'net' || !SYSCTL_ROOTS.has(parts[1] ?? '')) {
    throw new NetsimError('ENOENT', `/proc/sys/${parts.join('/')}`);
  }
  if (parts[2] === 'conf' || parts[2] === 'neigh') {
    if (parts.length !== 5) throw new NetsimError('ENOENT', `/proc/sys/${parts.join('/')}`);
    const dev = parts[3]!;
    if (dev !== 'all' && dev !== 'default' && !ns.links.has(dev))
      throw new NetsimError('ENOENT', `/proc/sys/${parts.join('/')}`);
  }
  return parts.join('/');
}
