// One DNS message in, one out: header checks, EDNS(0), and truncation to what the client can take over UDP.
// Bad input gets the precise rcode (FORMERR for what does not parse or asks not one question, NOTIMP for an
// opcode other than QUERY) and nothing else; a message that is itself a response, or too short to carry an
// ID, gets no answer at all (RFC 1035 4.1.1, RFC 5966).
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';
import type { Rcode, Resolver } from './resolver.js';

/** The most a UDP answer may hold without EDNS(0) (RFC 1035). */
export const CLASSIC_UDP_SIZE = 512;
/** The UDP payload size this server advertises and honours at most (the DNS flag day 2020 value). */
export const EDNS_UDP_SIZE = 1232;

const RCODES: Record<Rcode, number> = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 };
const QR = 1 << 15;
const AA = dnsPacket.AUTHORITATIVE_ANSWER;
const TC = dnsPacket.TRUNCATED_RESPONSE;
const RD = dnsPacket.RECURSION_DESIRED;

function headerOnly(query: Buffer, rcode: Rcode): Buffer {
  // The ID, the opcode and RD are echoed from the query's first bytes; no sections.
  const out = Buffer.alloc(12);
  out.writeUInt16BE(query.readUInt16BE(0), 0);
  const flags = query.readUInt16BE(2);
  out.writeUInt16BE(QR | (flags & (0xf << 11)) | (flags & RD) | RCODES[rcode], 2);
  return out;
}

/**
 * The answer to `query`, encoded; undefined when no answer must be sent. Over UDP the answer fits the
 * client's size (512 bytes, or its EDNS(0) payload size up to 1232): records that do not fit are left out
 * and TC is set, so the client asks again over TCP.
 */
export function answerMessage(resolver: Resolver, query: Buffer, transport: 'udp' | 'tcp'): Buffer | undefined {
  if (query.length < 12) return undefined;
  if (query.readUInt16BE(2) & QR) return undefined;
  let q: Packet;
  try {
    q = dnsPacket.decode(query);
  } catch {
    return headerOnly(query, 'FORMERR');
  }
  if ((q as Packet & { opcode?: string }).opcode !== 'QUERY') return headerOnly(query, 'NOTIMP');
  const questions = q.questions ?? [];
  if (questions.length !== 1) return headerOnly(query, 'FORMERR');
  const opt = (q.additionals ?? []).find((a): a is Extract<Answer, { type: 'OPT' }> => a.type === 'OPT');
  const optCount = (q.additionals ?? []).filter((a) => a.type === 'OPT').length;
  if (optCount > 1) return headerOnly(query, 'FORMERR');

  try {
    return respond(resolver, q, opt, transport);
  } catch {
    return headerOnly(query, 'SERVFAIL');
  }
}

function respond(resolver: Resolver, q: Packet, opt: Extract<Answer, { type: 'OPT' }> | undefined, transport: 'udp' | 'tcp'): Buffer {
  const question = q.questions![0];
  const r = resolver.resolve({ name: question.name, type: question.type, class: question.class });
  const ednsOut: Answer[] = opt
    ? [{ name: '.', type: 'OPT', udpPayloadSize: EDNS_UDP_SIZE, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] } as Answer]
    : [];
  const response: Packet = {
    id: q.id,
    type: 'response',
    flags: (r.authoritative ? AA : 0) | ((q.flags ?? 0) & RD) | RCODES[r.rcode],
    questions: [question],
    answers: r.answers,
    authorities: r.authorities,
    additionals: [...r.additionals, ...ednsOut],
  };
  let out = dnsPacket.encode(response);
  if (transport === 'tcp') return out;
  const limit = opt ? Math.min(Math.max(opt.udpPayloadSize, CLASSIC_UDP_SIZE), EDNS_UDP_SIZE) : CLASSIC_UDP_SIZE;
  if (out.length <= limit) return out;
  // Too big for UDP: keep the OPT record and as many answers as fit, drop the rest, and set TC.
  const answers = [...r.answers];
  const truncated: Packet = { ...response, flags: (response.flags ?? 0) | TC, authorities: [], additionals: ednsOut, answers };
  out = dnsPacket.encode(truncated);
  while (out.length > limit && answers.length > 0) {
    answers.pop();
    out = dnsPacket.encode(truncated);
  }
  return out;
}
