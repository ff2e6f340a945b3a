// A pod's stub resolver (glibc's res_search over res_send): for each name its search list yields, a query
// goes to each nameserver of resolv.conf in turn over a transport the caller supplies (a datagram through
// the simulated datapath, a real socket), and the answers decide. NXDOMAIN and NODATA move on to the next
// name; a server that does not answer, or answers SERVFAIL/REFUSED, moves on to the next server, and when
// none answered the lookup stops there, as glibc's does (TRY_AGAIN), rather than asking further names.
import { randomInt } from 'node:crypto';
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet } from 'dns-packet';
import { type SearchConfig, type SearchResult, searchCandidates } from './search-path.js';

/** Sends one query message to `server` and gives back the reply message, or undefined when none came. */
export type DnsExchange = (server: string, query: Buffer) => Promise<Buffer | undefined>;

export interface StubConfig extends SearchConfig {
  /** resolv.conf's nameservers, asked in order. */
  nameservers: readonly string[];
}

/** One query the stub sent and what became of it. */
export interface StubQuery {
  name: string;
  type: 'A' | 'AAAA';
  server: string;
  /** The reply's rcode, or undefined when no usable reply came. */
  rcode?: string;
  /** Addresses of the asked type in the answer section. */
  addresses: string[];
  /** CNAME targets in the answer section, in order. */
  cnames: string[];
  /** Why the reply was not usable: none came, a reply to another query, or one that does not parse. */
  error?: string;
}

export interface StubLookup {
  /** The name that answered with addresses, or undefined. */
  result?: SearchResult;
  /** Every query sent, in order. */
  queries: StubQuery[];
  /** The last server gave no usable answer for a name, so the lookup stopped (glibc's TRY_AGAIN). */
  tryAgain: boolean;
}

/** One query with a fresh ID and RD set, as a stub sends it. */
export function queryMessage(name: string, type: 'A' | 'AAAA', id = randomInt(0, 0x10000)): Buffer {
  return dnsPacket.encode({ id, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [{ name, type, class: 'IN' }] });
}

/** What a reply says about one query, checked as a stub checks it (ID and question must match). */
export function readReply(query: Buffer, reply: Buffer | undefined, server: string, name: string, type: 'A' | 'AAAA'): StubQuery {
  const q: StubQuery = { name, type, server, addresses: [], cnames: [] };
  if (!reply) return { ...q, error: 'no reply' };
  let r: Packet;
  try {
    r = dnsPacket.decode(reply);
  } catch {
    return { ...q, error: 'a reply that does not parse' };
  }
  const asked = r.questions?.[0];
  if (r.id !== query.readUInt16BE(0) || r.type !== 'response' || !asked || asked.name.toLowerCase() !== name.toLowerCase() || asked.type !== type)
    return { ...q, error: 'a reply to another query' };
  q.rcode = (r as Packet & { rcode?: string }).rcode ?? 'NOERROR';
  for (const a of (r.answers ?? []) as Answer[]) {
    if (a.type === type) q.addresses.push(a.data as string);
    else if (a.type === 'CNAME') q.cnames.push(a.data as string);
  }
  return q;
}

/** Looks `name` up as a pod with `cfg` would, asking through `exchange`. */
export async function stubLookup(exchange: DnsExchange, name: string, cfg: StubConfig, type: 'A' | 'AAAA' = 'A'): Promise<StubLookup> {
  if (cfg.nameservers.length === 0) throw new Error('resolv.conf names no nameserver');
  const queries: StubQuery[] = [];
  const candidates = searchCandidates(name, cfg);
  // A name with ndots dots or more is asked as it is first, and its failure of any kind moves on to the list.
  const asIsFirst = candidates.length > 1 && candidates[0] === name;
  for (const [i, candidate] of candidates.entries()) {
    let answered: StubQuery | undefined;
    let servfail = 0;
    for (const server of cfg.nameservers) {
      const query = queryMessage(candidate, type);
      const q = readReply(query, await exchange(server, query), server, candidate, type);
      queries.push(q);
      if (q.rcode === 'NOERROR' || q.rcode === 'NXDOMAIN') {
        answered = q;
        break;
      }
      if (q.rcode === 'SERVFAIL') servfail++;
    }
    if (answered && (answered.addresses.length > 0 || answered.cnames.length > 0))
      // Addresses, or an alias the server could not follow (an ExternalName outside the cluster), end it.
      return { result: { name: candidate, addresses: answered.addresses, cnames: answered.cnames }, queries, tryAgain: false };
    // No server answered this name (silence, REFUSED): the lookup gives up, except after the as-is try;
    // a SERVFAIL from every server moves on, as glibc's res_search does.
    if (!answered && servfail < cfg.nameservers.length && !(asIsFirst && i === 0)) return { queries, tryAgain: true };
  }
  return { queries, tryAgain: false };
}
