import { isIP } from 'node:net';
import { describe, expect, it } from 'vitest';
import { formatIP, ipFamily, parseIP } from './ip.js';

const samples = [
  '0.0.0.0', '10.88.0.1', '255.255.255.255', '256.1.1.1', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.04', '1..2.3',
  ' 1.2.3.4', '1.2.3.4 ', '', 'a.b.c.d', '1.2.3.-4',
  '::', '::1', '1::', 'fd00:88::2', 'FD00:88::ABCD', '2001:db8:0:0:0:0:0:1', '2001:db8::1:0:0:1', '1:2:3:4:5:6:7:8',
  '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '1:2:3:4:5:6:7::', '::1:2:3:4:5:6:7', ':::', '1:::2', '1::2::3', ':1::2', '1::2:',
  ':1:2:3:4:5:6:7', '12345::1', 'g::1', '::ffff:10.1.2.3', '::10.1.2.3', '1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:7:1.2.3.4',
  '::ffff:256.1.2.3', '::ffff:1.2.3', '1.2.3.4::', 'fe80::1', '::ffff:', 'ffff::ffff:ffff:ffff:ffff:ffff:ffff',
  'ffff:ffff:ffff:ffff:ffff:ffff:ffff::', '0:0:0:0:0:0:0:0', '1:2:3:4:5::6:7', '1:2:3:4:5:6::7:8',
];

describe('ipFamily', () => {
  it('agrees with net.isIP on addresses without a zone id', () => {
    for (const s of samples) expect([s, ipFamily(s)]).toEqual([s, isIP(s)]);
  });

  it('rejects IPv6 zone ids, which no CNI field takes', () => {
    expect(isIP('fe80::1%eth0')).toBe(6);
    expect(ipFamily('fe80::1%eth0')).toBe(0);
    expect(parseIP('fe80::1%eth0')).toBeUndefined();
  });

  it('round-trips through parseIP and formatIP', () => {
    for (const s of ['10.88.0.1', 'fd00:88::2', '::ffff:a01:203', '2001:db8::1:0:0:1']) {
      const p = parseIP(s)!;
      expect(formatIP(p.family, p.value)).toBe(s);
    }
    expect(parseIP('::ffff:10.1.2.3')!.value).toBe(0xffff0a010203n);
  });
});
