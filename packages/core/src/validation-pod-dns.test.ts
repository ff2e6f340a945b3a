import { describe, expect, it } from 'vitest';
import type { Pod } from './api-core.js';
import { applyDefaults } from './defaults.js';
import { validationErrors } from './validation.js';

const pod = (spec: Partial<Pod['spec']>): Pod => {
  const p: Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec } };
  applyDefaults(p);
  return p;
};
const messages = (p: Pod) => validationErrors(p).map((c) => `${c.field}: ${c.message}`);

describe('pod DNS validation', () => {
  it('asks a None pod for its own nameservers', () => {
    expect(messages(pod({ dnsPolicy: 'None' }))).toEqual(['spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None']);
    expect(messages(pod({ dnsPolicy: 'None', dnsConfig: { searches: ['a.example'] } }))).toEqual([
      'spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None',
    ]);
    expect(messages(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.2.3.4'], searches: ['ns1.svc.cluster.local.'], options: [{ name: 'ndots', value: '2' }] } }))).toEqual([]);
  });

  it('holds nameservers, search domains and options to the limits and forms upstream does', () => {
    const msgs = messages(
      pod({
        dnsConfig: {
          nameservers: ['1.1.1.1', '8.8.8.8', '9.9.9.9', 'dns.example'],
          searches: [...Array.from({ length: 32 }, (_, i) => `d${i}.example`), 'Bad_Domain'],
          options: [{ value: '2' }],
        },
      }),
    );
    expect(msgs[0]).toMatch(/^spec\.dnsConfig\.nameservers: Invalid value: \[.*\]: must not have more than 3 nameservers$/);
    expect(msgs[1]).toBe('spec.dnsConfig.nameservers[3]: Invalid value: "dns.example": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)');
    expect(msgs[2]).toMatch(/^spec\.dnsConfig\.searches: Invalid value: \[.*\]: must not have more than 32 search paths$/);
    expect(msgs[3]).toMatch(/^spec\.dnsConfig\.searches\[32\]: Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain/);
    expect(msgs[4]).toBe('spec.dnsConfig.options[0]: Required value: must not be empty');
    expect(msgs).toHaveLength(5);
    const long = messages(pod({ dnsConfig: { searches: Array.from({ length: 20 }, (_, i) => `${'x'.repeat(60)}.${'y'.repeat(60)}.d${i}`) } }));
    expect(long).toHaveLength(1);
    expect(long[0]).toMatch(/must not have more than 2048 characters \(including spaces\) in the search list$/);
  });
});
