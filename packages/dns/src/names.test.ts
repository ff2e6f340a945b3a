import { describe, expect, it } from 'vitest';
import { inZone, ipToLabel, ipToReverseName, normalizeName, parseClusterName, podLabelToIp, reverseNameToIp } from './names.js';

const Z = 'cluster.local';
const p = (name: string) => parseClusterName(normalizeName(name), Z);

describe('cluster names', () => {
  it('reads the schema names below the zone', () => {
    expect(p('cluster.local.')).toEqual({ kind: 'apex' });
    expect(p('dns-version.cluster.local')).toEqual({ kind: 'dns-version' });
    expect(p('ns.dns.cluster.local')).toEqual({ kind: 'nameserver' });
    expect(p('svc.cluster.local')).toEqual({ kind: 'branch', branch: 'svc' });
    expect(p('Default.SVC.cluster.local.')).toEqual({ kind: 'namespace', branch: 'svc', namespace: 'default' });
    expect(p('web.default.svc.cluster.local')).toEqual({ kind: 'service', namespace: 'default', service: 'web' });
    expect(p('web-0.web.default.svc.cluster.local')).toEqual({ kind: 'service', namespace: 'default', service: 'web', endpoint: 'web-0' });
    expect(p('_HTTP._tcp.web.default.svc.cluster.local')).toEqual({
      kind: 'service',
      namespace: 'default',
      service: 'web',
      port: 'http',
      protocol: 'tcp',
    });
    expect(p('10-244-1-5.default.pod.cluster.local')).toEqual({ kind: 'pod', namespace: 'default', ip: '10.244.1.5' });
    expect(p('fd00-0-0-0-0-0-0-5.kube-system.pod.cluster.local')).toEqual({ kind: 'pod', namespace: 'kube-system', ip: 'fd00::5' });
  });

  it('says a name of no schema shape cannot exist', () => {
    for (const n of [
      'foo.cluster.local', // neither svc nor pod
      'a.b.c.d.e.f.svc.cluster.local', // too deep
      '_http.web.default.svc.cluster.local', // an endpoint label may not start with _
      'http._tcp.web.default.svc.cluster.local', // port label without _
      '_._tcp.web.default.svc.cluster.local',
      '10-244-1.default.pod.cluster.local', // not an address
      '300-1-1-1.default.pod.cluster.local',
      'x.web.default.pod.cluster.local',
    ])
      expect(p(n), n).toEqual({ kind: 'none' });
  });

  it('knows what is inside a zone by whole labels', () => {
    expect(inZone('web.default.svc.cluster.local', Z)).toBe(true);
    expect(inZone('cluster.local', Z)).toBe(true);
    expect(inZone('evilcluster.local', Z)).toBe(false);
    expect(inZone('example.com', Z)).toBe(false);
  });

  it('turns addresses into labels and back', () => {
    expect(ipToLabel('10.244.1.5')).toBe('10-244-1-5');
    expect(ipToLabel('fd00:0::5')).toBe('fd00--5');
    expect(podLabelToIp('fd00--5')).toBe('fd00::5');
    expect(podLabelToIp('10-244-1-5')).toBe('10.244.1.5');
    expect(podLabelToIp('web-0')).toBeUndefined();
  });

  it('reads and writes reverse names', () => {
    expect(ipToReverseName('10.96.0.10')).toBe('10.0.96.10.in-addr.arpa');
    expect(reverseNameToIp('10.0.96.10.in-addr.arpa')).toBe('10.96.0.10');
    const v6 = ipToReverseName('fd00::a');
    expect(v6).toBe(`a.${'0.'.repeat(29)}d.f.ip6.arpa`);
    expect(reverseNameToIp(v6)).toBe('fd00::a');
    expect(reverseNameToIp('96.10.in-addr.arpa')).toBeUndefined(); // above a whole address
    expect(reverseNameToIp('010.0.96.10.in-addr.arpa')).toBeUndefined();
    expect(reverseNameToIp('256.0.96.10.in-addr.arpa')).toBeUndefined();
    expect(reverseNameToIp('web.default.svc.cluster.local')).toBeUndefined();
    expect(() => ipToReverseName('web')).toThrow(/not an IP address/);
  });
});
