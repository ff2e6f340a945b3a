/**
 * Route simulation: many speakers in one process, each on its own address, connected over the in-memory
 * transport (the same BGP byte stream as TCP) or real TCP on 127.x.y.z loopback addresses. Nodes join and
 * leave, links fail and heal, and convergence (every node has exactly the right routes installed in its
 * route sink) is observed as it happens rather than polled.
 */
import { performance } from 'node:perf_hooks';
import { parseIpAddr } from '@kemu/ip';
import { type InstalledRoute, MemoryRouteSink, type RouteSink } from './route-sink.js';
import type { NeighborConfig } from './session.js';
import { BgpSpeaker, PrefixTable } from './speaker.js';
import { MemoryNetwork, type Transport, tcpTransport } from './transport.js';

/**
 * `clusterId` shared by all reflectors makes them one redundant cluster (they then ignore each other's
 * reflections); by default each reflector is its own cluster (0.0.0.1, 0.0.0.2, ...), so a reflector that
 * loses a client still learns that client's routes through the other one.
 */
export type SimTopology =
  | { kind: 'full-mesh' }
  | { kind: 'route-reflectors'; count: number; clusterId?: string };

export interface SimulationOptions {
  topology: SimTopology;
  /** AS of every node (iBGP); default 64512. */
  as?: number;
  /** `memory` (default) or `tcp` on loopback (each node on its own 127.x.y.z address, `tcpPort`). */
  transport?: 'memory' | 'tcp';
  tcpPort?: number;
  holdTime?: number;
  connectRetryTime?: number;
  log?: (line: string) => void;
}

export interface SimNode {
  name: string;
  address: string;
  role: 'peer' | 'reflector' | 'client';
  prefixes: string[];
  speaker: BgpSpeaker;
  sink: MemoryRouteSink;
  /** How many installed routes have the owner's address as next hop (a count: a set per node would
   * hold a million entries in a 1,000-node run). */
  correctCount: number;
}

/** Address of node `i` (0-based): 10.x.y.z for memory, 127.x.y.z for TCP (skipping .0 and .255). */
export function simAddress(i: number, transport: 'memory' | 'tcp' = 'memory'): string {
  const n = i + 1;
  const a = Math.floor(n / 254 / 254) % 254;
  const b = Math.floor(n / 254) % 254;
  const c = (n % 254) + 1;
  return `${transport === 'tcp' ? 127 : 10}.${a + 1}.${b}.${c}`;
}

/** The simulation's bookkeeping sees every route at once; `extra` programs it (and may take its time). */
function teeSink(memory: MemoryRouteSink, extra: RouteSink): RouteSink {
  return {
    install(route) {
      memory.install(route);
      return extra.install(route);
    },
    remove(route) {
      memory.remove(route);
      return extra.remove(route);
    },
  };
}

export class RouteSimulation {
  readonly network = new MemoryNetwork();
  /** Every speaker interns prefixes here: one copy of each block however many speakers learn it. */
  private readonly prefixTable = new PrefixTable();
  readonly nodes = new Map<string, SimNode>();
  private readonly byAddress = new Map<string, SimNode>();
  /** prefix → owner address, over live nodes. */
  private readonly expected = new Map<string, string>();
  private unsatisfied = new Set<SimNode>();
  private waiters: (() => void)[] = [];
  private lastChange = 0;

  constructor(readonly options: SimulationOptions) {}

  private get as(): number {
    return this.options.as ?? 64512;
  }

  private transportFor(address: string): Transport {
    return this.options.transport === 'tcp' ? tcpTransport : this.network.transport(address);
  }

  private get port(): number {
    return this.options.transport === 'tcp' ? (this.options.tcpPort ?? 1179) : 179;
  }

  private reflectors(): SimNode[] {
    return [...this.nodes.values()].filter((n) => n.role === 'reflector');
  }

  /** Neighbours a new node of `role` should have, and whether it initiates each connection. */
  private neighborsFor(address: string, role: SimNode['role']): NeighborConfig[] {
    const mk = (other: SimNode, rrClient = false): NeighborConfig => ({
      address: other.address,
      port: this.port,
      as: this.as,
      // One side connects, the other waits: no collisions to resolve at scale.
      passive: other.address < address,
      ...(rrClient ? { rrClient: true } : {}),
      name: other.name,
    });
    const t = this.options.topology;
    if (t.kind === 'full-mesh') return [...this.nodes.values()].map((o) => mk(o));
    if (role === 'client') return this.reflectors().map((o) => ({ ...mk(o), passive: false }));
    // A reflector: every client as an RR client, the other reflectors as plain iBGP peers.
    return [...this.nodes.values()].map((o) =>
      o.role === 'client' ? { ...mk(o, true), passive: true } : mk(o),
    );
  }

  private roleForNext(): SimNode['role'] {
    const t = this.options.topology;
    if (t.kind === 'full-mesh') return 'peer';
    return this.reflectors().length < t.count ? 'reflector' : 'client';
  }

  /**
   * Adds a node advertising `prefixes` and wires it to the existing nodes (which add it as a neighbour).
   * `start: false` creates it without connecting (see {@link startAll}).
   */
  async addNode(
    name: string,
    address: string,
    prefixes: string[],
    opts: {
      start?: boolean;
      /** Where the node's routes are programmed as well (e.g. a DatapathRouteSink on its namespace). */
      sink?: RouteSink;
    } = {},
  ): Promise<SimNode> {
    if (this.nodes.has(name) || this.byAddress.has(address))
      throw new Error(`node ${name} / ${address} exists`);
    const role = this.roleForNext();
    const t = this.options.topology;
    const neighbors = this.neighborsFor(address, role);
    const node: SimNode = {
      name,
      address,
      role,
      prefixes,
      correctCount: 0,
      sink: undefined as unknown as MemoryRouteSink,
      speaker: undefined as unknown as BgpSpeaker,
    };
    node.sink = new MemoryRouteSink((p, r, prev) => this.onSinkChange(node, p, r, prev));
    node.speaker = new BgpSpeaker({
      // Each node's own IPv4 address: BGP identifiers must differ between peers.
      routerId: parseIpAddr(address)?.family === 4 ? address : '1.1.1.1',
      as: this.as,
      listen: { address, port: this.port },
      neighbors,
      routeReflector:
        role === 'reflector' && t.kind === 'route-reflectors'
          ? { clusterId: t.clusterId ?? `0.0.0.${this.reflectors().length + 1}` }
          : undefined,
      transport: this.transportFor(address),
      prefixTable: this.prefixTable,
      holdTime: this.options.holdTime ?? 90,
      connectRetryTime: this.options.connectRetryTime ?? 1,
      routeSink: opts.sink ? teeSink(node.sink, opts.sink) : node.sink,
      localNextHop: address,
      log: this.options.log ? (l) => this.options.log!(`${name}: ${l}`) : undefined,
    });
    for (const p of prefixes) node.speaker.advertise(p);
    // Listen before anyone is told about the newcomer, so their first connection attempt succeeds.
    if (opts.start !== false) await node.speaker.listen();
    // Existing nodes learn about the newcomer.
    for (const other of this.nodes.values()) {
      const wants =
        t.kind === 'full-mesh' ||
        (role === 'client' && other.role === 'reflector') ||
        (role === 'reflector' && (other.role === 'client' || other.role === 'reflector'));
      if (!wants) continue;
      other.speaker.addNeighbor({
        address,
        port: this.port,
        as: this.as,
        passive: address < other.address || (role === 'client' && other.role === 'reflector'),
        rrClient: other.role === 'reflector' && role === 'client' ? true : undefined,
        name,
      });
    }
    this.nodes.set(name, node);
    this.byAddress.set(address, node);
    for (const p of prefixes) this.expected.set(p, address);
    this.recomputeAll();
    if (opts.start !== false) await node.speaker.start();
    return node;
  }

  /** Starts every node not started yet (listeners first, so the first connection attempts succeed). */
  async startAll(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.speaker.listen()));
    await Promise.all([...this.nodes.values()].map((n) => n.speaker.start()));
  }

  /** A node leaves: Cease to its peers (`graceful`) or a crash; the others de-configure it. */
  async removeNode(name: string, opts: { graceful?: boolean } = {}): Promise<void> {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    if (opts.graceful === false) await node.speaker.destroy();
    else await node.speaker.stop();
    this.nodes.delete(name);
    this.byAddress.delete(node.address);
    this.unsatisfied.delete(node);
    for (const p of node.prefixes) this.unexpect(p);
    if (opts.graceful !== false) {
      // The others notice through the Cease; de-configuring it afterwards is bookkeeping.
      await new Promise((r) => setImmediate(r));
    }
    for (const other of this.nodes.values()) {
      if (other.speaker.peer(node.address)) other.speaker.removeNeighbor(node.address);
    }
  }

  /** Withdraws one prefix a node advertises. */
  withdraw(name: string, prefix: string): void {
    const node = this.nodes.get(name)!;
    node.speaker.withdraw(prefix);
    node.prefixes = node.prefixes.filter((p) => p !== prefix);
    this.unexpect(prefix);
  }

  advertise(name: string, prefix: string): void {
    const node = this.nodes.get(name)!;
    node.speaker.advertise(prefix);
    node.prefixes.push(prefix);
    this.expect(prefix, node.address);
  }

  /** Bookkeeping for one prefix leaving the expected set: O(nodes), not O(nodes × routes). */
  private unexpect(prefix: string): void {
    const owner = this.expected.get(prefix);
    this.expected.delete(prefix);
    for (const n of this.nodes.values()) {
      if (owner !== undefined && n.sink.routes.get(prefix)?.nextHop === owner) n.correctCount--;
      this.update(n);
    }
  }

  private expect(prefix: string, owner: string): void {
    const old = this.expected.get(prefix);
    this.expected.set(prefix, owner);
    for (const n of this.nodes.values()) {
      const nh = n.sink.routes.get(prefix)?.nextHop;
      if (old !== undefined && nh === old) n.correctCount--;
      if (nh === owner) n.correctCount++;
      this.update(n);
    }
  }

  failLink(a: string, b: string, mode: 'reset' | 'silent' = 'reset'): void {
    this.network.failLink(this.nodes.get(a)!.address, this.nodes.get(b)!.address, mode);
  }

  healLink(a: string, b: string): void {
    this.network.healLink(this.nodes.get(a)!.address, this.nodes.get(b)!.address);
  }

  private expectedCount(n: SimNode): number {
    return this.expected.size - n.prefixes.length;
  }

  private isSatisfied(n: SimNode): boolean {
    const want = this.expectedCount(n);
    return n.correctCount === want && n.sink.routes.size === want;
  }

  private onSinkChange(
    n: SimNode,
    prefix: string,
    r: InstalledRoute | undefined,
    prev: InstalledRoute | undefined,
  ): void {
    if (!this.nodes.has(n.name)) return;
    this.lastChange = performance.now();
    const want = this.expected.get(prefix);
    const was = prev !== undefined && prev.nextHop === want;
    const now = r !== undefined && r.nextHop === want;
    // Only a change of correctness or of the route count can change whether the node is satisfied.
    if (was === now && (prev === undefined) === (r === undefined)) return;
    if (was !== now) n.correctCount += now ? 1 : -1;
    this.update(n);
  }

  private update(n: SimNode): void {
    if (this.isSatisfied(n)) this.unsatisfied.delete(n);
    else this.unsatisfied.add(n);
    if (this.unsatisfied.size === 0 && this.waiters.length > 0) {
      const w = this.waiters;
      this.waiters = [];
      for (const f of w) f();
    }
  }

  private recomputeAll(): void {
    for (const n of this.nodes.values()) {
      n.correctCount = 0;
      for (const [p, r] of n.sink.routes) if (this.expected.get(p) === r.nextHop) n.correctCount++;
      this.update(n);
    }
  }

  /** Whether every node has exactly the expected routes installed. */
  get converged(): boolean {
    return this.unsatisfied.size === 0;
  }

  /** Resolves with the time of the last route change once everything is converged. */
  waitConverged(timeoutMs = 60_000): Promise<number> {
    if (this.converged) return Promise.resolve(this.lastChange);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        reject(
          new Error(
            `not converged after ${timeoutMs} ms: ${this.unsatisfied.size} node(s) still missing routes, e.g. ${[
              ...this.unsatisfied,
            ]
              .slice(0, 3)
              .map((n) => `${n.name} (${n.correctCount}/${this.expectedCount(n)})`)
              .join(', ')}`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve(this.lastChange);
      };
      this.waiters.push(done);
    });
  }

  /** Waits until no BGP message is in flight any more (in-memory transport only). */
  async quiet(): Promise<void> {
    await this.network.quiet();
  }

  async destroy(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.speaker.destroy()));
    this.nodes.clear();
    this.byAddress.clear();
  }
}

/**
 * Builds and starts a cluster of `n` nodes, node i advertising `blockOf(i)` (default 10.128+.x.y/26
 * blocks, like calico's per-node IPAM blocks). Returns the simulation and the time it took to converge.
 */
export async function startCluster(
  n: number,
  options: SimulationOptions,
  blockOf: (i: number) => string = defaultBlock,
): Promise<{ sim: RouteSimulation; convergedMs: number }> {
  const sim = new RouteSimulation(options);
  for (let i = 0; i < n; i++) {
    await sim.addNode(`node-${i}`, simAddress(i, options.transport), [blockOf(i)], { start: false });
  }
  const t0 = performance.now();
  await sim.startAll();
  const last = await sim.waitConverged(120_000);
  return { sim, convergedMs: last - t0 };
}

/** A /26 per node out of 10.64.0.0/10 (room for 65,536 nodes). */
export function defaultBlock(i: number): string {
  const base = (10 << 24) + (64 << 16) + i * 64;
  return `${base >>> 24}.${(base >>> 16) & 0xff}.${(base >>> 8) & 0xff}.${base & 0xff}/26`;
}
