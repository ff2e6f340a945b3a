// Bad and edge-case messages, decoded with dns-packet as a client would.
import * as dnsPacket from 'dns-packet';
import { describe, expect, it } from 'vitest';
import { buildClusterIndex } from './cluster-index.js';
import { answerMessage } from './message.js';
import { Resolver } from './resolver.js';

const index = buildClusterIndex(
  {
    services: [
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: 'default' },
        spec: { clusterIPs: ['10.96.0.20', 'fd00:96::20'], ports: [{ name: 'http', port: 80 }] },
      },
    ],
    endpointSlices: [],
    pods: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: { containers: [] }, status: { podIP: '10.244.1.7' } }],
  },
  'cluster.local',
);
const resolver = new Resolver({ zone: 'cluster.local' }, () => index, () => 1234);

function query(name: string, type: 'A' | 'AAAA' = 'A', extra: Partial<dnsPacket.Packet> = {}): Buffer {
  return dnsPacket.encode({ id: 4242, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type, class: 'IN' }], ...extra });
}
const dataOf = (x: dnsPacket.Answer): unknown => ('data' in x ? x.data : undefined);
const rcodeOf = (b: Buffer) => (dnsPacket.decode(b) as unknown as { rcode: string }).rcode;

describe('messages', () => {
  it('answers A and AAAA of a dual-stack Service, echoing the ID and RD', () => {
    const a = dnsPacket.decode(answerMessage(resolver, query('WEB.default.svc.cluster.local'), 'udp')!);
    expect(a.id).toBe(4242);
    expect(a.flags! & dnsPacket.RECURSION_DESIRED).toBeTruthy();
    expect(a.answers!.map((x) => [x.name, dataOf(x)])).toEqual([['WEB.default.svc.cluster.local', '10.96.0.20']]);
    const aaaa = dnsPacket.decode(answerMessage(resolver, query('web.default.svc.cluster.local', 'AAAA'), 'tcp')!);
    expect(aaaa.answers!.map(dataOf)).toEqual(['fd00:96::20']);
    const soa = dnsPacket.decode(answerMessage(resolver, query('gone.default.svc.cluster.local'), 'udp')!);
    expect(soa.authorities![0]).toMatchObject({ type: 'SOA', data: { serial: 1234, minimum: 5 } });
  });

  it('gives FORMERR for what does not parse or asks not exactly one question', () => {
    const q = query('web.default.svc.cluster.local');
    expect(rcodeOf(answerMessage(resolver, q.subarray(0, 20), 'udp')!)).toBe('FORMERR');
    const two = dnsPacket.encode({
      id: 1,
      type: 'query',
      questions: [
        { name: 'a.default.svc.cluster.local', type: 'A' },
        { name: 'b.default.svc.cluster.local', type: 'A' },
      ],
    });
    expect(rcodeOf(answerMessage(resolver, two, 'udp')!)).toBe('FORMERR');
    expect(rcodeOf(answerMessage(resolver, dnsPacket.encode({ id: 1, type: 'query', questions: [] }), 'udp')!)).toBe('FORMERR');
  });

  it('gives NOTIMP for an opcode other than QUERY, and no answer to a response or a runt', () => {
    const status = Buffer.from(query('web.default.svc.cluster.local'));
    status.writeUInt16BE(status.readUInt16BE(2) | (2 << 11), 2); // opcode STATUS
    const r = answerMessage(resolver, status, 'udp')!;
    expect(rcodeOf(r)).toBe('NOTIMP');
    expect(r.readUInt16BE(0)).toBe(4242);
    const resp = Buffer.from(query('web.default.svc.cluster.local'));
    resp.writeUInt16BE(resp.readUInt16BE(2) | 0x8000, 2);
    expect(answerMessage(resolver, resp, 'udp')).toBeUndefined();
    expect(answerMessage(resolver, Buffer.alloc(5), 'udp')).toBeUndefined();
  });

  it('answers pods as `pods verified` only for addresses a pod in that namespace has', () => {
    const verified = new Resolver({ zone: 'cluster.local', pods: 'verified' }, () => index);
    expect(verified.resolve({ name: '10-244-1-7.default.pod.cluster.local', type: 'A' }).answers.map(dataOf)).toEqual(['10.244.1.7']);
    expect(verified.resolve({ name: '10-244-1-8.default.pod.cluster.local', type: 'A' }).rcode).toBe('NXDOMAIN');
    const disabled = new Resolver({ zone: 'cluster.local', pods: 'disabled' }, () => index);
    expect(disabled.resolve({ name: '10-244-1-7.default.pod.cluster.local', type: 'A' }).rcode).toBe('NXDOMAIN');
  });

  it('refuses classes other than IN and names outside its zones', () => {
    expect(resolver.resolve({ name: 'web.default.svc.cluster.local', type: 'A', class: 'CH' }).rcode).toBe('NOTIMP');
    expect(resolver.resolve({ name: 'example.com', type: 'A' }).rcode).toBe('REFUSED');
  });
});
