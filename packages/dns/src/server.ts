// The cluster DNS server: Services, EndpointSlices, Pods and Namespaces from @kemu/core informers, answered
// over UDP and TCP on one address and port (53 by default, as the cluster DNS Service's target).
import dgram from 'node:dgram';
import net from 'node:net';
import { type EndpointSlice, InformerFactory, type Namespace, type Pod, type Service, type Store } from '@kemu/core';
import { ipFamily } from '@kemu/ip';
import { type ClusterIndex, buildClusterIndex } from './cluster-index.js';
import { Forwarder, parseUpstream } from './forward.js';
import { answerMessage } from './message.js';
import { Resolver, type ResolverOptions } from './resolver.js';
import { frameMessage, onFramedMessages } from './tcp-framing.js';

export interface DnsServerOptions extends Omit<ResolverOptions, 'zone'> {
  store: Store;
  /** The cluster domain (default cluster.local). */
  zone?: string;
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port for both UDP and TCP (default 53; 0 picks a free one for both). */
  port?: number;
  /** A TCP connection with no complete query for this long is closed (default 10 s). */
  tcpIdleMs?: number;
  /** Resolvers for names outside the served zones (`IP` or `IP:PORT`); without them such names get REFUSED. */
  upstreams?: string[];
  /** How long an upstream has to answer before the next is tried, or SERVFAIL (default 2 s). */
  forwardTimeoutMs?: number;
  onError?: (err: unknown) => void;
}

const RCODE_SERVFAIL = 2;
const RCODE_REFUSED = 5;

/** At most this many TCP connections at once; more are closed on arrival. */
const MAX_TCP_CONNECTIONS = 256;

export class DnsServer {
  readonly resolver: Resolver;
  private readonly factory: InformerFactory;
  private readonly informers;
  private index: ClusterIndex | undefined;
  private modified = Math.floor(Date.now() / 1000);
  private udp?: dgram.Socket;
  private tcp?: net.Server;
  private readonly conns = new Set<net.Socket>();
  private bound?: { host: string; port: number };
  private readonly forwarder?: Forwarder;

  constructor(private readonly o: DnsServerOptions) {
    this.factory = new InformerFactory(o.store);
    const onError = (e: unknown) => o.onError?.(e);
    this.informers = {
      services: this.factory.informer('Service', { onError }),
      slices: this.factory.informer('EndpointSlice', { onError }),
      pods: this.factory.informer('Pod', { onError }),
      namespaces: this.factory.informer('Namespace', { onError }),
    };
    const changed = () => {
      this.index = undefined;
      this.modified = Math.floor(Date.now() / 1000);
    };
    for (const inf of Object.values(this.informers)) inf.addEventHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
    if (o.upstreams?.length) this.forwarder = new Forwarder(o.upstreams.map(parseUpstream), o.forwardTimeoutMs);
    this.resolver = new Resolver({ ...o, zone: o.zone ?? 'cluster.local' }, () => this.currentIndex(), () => this.modified);
  }

  private currentIndex(): ClusterIndex {
    this.index ??= buildClusterIndex(
      {
        services: this.informers.services.indexer.list() as Service[],
        endpointSlices: this.informers.slices.indexer.list() as EndpointSlice[],
        pods: this.informers.pods.indexer.list() as Pod[],
        namespaces: this.informers.namespaces.indexer.list() as Namespace[],
      },
      this.resolver.zone,
    );
    return this.index;
  }

  /** Where the server listens (after start). */
  address(): { host: string; port: number } {
    if (!this.bound) throw new Error('the DNS server is not started');
    return this.bound;
  }

  /** Syncs the informers, then listens on UDP and TCP. */
  async start(): Promise<void> {
    this.factory.start();
    await this.factory.waitForCacheSync();
    const host = this.o.host ?? '127.0.0.1';
    const wanted = this.o.port ?? 53;
    // With port 0 the UDP socket picks the port and TCP takes the same one; another process may hold
    // that TCP port, so try a few times.
    for (let attempt = 0; ; attempt++) {
      const port = await this.listenUdp(host, wanted);
      try {
        await this.listenTcp(host, port);
        this.bound = { host, port };
        return;
      } catch (err) {
        await new Promise<void>((r) => this.udp!.close(() => r()));
        this.udp = undefined;
        if (wanted !== 0 || attempt >= 5) throw err;
      }
    }
  }

  private listenUdp(host: string, port: number): Promise<number> {
    const sock = dgram.createSocket(ipFamily(host) === 6 ? 'udp6' : 'udp4');
    this.udp = sock;
    sock.on('message', (msg, rinfo) => {
      void this.answer(msg, 'udp').then((out) => {
        if (out) sock.send(out, rinfo.port, rinfo.address, (err) => err && this.o.onError?.(err));
      });
    });
    return new Promise((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(port, host, () => {
        sock.off('error', reject);
        sock.on('error', (e) => this.o.onError?.(e));
        resolve(sock.address().port);
      });
    });
  }

  private listenTcp(host: string, port: number): Promise<void> {
    const server = net.createServer((c) => this.serveTcp(c));
    server.maxConnections = MAX_TCP_CONNECTIONS;
    this.tcp = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, () => {
        server.off('error', reject);
        server.on('error', (e) => this.o.onError?.(e));
        resolve();
      });
    });
  }

  /** DNS over TCP: each message after a two-byte length (RFC 1035 4.2.2), several per connection. */
  private serveTcp(c: net.Socket): void {
    this.conns.add(c);
    c.setTimeout(this.o.tcpIdleMs ?? 10_000, () => c.destroy());
    c.on('close', () => this.conns.delete(c));
    c.on('error', () => c.destroy());
    // Answers go out in the order the queries came, even when one waits on an upstream.
    let queue: Promise<void> = Promise.resolve();
    onFramedMessages(c, (msg) => {
      const answered = this.answer(msg, 'tcp');
      queue = queue.then(async () => {
        const out = await answered;
        if (!out) {
          c.destroy();
          return;
        }
        if (!c.destroyed) c.write(frameMessage(out));
      });
    });
  }

  private async answer(msg: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    let out: Buffer | undefined;
    try {
      out = answerMessage(this.resolver, msg, transport);
    } catch (err) {
      this.o.onError?.(err);
      return undefined;
    }
    // REFUSED is the answer for a name outside the served zones: an upstream may know it.
    if (out && this.forwarder && (out.readUInt16BE(2) & 0xf) === RCODE_REFUSED) {
      const relayed = await this.forwarder.forward(msg);
      if (relayed) return relayed;
      out.writeUInt16BE((out.readUInt16BE(2) & ~0xf) | RCODE_SERVFAIL, 2);
    }
    return out;
  }

  async stop(): Promise<void> {
    for (const c of this.conns) c.destroy();
    await Promise.all([
      new Promise<void>((r) => (this.udp ? this.udp.close(() => r()) : r())),
      new Promise<void>((r) => (this.tcp ? this.tcp.close(() => r()) : r())),
    ]);
    this.udp = undefined;
    this.tcp = undefined;
    await this.factory.stop();
  }
}
