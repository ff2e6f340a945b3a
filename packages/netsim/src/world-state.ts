// The one state object a World's subsystems share, the upward calls between them, and the lookups
// every public call starts with.
import type { Family } from '@kemu/ip';
import { NetsimError } from './errors.js';
import type { Trace } from './trace.js';
import type { IcmpErrorKind, Link, NeighEntry, Ns, Route } from './world-model.js';
import type { PingError, PingReply } from './world-results.js';

export interface CaptureEntry {
  timeUs: number;
  frame: Buffer;
  dir: 'rx' | 'tx';
  link: Link;
  ns: string;
  dev: string;
}

/** An outstanding ping: replies and ICMP errors for its echo id land here. */
export interface PingSession {
  replies: PingReply[];
  errors: PingError[];
}

/** An outstanding connect(): the handshake's answer lands here. */
export interface TcpSession {
  state: 'syn-sent' | 'established' | 'refused' | 'unreachable';
  seq: number;
}

/** The one UDP send in flight: where it was delivered, or the ICMP error that came back. */
export interface UdpProbe {
  delivered?: { ns: string; from: string; sport: number };
  error?: { from: string; message: string };
}

/**
 * The calls a layer makes into one above it, reached the way the kernel reaches them: through a device's
 * transmit op (bridge, vxlan), a bridge port's rx_handler, the ethertype handlers (ARP, IP), the neighbour
 * timer, icmp_send and the IP protocol handlers. world-stack.ts fills it in once, so every world-*.ts
 * module imports only the layers below it.
 */
export interface Stack {
  /** br_dev_xmit / br_forward: a frame the bridge sends itself (ingress null) or forwards from a port. */
  bridgeForward(w: WorldState, br: Link, ingress: Link | null, frame: Buffer): void;
  /** br_handle_frame: a frame received on a bridge port. */
  bridgeInput(w: WorldState, br: Link, port: Link, frame: Buffer): void;
  vxlanXmit(w: WorldState, l: Link, frame: Buffer): void;
  arpRcv(w: WorldState, l: Link, frame: Buffer): void;
  ipRcv(w: WorldState, l: Link, frame: Buffer, family: Family): void;
  /** A resolution nobody answered when the network went quiet. */
  neighFailed(w: WorldState, dev: Link, entry: NeighEntry): void;
  icmpErrorTo(w: WorldState, ns: Ns, p: Buffer, family: Family, kind: IcmpErrorKind): void;
  failLocal(w: WorldState, ns: Ns, p: Buffer, family: Family, from: string, message: string): void;
  icmpRcv(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, l4: number, end: number): void;
  udpRcv(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, l4: number, end: number): void;
  tcpRcv(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, l4: number): void;
}

/**
 * Everything a World holds, in one object that the subsystem modules (world-*.ts) share: the namespaces,
 * virtual time, the frame queue the engine drains, the capture ring, the trace being recorded and the
 * sessions of the socket calls in flight. Only this package's modules see it; the World façade keeps it
 * private.
 */
export class WorldState {
  readonly nss = new Map<string, Ns>();
  clockUs = 0;
  macSeq = 0;
  readonly seed: number;
  readonly captureLimit: number;
  caps: CaptureEntry[] = [];
  capHead = 0;
  qDev: Link[] = [];
  qFrame: Buffer[] = [];
  qHead = 0;
  pendingNeigh: { dev: Link; entry: NeighEntry }[] = [];
  tr: Trace | null = null;
  readonly pings = new Map<string, PingSession>();
  readonly tcps = new Map<string, TcpSession>();
  udpProbe: UdpProbe | null = null;
  /** Counters across the world's lifetime. `hops` counts frames processed at a device (tx or rx). */
  readonly stats = { hops: 0, frames: 0, drops: 0 };
  /** Per namespace, the IPv4 and IPv6 route that sends local destinations to lo (built on first use). */
  readonly localRoutes = new Map<Ns, [Route | null, Route | null]>();
  /** The upward calls of the datapath (world-stack.ts). */
  readonly stack: Stack;

  constructor(captureLimit: number, seed: number, stack: Stack) {
    this.captureLimit = captureLimit;
    this.seed = seed;
    this.stack = stack;
  }
}

export function nsByName(w: WorldState, name: string): Ns {
  const ns = typeof name === 'string' ? w.nss.get(name) : undefined;
  if (!ns) throw new NetsimError('ENOENT', `Cannot open network namespace "${String(name)}"`);
  return ns;
}

export function linkByName(ns: Ns, name: string): Link {
  const l = ns.links.get(name);
  if (!l) throw new NetsimError('ENODEV', `Cannot find device "${String(name)}"`);
  return l;
}
