// Random and mutated messages, bounded in size and count: the server never throws, and whatever it sends
// back is a well-formed response with the query's ID.
import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { buildClusterIndex } from './cluster-index.js';
import { answerMessage } from './message.js';
import { Resolver } from './resolver.js';

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const index = buildClusterIndex(
  {
    services: [
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { clusterIP: '10.96.0.20', ports: [{ name: 'http', port: 80 }] } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ext', namespace: 'default' }, spec: { type: 'ExternalName', externalName: 'example.com' } },
    ],
    endpointSlices: [],
  },
  'cluster.local',
);
const resolver = new Resolver({ zone: 'cluster.local' }, () => index);

function check(input: Buffer) {
  let out: Buffer | undefined;
  expect(() => (out = answerMessage(resolver, input, 'udp'))).not.toThrow();
  if (!out) return;
  expect(out.length).toBeGreaterThanOrEqual(12);
  expect(out.readUInt16BE(0)).toBe(input.readUInt16BE(0));
  expect(out.readUInt16BE(2) & 0x8000).toBe(0x8000);
  expect(out.length).toBeLessThanOrEqual(1232);
}

describe('bad input, at random', () => {
  it('survives random bytes', () => {
    const r = rng(19);
    for (let i = 0; i < 3000; i++) check(Buffer.from(Array.from({ length: Math.floor(r() * 300) }, () => Math.floor(r() * 256))));
  });

  it('survives queries with flipped bytes', () => {
    const r = rng(53);
    const base = dnsPacket.encode({
      id: 7,
      type: 'query',
      questions: [{ name: '_http._tcp.web.default.svc.cluster.local', type: 'SRV' }],
      additionals: [{ name: '.', type: 'OPT', udpPayloadSize: 4096, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] } as dnsPacket.Answer],
    });
    for (let i = 0; i < 3000; i++) {
      const m = Buffer.from(base);
      for (let k = 0; k < 1 + Math.floor(r() * 4); k++) m[Math.floor(r() * m.length)] = Math.floor(r() * 256);
      check(m);
    }
  });
});
