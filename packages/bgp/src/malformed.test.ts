// A raw TCP peer on loopback sends broken messages; the speaker must answer with the RFC 4271 §6
// NOTIFICATION and close only that session, while another session stays Established.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPort, until } from './bird.test-util.js';
import { encodeKeepalive, encodeOpen, MessageReader } from './message.js';
import { BgpSpeaker } from './speaker.js';

const M = 'ff'.repeat(16);
const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

interface Raw {
  sock: net.Socket;
  messages: { type: number; body: Buffer }[];
  closed: Promise<void>;
}

function connectRaw(local: string, port: number): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.20', port, localAddress: local });
    const reader = new MessageReader();
    const raw: Raw = { sock, messages: [], closed: new Promise((r) => sock.on('close', () => r())) };
    sock.on('data', (d) => {
      reader.push(d);
      for (let m = reader.next(); m; m = reader.next()) raw.messages.push({ type: m.type, body: m.body });
    });
    sock.once('error', reject);
    sock.once('connect', () => resolve(raw));
  });
}

function open(as: number, id: string, holdTime = 90): Buffer {
  return encodeOpen({ version: 4, myAs: as, holdTime, bgpId: id, capabilities: [{ kind: 'as4', as }] });
}

/** Connects as `local`, completes the OPEN exchange and returns the Established raw session. */
async function established(local: string, as: number, port: number): Promise<Raw> {
  const r = await connectRaw(local, port);
  r.sock.write(open(as, local));
  await until(() => r.messages.some((m) => m.type === 4), 'KEEPALIVE from the speaker', 15_000);
  r.sock.write(encodeKeepalive());
  return r;
}

async function notification(r: Raw): Promise<[number, number, string]> {
  await Promise.race([
    r.closed,
    new Promise((_, rej) => setTimeout(() => rej(new Error('socket not closed')), 15_000)),
  ]);
  const n = r.messages.find((m) => m.type === 3);
  if (!n) throw new Error(`no NOTIFICATION; got types ${r.messages.map((m) => m.type)}`);
  return [n.body[0]!, n.body[1]!, n.body.subarray(2).toString('hex')];
}

describe('malformed messages from a raw TCP peer', () => {
  const port = randomPort();
  let speaker: BgpSpeaker;
  let bystander: Raw;

  beforeAll(async () => {
    speaker = new BgpSpeaker({
      routerId: '127.0.0.20',
      as: 65020,
      listen: { address: '127.0.0.20', port },
      neighbors: [
        { address: '127.0.0.21', as: 65021, passive: true },
        { address: '127.0.0.22', as: 65022, passive: true },
      ],
    });
    speaker.advertise('10.50.0.0/24');
    await speaker.start();
    bystander = await established('127.0.0.22', 65022, port);
    await until(() => speaker.peer('127.0.0.22')?.state === 'Established', 'bystander Established');
  });

  afterAll(async () => {
    bystander?.sock.destroy();
    await speaker?.destroy();
  });

  const cases: [string, string, [number, number, string?]][] = [
    ['bad marker', `${'ff'.repeat(15)}00 0013 04`, [1, 1]],
    ['length above 4096', `${M} 1388 04`, [1, 2, '1388']],
    ['length below 19', `${M} 0010 04`, [1, 2, '0010']],
    ['KEEPALIVE with a body', `${M} 0014 04 00`, [1, 2, '0014']],
    ['unknown message type', `${M} 0013 0a`, [1, 3, '0a']],
    ['truncated attributes', `${M} 0020 02 0000 0009 400101 00 400209 0201`, [3, 1]],
    ['attribute list longer than the message', `${M} 0017 02 0000 00ff`, [3, 1]],
    ['missing NEXT_HOP', `${M} 0026 02 0000 000d 400101 00 400206 0201 0000fded 080a`, [3, 3, '03']],
    [
      'invalid ORIGIN',
      `${M} 002e 02 0000 0014 400101 07 400206 0201 0000fded 400304 7f000015 100a01`,
      [3, 6],
    ],
    [
      'attribute flags error',
      `${M} 002e 02 0000 0014 800101 00 400206 0201 0000fded 400304 7f000015 100a01`,
      [3, 4],
    ],
    ['OPEN in Established', '', [5, 3]],
  ];

  for (const [name, bytes, expected] of cases) {
    it(`${name} → NOTIFICATION ${expected[0]}/${expected[1]}, only that session closes`, async () => {
      const r = await established('127.0.0.21', 65021, port);
      await until(() => speaker.peer('127.0.0.21')?.state === 'Established', 'Established');
      r.sock.write(bytes ? hex(bytes) : open(65021, '127.0.0.21'));
      const [code, subcode, data] = await notification(r);
      expect([code, subcode]).toEqual([expected[0], expected[1]]);
      if (expected[2] !== undefined) expect(data).toBe(expected[2]);
      await until(() => speaker.peer('127.0.0.21')?.state !== 'Established', 'session down');
      expect(speaker.peer('127.0.0.21')!.lastError).toMatchObject({
        direction: 'sent',
        code: expected[0],
        subcode: expected[1],
      });
      expect(speaker.peer('127.0.0.22')!.state).toBe('Established');
      expect(bystander.sock.destroyed).toBe(false);
    });
  }

  const openCases: [string, Buffer, [number, number, string?]][] = [
    ['OPEN with version 3', hex(`${M} 001d 01 03 fded 005a 7f000015 00`), [2, 1, '0004']],
    ['OPEN from the wrong AS', open(65099, '127.0.0.21'), [2, 2]],
    ['OPEN with hold time 2', open(65021, '127.0.0.21', 2), [2, 6]],
    ['OPEN with BGP identifier 0.0.0.0', open(65021, '0.0.0.0'), [2, 3]],
    ['OPEN with an unknown optional parameter', hex(`${M} 001f 01 04 fded 005a 7f000015 02 07 00`), [2, 4]],
    ['UPDATE before OPEN', hex(`${M} 0017 02 0000 0000`), [5, 1]],
  ];
  for (const [name, bytes, expected] of openCases) {
    it(`${name} → NOTIFICATION ${expected[0]}/${expected[1]}`, async () => {
      const r = await connectRaw('127.0.0.21', port);
      r.sock.write(bytes);
      const [code, subcode, data] = await notification(r);
      expect([code, subcode]).toEqual([expected[0], expected[1]]);
      if (expected[2] !== undefined) expect(data).toBe(expected[2]);
      expect(speaker.peer('127.0.0.22')!.state).toBe('Established');
    });
  }

  it('a connection from an unconfigured address gets Cease / Connection Rejected', async () => {
    const r = await connectRaw('127.0.0.23', port);
    const [code, subcode] = await notification(r);
    expect([code, subcode]).toEqual([6, 5]);
  });

  it('the bystander session still carries routes', async () => {
    const updates = bystander.messages.filter((m) => m.type === 2);
    expect(updates.length).toBeGreaterThan(0);
    expect(speaker.peer('127.0.0.22')!.state).toBe('Established');
  });
});
