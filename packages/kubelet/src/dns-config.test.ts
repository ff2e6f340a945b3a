import type { Pod, PodSpec } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { parseResolvConf, podDNSConfig } from './dns-config.js';

const pod = (spec: Partial<PodSpec> = {}, ns = 'shop'): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: ns },
  spec: { containers: [{ name: 'c' }], ...spec },
});
const host = parseResolvConf('# node\nnameserver 192.168.0.53\nnameserver 192.168.0.54\nsearch corp.example. lab.example\noptions timeout:2 rotate\n');
const ctx = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', host };

describe('pod DNS config', () => {
  it('reads a resolv.conf as the kubelet does', () => {
    expect(host).toEqual({ servers: ['192.168.0.53', '192.168.0.54'], searches: ['corp.example', 'lab.example'], options: ['timeout:2', 'rotate'] });
    expect(parseResolvConf('search a\nsearch b c\noptions x\noptions y\n')).toEqual({ servers: [], searches: ['b', 'c'], options: ['y'] });
    expect(() => parseResolvConf('nameserver\n')).toThrow(/nameserver list is empty/);
  });

  it('gives ClusterFirst pods the cluster DNS, the namespace search path before the node\'s, and ndots:5', () => {
    expect(podDNSConfig(pod(), ctx).config).toEqual({
      servers: ['10.96.0.10'],
      searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'corp.example', 'lab.example'],
      options: ['ndots:5'],
    });
  });

  it('gives Default pods, and ClusterFirst pods on the host network, the node\'s resolver', () => {
    const nodeLike = { servers: host.servers, searches: host.searches, options: host.options };
    expect(podDNSConfig(pod({ dnsPolicy: 'Default' }), ctx).config).toEqual(nodeLike);
    expect(podDNSConfig(pod({ hostNetwork: true }), ctx).config).toEqual(nodeLike);
    expect(podDNSConfig(pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), ctx).config.servers).toEqual(['10.96.0.10']);
    // No node resolver file: the local resolver, no search.
    expect(podDNSConfig(pod({ dnsPolicy: 'Default' }), { ...ctx, host: undefined, nodeIPs: ['fd00::1'] }).config).toEqual({ servers: ['::1'], searches: ['.'], options: [] });
  });

  it('falls back to the node\'s resolver with a warning when the kubelet has no cluster DNS', () => {
    const r = podDNSConfig(pod(), { ...ctx, clusterDNS: [] });
    expect(r.config.servers).toEqual(host.servers);
    expect(r.warnings.map((w) => w.reason)).toEqual(['MissingClusterDNS']);
  });

  it('builds None pods from dnsConfig alone, and merges dnsConfig into the others with its options winning', () => {
    const dnsConfig = { nameservers: ['1.2.3.4'], searches: ['my.dns.search.suffix'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] };
    expect(podDNSConfig(pod({ dnsPolicy: 'None', dnsConfig }), ctx).config).toEqual({
      servers: ['1.2.3.4'],
      searches: ['my.dns.search.suffix'],
      options: ['ndots:2', 'edns0'],
    });
    const merged = podDNSConfig(pod({ dnsConfig: { ...dnsConfig, nameservers: ['10.96.0.10', '1.2.3.4'] } }), ctx).config;
    expect(merged.servers).toEqual(['10.96.0.10', '1.2.3.4']);
    expect(merged.searches?.at(-1)).toBe('my.dns.search.suffix');
    expect(merged.options).toEqual(['ndots:2', 'edns0']);
  });

  it('cuts nameservers to 3 and the search line to 32 domains / 2048 characters, saying what it applied', () => {
    const r = podDNSConfig(
      pod({ dnsConfig: { nameservers: ['1.1.1.1', '8.8.8.8', '9.9.9.9'], searches: Array.from({ length: 40 }, (_, i) => `d${i}.example`) } }),
      ctx,
    );
    expect(r.config.servers).toEqual(['10.96.0.10', '1.1.1.1', '8.8.8.8']);
    expect(r.config.searches).toHaveLength(32);
    expect(r.warnings.map((w) => w.message)).toEqual([
      'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 1.1.1.1 8.8.8.8',
      `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${r.config.searches!.join(' ')}`,
    ]);
    const long = podDNSConfig(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1'], searches: Array.from({ length: 20 }, (_, i) => `${'x'.repeat(120)}.d${i}`) } }), ctx);
    expect(long.config.searches!.join(' ').length).toBeLessThanOrEqual(2048);
    expect(long.config.searches).toHaveLength(16);
  });
});
