/**
 * How sessions reach their peers. A {@link Transport} hands out byte-stream connections: real TCP
 * ({@link tcpTransport}) or an in-memory network ({@link MemoryNetwork}) that carries the very same bytes
 * between many speakers in one process and can fail links.
 */
import net from 'node:net';

/** One end of a byte stream to a peer. */
export interface BgpSocket {
  readonly localAddress: string;
  readonly localPort: number;
  readonly remoteAddress: string;
  readonly remotePort: number;
  write(data: Uint8Array): void;
  /** Flushes what was written, then closes. */
  end(): void;
  /** Closes at once. */
  destroy(): void;
  onData(cb: (chunk: Buffer) => void): void;
  /** Called once, when the stream is gone for whatever reason. */
  onClose(cb: (err?: Error) => void): void;
}

export interface Listener {
  readonly address: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface Transport {
  listen(address: string, port: number, onConnection: (s: BgpSocket) => void): Promise<Listener>;
  connect(opts: {
    address: string;
    port: number;
    localAddress?: string;
    timeoutMs?: number;
  }): Promise<BgpSocket>;
}

function wrapTcp(s: net.Socket): BgpSocket {
  let closed = false;
  const closeCbs: ((err?: Error) => void)[] = [];
  let lastErr: Error | undefined;
  s.setNoDelay(true);
  s.on('error', (e) => {
    lastErr = e;
  });
  s.on('close', () => {
    closed = true;
    for (const cb of closeCbs) cb(lastErr);
  });
  return {
    localAddress: stripV4Mapped(s.localAddress ?? ''),
    localPort: s.localPort ?? 0,
    remoteAddress: stripV4Mapped(s.remoteAddress ?? ''),
    remotePort: s.remotePort ?? 0,
    write: (d) => {
      if (!s.destroyed) s.write(d);
    },
    end: () => s.end(),
    destroy: () => s.destroy(),
    onData: (cb) => s.on('data', cb),
    onClose: (cb) => {
      if (closed) cb(lastErr);
      else closeCbs.push(cb);
    },
  };
}

function stripV4Mapped(a: string): string {
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a;
}

/** Real TCP (RFC 4271 runs over TCP port 179). */
export const tcpTransport: Transport = {
  listen(address, port, onConnection) {
    return new Promise((resolve, reject) => {
      const open = new Set<net.Socket>();
      const server = net.createServer((s) => {
        open.add(s);
        s.on('close', () => open.delete(s));
        onConnection(wrapTcp(s));
      });
      server.once('error', reject);
      server.listen({ host: address, port, exclusive: true }, () => {
        server.off('error', reject);
        const a = server.address() as net.AddressInfo;
        resolve({
          address: a.address,
          port: a.port,
          close: () =>
            new Promise<void>((r) => {
              server.close(() => r());
              // Accepted sockets are the sessions' business, but none may keep the listener alive.
              for (const s of open) s.destroy();
            }),
        });
      });
    });
  },
  connect({ address, port, localAddress, timeoutMs = 5000 }) {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: address, port, localAddress });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error(`connect to ${address}:${port} timed out`));
      }, timeoutMs);
      s.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      s.once('connect', () => {
        clearTimeout(timer);
        s.removeAllListeners('error');
        resolve(wrapTcp(s));
      });
    });
  },
};

// ---------------------------------------------------------------------------------------------------------
// In-memory network

class MemorySocket implements BgpSocket {
  peer!: MemorySocket;
  private dataCb?: (c: Buffer) => void;
  private closeCbs: ((err?: Error) => void)[] = [];
  private queue: Buffer[] = [];
  private scheduled = false;
  closed = false;
  /** Set when the link is "silently" failed: bytes vanish, like a cable pulled without a TCP reset. */
  blackholed = false;

  constructor(
    readonly localAddress: string,
    readonly localPort: number,
    readonly remoteAddress: string,
    readonly remotePort: number,
    private readonly net: MemoryNetwork,
  ) {}

  write(data: Uint8Array): void {
    if (this.closed || this.blackholed) return;
    // No copy: senders never reuse a buffer they wrote (encodings are fresh or shared read-only).
    this.peer.deliver(Buffer.isBuffer(data) ? data : Buffer.from(data));
  }

  private deliver(b: Buffer): void {
    if (this.closed) return;
    this.queue.push(b);
    if (!this.scheduled) {
      this.scheduled = true;
      this.net.inflight++;
      // Asynchronous delivery, like a socket: a write never re-enters the receiver's code.
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    this.net.inflight--;
    const q = this.queue;
    this.queue = [];
    if (this.closed || !this.dataCb) return;
    this.dataCb(q.length === 1 ? q[0]! : Buffer.concat(q));
  }

  end(): void {
    // Let queued bytes reach the peer first, as a TCP FIN would.
    setImmediate(() => {
      setImmediate(() => this.destroy());
    });
  }

  destroy(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.net.forget(this);
    for (const cb of this.closeCbs) cb(err);
    // A silently failed link carries no FIN either: the other end finds out from its hold timer.
    if (this.blackholed) return;
    const p = this.peer;
    setImmediate(() => p.destroy());
  }

  onData(cb: (c: Buffer) => void): void {
    this.dataCb = cb;
  }

  onClose(cb: (err?: Error) => void): void {
    if (this.closed) cb();
    else this.closeCbs.push(cb);
  }
}

function linkKey(a: string, b: string): string {
  return a < b ? `${a}|${b}` : `${b}|${a}`;
}

/**
 * An in-process network of addresses. Each speaker gets {@link MemoryNetwork.transport} bound to its own
 * address; links between two addresses can be failed and healed.
 */
export class MemoryNetwork {
  private listeners = new Map<string, (s: BgpSocket) => void>();
  private sockets = new Set<MemorySocket>();
  private failed = new Map<string, 'reset' | 'silent'>();
  private nextPort = 40000;
  /** @internal sockets with bytes scheduled for delivery. */
  inflight = 0;

  /**
   * Resolves once no bytes have been in flight for a few event-loop turns: every speaker has processed
   * everything it was sent and answered it (useful after convergence, before measuring the next change).
   */
  async quiet(turns = 5): Promise<void> {
    let still = 0;
    while (still < turns) {
      await new Promise((r) => setImmediate(r));
      still = this.inflight === 0 ? still + 1 : 0;
    }
  }

  /** A transport whose outgoing connections come from `localAddress`. */
  transport(localAddress: string): Transport {
    return {
      listen: async (address, port, onConnection) => {
        const key = `${address}:${port}`;
        if (this.listeners.has(key))
          throw Object.assign(new Error(`listen ${key}: address in use`), { code: 'EADDRINUSE' });
        this.listeners.set(key, onConnection);
        return {
          address,
          port,
          close: async () => {
            this.listeners.delete(key);
          },
        };
      },
      connect: async ({ address, port, localAddress: la }) => {
        const from = la ?? localAddress;
        const l = this.listeners.get(`${address}:${port}`);
        if (!l || this.failed.has(linkKey(from, address))) {
          throw Object.assign(new Error(`connect ${address}:${port}: connection refused`), {
            code: 'ECONNREFUSED',
          });
        }
        const lport = this.nextPort++;
        const a = new MemorySocket(from, lport, address, port, this);
        const b = new MemorySocket(address, port, from, lport, this);
        a.peer = b;
        b.peer = a;
        this.sockets.add(a);
        this.sockets.add(b);
        await new Promise<void>((r) => setImmediate(r));
        l(b);
        return a;
      },
    };
  }

  /** @internal */
  forget(s: MemorySocket): void {
    this.sockets.delete(s);
  }

  /**
   * Fails the link between two addresses. `reset` closes existing connections at once (an interface going
   * down with a TCP reset); `silent` drops their bytes so only the hold timer notices. New connections are
   * refused until {@link healLink}.
   */
  failLink(a: string, b: string, mode: 'reset' | 'silent' = 'reset'): void {
    this.failed.set(linkKey(a, b), mode);
    for (const s of [...this.sockets]) {
      if (linkKey(s.localAddress, s.remoteAddress) !== linkKey(a, b)) continue;
      if (mode === 'reset') s.destroy(new Error('link failed'));
      else s.blackholed = true;
    }
  }

  healLink(a: string, b: string): void {
    this.failed.delete(linkKey(a, b));
  }

  get connectionCount(): number {
    return this.sockets.size / 2;
  }
}
