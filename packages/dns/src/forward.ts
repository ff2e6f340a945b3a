// Names outside the served zones go to an upstream resolver, as CoreDNS's `forward . /etc/resolv.conf`
// sends them: the client's query as it came, over UDP, the upstream's answer relayed unchanged. A silent
// or unreachable upstream gives SERVFAIL; a bounded number of queries are in flight at once.
import dgram from 'node:dgram';
import { ipFamily } from '@kemu/ip';

export interface Upstream {
  host: string;
  port: number;
}

/** Reads `host`, `host:port` or `[v6]:port` (port 53 by default). */
export function parseUpstream(s: string): Upstream {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(s);
  const [host, port] = v6 ? [v6[1]!, v6[2]] : ipFamily(s) === 6 ? [s, undefined] : (s.split(':') as [string, string | undefined]);
  const n = port === undefined ? 53 : Number(port);
  if (!ipFamily(host) || !Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`invalid upstream resolver ${JSON.stringify(s)}: use IP or IP:PORT`);
  return { host, port: n };
}

/** The most forwarded queries waiting for an answer at once; more get SERVFAIL at once. */
export const MAX_IN_FLIGHT = 1024;

export class Forwarder {
  private inFlight = 0;

  constructor(
    private readonly upstreams: readonly Upstream[],
    private readonly timeoutMs = 2000,
  ) {}

  /** The upstream's answer to `query`, trying each upstream in turn; undefined when none answered. */
  async forward(query: Buffer): Promise<Buffer | undefined> {
    if (this.inFlight >= MAX_IN_FLIGHT) return undefined;
    this.inFlight++;
    try {
      for (const u of this.upstreams) {
        const r = await this.ask(u, query);
        if (r) return r;
      }
      return undefined;
    } finally {
      this.inFlight--;
    }
  }

  private ask(u: Upstream, query: Buffer): Promise<Buffer | undefined> {
    return new Promise((resolve) => {
      const sock = dgram.createSocket(ipFamily(u.host) === 6 ? 'udp6' : 'udp4');
      const id = query.readUInt16BE(0);
      const done = (r: Buffer | undefined) => {
        clearTimeout(timer);
        sock.close();
        resolve(r);
      };
      const timer = setTimeout(() => done(undefined), this.timeoutMs);
      sock.on('error', () => done(undefined));
      // Only the answer to this query, from the upstream asked.
      sock.on('message', (msg, rinfo) => {
        if (msg.length >= 12 && msg.readUInt16BE(0) === id && rinfo.port === u.port) done(msg);
      });
      sock.send(query, u.port, u.host, (err) => err && done(undefined));
    });
  }
}
