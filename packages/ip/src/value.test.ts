import { describe, expect, it } from 'vitest';
import { nthAddress, nthSubnet } from './subnet.js';
import { broadcastOf, canonicalNetwork, formatIP, networkOf, parseCidr, parseIP } from './value.js';

describe('bigint view', () => {
  it('agrees with the byte view', () => {
    for (const s of ['10.88.0.1', 'fd00:88::2', '::ffff:10.1.2.3', '2001:db8::1:0:0:1']) {
      const p = parseIP(s)!;
      expect(formatIP(p.family, p.value)).toBe(s);
    }
    expect(parseIP('::ffff:10.1.2.3')!.value).toBe(0xffff0a010203n);
    expect(parseIP('fe80::1%eth0')).toBeUndefined();
  });

  it('does range arithmetic', () => {
    const c = parseCidr('10.1.2.3/24')!;
    expect(formatIP(4, networkOf(c))).toBe('10.1.2.0');
    expect(formatIP(4, broadcastOf(c))).toBe('10.1.2.255');
    expect(canonicalNetwork(parseCidr('fd00::5/64')!)).toBe('fd00::/64');
    expect(parseCidr('10.1.2.3')).toBeUndefined();
  });
});

describe('subnet carving', () => {
  it('hands out per-node pod CIDRs and node addresses', () => {
    expect(nthSubnet('10.244.0.0/16', 1, 24)).toBe('10.244.1.0/24');
    expect(nthSubnet('10.244.0.0/16', 255, 24)).toBe('10.244.255.0/24');
    expect(() => nthSubnet('10.244.0.0/16', 256, 24)).toThrow(/holds only 256 \/24 subnets, not 257/);
    expect(nthSubnet('10.0.0.0/8', 5000, 24)).toBe('10.19.136.0/24');
    expect(nthSubnet('fd00:10::/56', 3, 64)).toBe('fd00:10:0:3::/64');
    expect(nthAddress('172.18.0.0/16', 5009)).toBe('172.18.19.145');
    expect(() => nthAddress('172.18.0.0/30', 4)).toThrow(/no address at offset 4/);
    expect(() => nthAddress('bogus', 0)).toThrow(/invalid subnet bogus/);
  });
});
