// The one state object a World's subsystems share, and the lookups every public call starts with.
import { NetsimError } from './errors.js';
import type { Trace } from './trace.js';
import type { PingError, PingReply } from './world-l4.js';
import type { Link, NeighEntry, Ns, Route } from './world-model.js';

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

  constructor(captureLimit: number, seed: number) {
    this.captureLimit = captureLimit;
    this.seed = seed;
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
