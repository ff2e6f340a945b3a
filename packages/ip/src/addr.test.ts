import { isIP } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  canonicalIP,
  formatIpAddr,
  formatPrefix,
  ipFamily,
  ipKey,
  ipKeyToIp,
  parseAddrWithLen,
  parseIpAddr,
  parsePrefix,
  prefixContainsIp,
  prefixesOverlap,
} from './addr.js';

const samples = [
  '0.0.0.0', '10.88.0.1', '255.255.255.255', '256.1.1.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.04', '1..2.3',
  ' 1.2.3.4', '1.2.3.4 ', '', 'a.b.c.d', '1.2.3.-4',
  '::', '::1', '1::', 'fd00:88::2', 'FD00:88::ABCD', '2001:db8:0:0:0:0:0:1', '2001:db8::1:0:0:1', '1:2:3:4:5:6:7:8',
  '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '1:2:3:4:5:6:7::', '::1:2:3:4:5:6:7', ':::', '1:::2', '1::2::3', ':1::2', '1::2:',
  ':1:2:3:4:5:6:7', '12345::1', 'g::1', '::ffff:10.1.2.3', '::10.1.2.3', '1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4',
  '::ffff:256.1.2.3', '::ffff:1.2.3', '1.2.3.4::', 'fe80::1', '::ffff:', 'ffff::ffff:ffff:ffff:ffff:ffff:ffff',
  'ffff:ffff:ffff:ffff:ffff:ffff:ffff::', '0:0:0:0:0:0:0:0', '1:2:3:4:5::6:7', '1:2:3:4:5:6::7:8',
];

describe('addresses', () => {
  it('accept exactly what net.isIP accepts, minus zone ids', () => {
    for (const s of samples) expect([s, ipFamily(s)]).toEqual([s, isIP(s)]);
    expect(isIP('fe80::1%eth0')).toBe(6);
    expect(ipFamily('fe80::1%eth0')).toBe(0);
  });

  it('format as RFC 5952 text, IPv4-mapped addresses with their dotted tail', () => {
    const cases: Record<string, string> = {
      'FD00:88::ABCD': 'fd00:88::abcd',
      '2001:db8:0:0:0:0:0:1': '2001:db8::1',
      '2001:db8:0:0:1:0:0:1': '2001:db8::1:0:0:1',
      '1:0:2:3:4:5:6:7': '1:0:2:3:4:5:6:7',
      '::ffff:a01:203': '::ffff:10.1.2.3',
      '0:0:0:0:0:0:0:0': '::',
    };
    for (const [i, o] of Object.entries(cases)) expect(canonicalIP(i)).toBe(o);
    expect(canonicalIP('10.0.0.256')).toBeUndefined();
  });

  it('round-trip through table keys', () => {
    for (const s of ['10.96.0.1', 'fd00::a']) expect(formatIpAddr(ipKeyToIp(ipKey(parseIpAddr(s)!)))).toBe(s);
  });
});

describe('prefixes', () => {
  it('name networks: host bits must be zero and a length is required', () => {
    expect(formatPrefix(parsePrefix('10.96.0.0/12')!)).toBe('10.96.0.0/12');
    expect(parsePrefix('10.96.0.1/12')).toBeNull();
    expect(parsePrefix('10.96.0.0')).toBeNull();
    expect(parsePrefix('10.96.0.0/33')).toBeNull();
    expect(parsePrefix('fd00::/129')).toBeNull();
    expect(formatPrefix(parsePrefix('FD00:0::/8')!)).toBe('fd00::/8');
  });

  it('keep an interface address with its length', () => {
    expect(parseAddrWithLen('10.0.0.5/24')).toMatchObject({ ip: { family: 4 }, len: 24 });
    expect(parseAddrWithLen('10.0.0.5')!.len).toBe(32);
    expect(parseAddrWithLen('10.0.0.5/')).toBeNull();
  });

  it('contain and overlap', () => {
    const p = parsePrefix('10.96.0.0/12')!;
    expect(prefixContainsIp(p, parseIpAddr('10.111.255.255')!)).toBe(true);
    expect(prefixContainsIp(p, parseIpAddr('10.112.0.0')!)).toBe(false);
    expect(prefixContainsIp(p, parseIpAddr('::ffff:10.96.0.1')!)).toBe(false);
    expect(prefixesOverlap(p, parsePrefix('10.100.0.0/16')!)).toBe(true);
    expect(prefixesOverlap(parsePrefix('10.0.0.0/8')!, p)).toBe(true);
    expect(prefixesOverlap(p, parsePrefix('10.112.0.0/16')!)).toBe(false);
  });
});
