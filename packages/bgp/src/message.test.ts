import { describe, expect, it } from 'vitest';
import { BgpError } from './errors.js';
import { parsePrefix } from '@kemu/ip';
import {
  decodeOne,
  encodeKeepalive,
  encodeMessage,
  encodeNotification,
  encodeOpen,
  encodeRouteRefresh,
  encodeUpdate,
  mergeAs4Path,
  type UpdateMessage,
} from './message.js';

// Fixtures are written out by hand from the field layouts in RFC 4271 §4, RFC 5492 §4, RFC 6793,
// RFC 4760 §3-4 and RFC 2918 §3, not produced by the encoder under test.
const M = 'ff'.repeat(16);
const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const pfx = (s: string) => parsePrefix(s)!;

function err(bytes: Buffer, ctx = { as4: true }): BgpError {
  try {
    decodeOne(bytes, ctx);
  } catch (e) {
    if (e instanceof BgpError) return e;
    throw e;
  }
  throw new Error('decoded without error');
}

describe('header and simple messages', () => {
  it('KEEPALIVE is the bare 19-octet header', () => {
    expect(encodeKeepalive().toString('hex')).toBe(`${M}001304`);
    expect(decodeOne(hex(`${M}001304`))).toEqual({ type: 'keepalive' });
  });

  it('NOTIFICATION carries code, subcode and data', () => {
    expect(encodeNotification(6, 2).toString('hex')).toBe(`${M}0015030602`);
    expect(encodeNotification(1, 2, Uint8Array.of(0x00, 0x12)).toString('hex')).toBe(`${M}00170301020012`);
    const n = decodeOne(hex(`${M}00170301020012`));
    expect(n).toEqual({ type: 'notification', code: 1, subcode: 2, data: Uint8Array.of(0, 0x12) });
  });

  it('ROUTE-REFRESH is AFI, reserved, SAFI (RFC 2918)', () => {
    expect(encodeRouteRefresh(2, 1).toString('hex')).toBe(`${M}00170500020001`);
    expect(decodeOne(hex(`${M}00170500010001`))).toEqual({ type: 'route-refresh', afi: 1, safi: 1 });
  });
});

describe('OPEN', () => {
  // version 4, AS 65001, hold 90, id 10.0.0.1, one Capabilities parameter (type 2, 14 octets):
  // MP IPv4/unicast (1,4: 0001 00 01), route refresh (2,0), 4-octet AS 65001 (65=0x41,4: 0000fde9).
  const open = hex(`${M} 002d 01 04 fde9 005a 0a000001 10 02 0e 01040001 0001 0200 4104 0000fde9`);

  it('encodes to the RFC layout', () => {
    const b = encodeOpen({
      version: 4,
      myAs: 65001,
      holdTime: 90,
      bgpId: '10.0.0.1',
      capabilities: [
        { kind: 'multiprotocol', afi: 1, safi: 1 },
        { kind: 'route-refresh' },
        { kind: 'as4', as: 65001 },
      ],
    });
    expect(b.toString('hex')).toBe(open.toString('hex'));
  });

  it('decodes capabilities, keeping unknown ones', () => {
    expect(decodeOne(open)).toEqual({
      type: 'open',
      version: 4,
      myAs: 65001,
      holdTime: 90,
      bgpId: '10.0.0.1',
      capabilities: [
        { kind: 'multiprotocol', afi: 1, safi: 1 },
        { kind: 'route-refresh' },
        { kind: 'as4', as: 65001 },
      ],
    });
    // 4-octet AS 4200000001 (0xfa56ea01) behind AS_TRANS (23456 = 0x5ba0), plus unknown capability 64 (len 2).
    const o = decodeOne(hex(`${M} 0029 01 04 5ba0 00b4 c0a80001 0c 02 0a 4104 fa56ea01 4002 0078`));
    expect(o).toMatchObject({
      myAs: 23456,
      holdTime: 180,
      capabilities: [
        { kind: 'as4', as: 4200000001 },
        { kind: 'unknown', code: 64, value: Uint8Array.of(0, 0x78) },
      ],
    });
  });

  it('rejects version 3 with Unsupported Version Number, data = version 4', () => {
    const e = err(hex(`${M} 001d 01 03 fde9 005a 0a000001 00`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([2, 1, '0004']);
  });

  it('rejects an unknown optional parameter type', () => {
    const e = err(hex(`${M} 001f 01 04 fde9 005a 0a000001 02 01 00`));
    expect([e.code, e.subcode]).toEqual([2, 4]);
  });

  it('rejects a parameter length that does not match the message', () => {
    const e = err(hex(`${M} 001f 01 04 fde9 005a 0a000001 05 02 00`));
    expect([e.code, e.subcode]).toEqual([1, 2]);
  });
});

describe('UPDATE', () => {
  // ORIGIN IGP (40 01 01 00), AS_PATH one AS_SEQUENCE [65001] in 4 octets (40 02 06 02 01 0000fde9),
  // NEXT_HOP 10.0.0.1 (40 03 04 0a000001); NLRI 10.1.0.0/16 = 10 0a 01.
  const upd = hex(`${M} 002e 02 0000 0014 400101 00 400206 02 01 0000fde9 400304 0a000001 100a01`);
  const msg: UpdateMessage = {
    type: 'update',
    withdrawn: [],
    attributes: { origin: 0, asPath: [{ type: 2, asns: [65001] }], nextHop: '10.0.0.1' },
    nlri: [pfx('10.1.0.0/16')],
  };

  it('encodes and decodes an IPv4 announcement', () => {
    expect(encodeMessage(msg).toString('hex')).toBe(upd.toString('hex'));
    expect(decodeOne(upd)).toEqual(msg);
  });

  it('uses 2-octet AS numbers (AS_TRANS for big ones) when 4-octet AS is not negotiated', () => {
    const b = encodeUpdate(
      {
        withdrawn: [],
        attributes: { origin: 0, asPath: [{ type: 2, asns: [65001, 4200000001] }], nextHop: '10.0.0.1' },
        nlri: [],
      },
      { as4: false },
    );
    expect(b.toString('hex')).toBe(
      hex(`${M} 002b 02 0000 0014 40010100 400206 02 02 fde9 5ba0 400304 0a000001`).toString('hex'),
    );
  });

  it('encodes withdrawals', () => {
    // Withdrawn Routes Length 7: 10.1.0.0/16 (10 0a 01) and 192.168.1.0/24 (18 c0 a8 01).
    const b = encodeUpdate(
      { withdrawn: [pfx('10.1.0.0/16'), pfx('192.168.1.0/24')], attributes: {}, nlri: [] },
      { as4: true },
    );
    expect(b.toString('hex')).toBe(`${M}001e020007100a0118c0a8010000`);
    expect(decodeOne(b)).toMatchObject({ withdrawn: [pfx('10.1.0.0/16'), pfx('192.168.1.0/24')], nlri: [] });
  });

  it('carries IPv6 in MP_REACH_NLRI / MP_UNREACH_NLRI (RFC 4760)', () => {
    // MP_REACH: flags 80, type 0e, len 26: AFI 2, SAFI 1, NH len 16 (fd00::1), reserved 0, fd00:1::/32.
    const attrs = `400101 00 400200 800e1a 0002 01 10 fd000000000000000000000000000001 00 20fd000001`;
    const b = hex(`${M} 003b 02 0000 0024 ${attrs.replace(/\s/g, '')}`);
    const m = decodeOne(b) as UpdateMessage;
    expect(m.attributes.mpReach).toEqual({
      afi: 2,
      safi: 1,
      nextHops: ['fd00::1'],
      nlri: [pfx('fd00:1::/32')],
    });
    expect(encodeMessage(m).toString('hex')).toBe(b.toString('hex'));
    // MP_UNREACH: flags 80, type 0f, len 8: AFI 2, SAFI 1, fd00:1::/32.
    const w = hex(`${M} 0022 02 0000 000b 800f08 0002 01 20fd000001`);
    expect((decodeOne(w) as UpdateMessage).attributes.mpUnreach).toEqual({
      afi: 2,
      safi: 1,
      withdrawn: [pfx('fd00:1::/32')],
    });
  });

  it('decodes reflection attributes and LOCAL_PREF', () => {
    // LOCAL_PREF 100 (40 05 04 00000064), ORIGINATOR_ID 10.0.0.2 (80 09 04), CLUSTER_LIST [10.0.0.9] (80 0a 04).
    const b = hex(
      `${M} 003e 02 0000 0023 400101 00 400200 400304 0a000002 400504 00000064 800904 0a000002 800a04 0a000009 180a0203`,
    );
    expect((decodeOne(b) as UpdateMessage).attributes).toEqual({
      origin: 0,
      asPath: [],
      nextHop: '10.0.0.2',
      localPref: 100,
      originatorId: '10.0.0.2',
      clusterList: ['10.0.0.9'],
    });
  });

  it('merges AS4_PATH into a 2-octet AS_PATH (RFC 6793 §4.2.3)', () => {
    expect(
      mergeAs4Path([{ type: 2, asns: [65001, 23456, 23456] }], [{ type: 2, asns: [4200000001, 4200000002] }]),
    ).toEqual([
      { type: 2, asns: [65001] },
      { type: 2, asns: [4200000001, 4200000002] },
    ]);
  });
});

describe('error handling (RFC 4271 §6)', () => {
  const attrs = (a: string, nlri = '100a01') => {
    const body = Buffer.concat([
      hex('0000'),
      Buffer.from([(a.length / 2) >> 8, (a.length / 2) & 0xff]),
      hex(a),
      hex(nlri),
    ]);
    const len = 19 + body.length;
    return Buffer.concat([hex(M), Buffer.from([len >> 8, len & 0xff, 2]), body]);
  };
  const ORIGIN = '40010100';
  const ASP = '400206020100 00fde9'.replace(' ', '');
  const NH = '4003040a000001';

  it('bad marker: Connection Not Synchronized', () => {
    const e = err(hex(`${'ff'.repeat(15)}fe001304`));
    expect([e.code, e.subcode]).toEqual([1, 1]);
  });

  it('bad length: Bad Message Length with the length as data', () => {
    let e = err(hex(`${M}001204`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([1, 2, '0012']);
    e = err(hex(`${M}100104`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([1, 2, '1001']);
    e = err(hex(`${M}00140400`)); // KEEPALIVE must be exactly 19
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([1, 2, '0014']);
    e = err(hex(`${M}001c01040000000000000000`)); // OPEN shorter than 29
    expect([e.code, e.subcode]).toEqual([1, 2]);
  });

  it('unknown type: Bad Message Type with the type as data', () => {
    const e = err(hex(`${M}001309`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([1, 3, '09']);
  });

  it('route refresh with a wrong length: ROUTE-REFRESH Message Error (RFC 7313)', () => {
    const e = err(hex(`${M}0018050001000100`));
    expect([e.code, e.subcode]).toEqual([7, 1]);
  });

  it('lengths that overrun the message: Malformed Attribute List', () => {
    expect(err(hex(`${M}0017020009 0000`.replace(' ', ''))).subcode).toBe(1);
    expect(err(hex(`${M}00170200000050`)).subcode).toBe(1);
  });

  it('truncated attribute: Malformed Attribute List', () => {
    // AS_PATH claims 9 octets but only 6 remain in the attribute list.
    const e = err(attrs(`${ORIGIN}400209020100 00fde9`.replace(' ', ''), ''));
    expect([e.code, e.subcode]).toEqual([3, 1]);
  });

  it('repeated attribute: Malformed Attribute List', () => {
    expect(err(attrs(`${ORIGIN}${ORIGIN}${ASP}${NH}`)).subcode).toBe(1);
  });

  it('wrong flags: Attribute Flags Error with the attribute as data', () => {
    const e = err(attrs(`c0010100${ASP}${NH}`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([3, 4, 'c0010100']);
  });

  it('wrong length: Attribute Length Error with the attribute as data', () => {
    const e = err(attrs(`${ORIGIN}${ASP}4003050a00000100`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([3, 5, '4003050a00000100']);
  });

  it('ORIGIN 3: Invalid ORIGIN Attribute', () => {
    const e = err(attrs(`40010103${ASP}${NH}`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([3, 6, '40010103']);
  });

  it('missing NEXT_HOP: Missing Well-known Attribute with the type code as data', () => {
    const e = err(attrs(`${ORIGIN}${ASP}`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([3, 3, '03']);
  });

  it('unknown well-known attribute: Unrecognized Well-known Attribute', () => {
    const e = err(attrs(`${ORIGIN}${ASP}${NH}406301ff`));
    expect([e.code, e.subcode, Buffer.from(e.data).toString('hex')]).toEqual([3, 2, '406301ff']);
  });

  it('next hop 0.0.0.0: Invalid NEXT_HOP Attribute', () => {
    const e = err(attrs(`${ORIGIN}${ASP}40030400000000`));
    expect([e.code, e.subcode]).toEqual([3, 8]);
  });

  it('AS_PATH segment overrun: Malformed AS_PATH', () => {
    const e = err(attrs(`${ORIGIN}400206020200 00fde9${NH}`.replace(' ', '')));
    expect([e.code, e.subcode]).toEqual([3, 11]);
  });

  it('prefix length 33: Invalid Network Field', () => {
    const e = err(attrs(`${ORIGIN}${ASP}${NH}`, '210a000000'));
    expect([e.code, e.subcode]).toEqual([3, 10]);
  });

  it('unknown optional transitive attributes are kept and re-sent with Partial set', () => {
    const m = decodeOne(attrs(`${ORIGIN}${ASP}${NH}c0630201ff`)) as UpdateMessage;
    expect(m.attributes.unknown).toEqual([{ flags: 0xc0, type: 0x63, value: Uint8Array.of(1, 0xff) }]);
    expect(encodeMessage(m).toString('hex')).toContain('e0630201ff');
  });
});
