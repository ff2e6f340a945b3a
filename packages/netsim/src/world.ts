// The simulated datapath. A World holds network namespaces; each frame is real bytes and is processed the
// way the Linux stack would: device transmit/receive, bridge FDB, VXLAN encap/decap, IP routing with
// longest-prefix match, ARP/NDP neighbour resolution, netfilter-style NAT with connection tracking.
// Processing is a FIFO of frame deliveries driven to quiescence, so results are deterministic.
import { writeFileSync } from 'node:fs';
import {
  BROADCAST_MAC,
  bytesEqual,
  type Family,
  formatIp,
  formatIpBytes,
  formatMac,
  formatPrefix,
  type IpAddr,
  type IpKey,
  ipKey,
  ipKeyAt,
  isLinkLocalV6,
  isMulticastMac,
  linkLocalFromMac,
  macKeyAt,
  macKeyToBytes,
  multicastMacForIPv6,
  mustParseIp,
  mustParseMac,
  type Prefix,
  parseCidr,
  prefixContains,
  prefixEquals,
  solicitedNodeAddr,
  toPrefix,
} from './addr.js';
import { NetsimError } from './errors.js';
import {
  arpPacket,
  ETH_P_ARP,
  ETH_P_IP,
  ETH_P_IPV6,
  ethFrame,
  icmpEcho,
  icmpError,
  inetChecksum,
  IPPROTO_ICMP,
  IPPROTO_ICMPV6,
  IPPROTO_TCP,
  IPPROTO_UDP,
  ipv4Packet,
  ipv6Packet,
  ndpMessage,
  refreshChecksums,
  registerVxlanPort,
  summarizeFrame,
  TCP_ACK,
  TCP_RST,
  TCP_SYN,
  tcpSegment,
  udpDatagram,
  VXLAN_PORT,
  vxlanHeader,
} from './packet.js';
import { type CapturedFrame, pcapBytes } from './pcap.js';
import type { HopKind, Trace } from './trace.js';
import type {
  AddressInfo,
  FdbInfo,
  FdbSpec,
  LinkChange,
  LinkInfo,
  LinkKind,
  LinkSpec,
  Listener,
  NatRule,
  NatRuleInfo,
  NeighInfo,
  NeighSpec,
  NeighState,
  RouteInfo,
  RouteSpec,
  RouteType,
} from './types.js';

export const RT_TABLE_MAIN = 254;
export const RT_TABLE_LOCAL = 255;
const DEFAULT_AGEING_MS = 300_000;
const NEIGH_REACHABLE_MS = 30_000;
const NEIGH_GC_STALE_MS = 60_000;
const UNRES_QLEN = 101;
const MAX_FRAMES_PER_RUN = 1_000_000;

// ---------------------------------------------------------------- internal model

interface FdbEntry {
  port: Link;
  updatedUs: number;
  permanent: boolean;
  local: boolean;
}

interface VxFdbEntry {
  mac: Uint8Array;
  dsts: IpAddr[];
  permanent: boolean;
  updatedUs: number;
}

interface QueuedPacket {
  p: Buffer;
  family: Family;
  /** Forwarded packets get an ICMP "host unreachable" back when resolution fails. */
  forwarded: boolean;
}

interface NeighEntry {
  ip: IpAddr;
  key: IpKey;
  mac: Uint8Array | null;
  state: NeighState;
  updatedUs: number;
  queue: QueuedPacket[];
}

interface Addr {
  ip: IpAddr;
  key: IpKey;
  len: number;
  /** The address's subnet, precomputed for the per-packet checks. */
  prefix: Prefix;
  dev: Link;
  scope: 'global' | 'link' | 'host';
}

interface Route {
  family: Family;
  dst: Prefix;
  type: RouteType;
  dev: Link | null;
  via: IpAddr | null;
  onlink: boolean;
  src: IpAddr | null;
  metric: number;
  table: number;
  proto: string;
  scope: 'global' | 'link' | 'host';
  // IPv4 fast path
  net4: number;
  mask4: number;
}

interface RouteTable {
  v4: Route[];
  v6: Route[];
}

interface PortFlags {
  hairpin: boolean;
  learning: boolean;
  flood: boolean;
  mcastFlood: boolean;
  isolated: boolean;
}

class Link {
  index: number;
  name: string;
  ns: Ns;
  readonly kind: LinkKind;
  mac: Uint8Array;
  macKey: number;
  mtu: number;
  up = false;
  master: Link | null = null;
  port: PortFlags | null = null;
  peer: Link | null = null;
  proxyArp = false;
  promisc = false;
  /** Bridges follow their smallest port's MTU until someone sets one explicitly. */
  mtuSetByUser = false;
  /** Cleared when the device is destroyed, so frames already in flight to it are dropped. */
  alive = true;
  // bridge
  ports: Set<Link> | null = null;
  fdb: Map<number, FdbEntry> | null = null;
  ageingMs = DEFAULT_AGEING_MS;
  // vxlan
  vni = 0;
  vxPort = VXLAN_PORT;
  vxLocal: IpAddr | null = null;
  vxDev: string | null = null;
  vxLinkNs: Ns | null = null;
  vxLearning = true;
  vxTtl = 64;
  vxFdb: Map<number, VxFdbEntry> | null = null;
  neigh = new Map<IpKey, NeighEntry>();
  stats = { rxPackets: 0, txPackets: 0, rxBytes: 0, txBytes: 0, dropped: 0 };

  constructor(ns: Ns, index: number, name: string, kind: LinkKind, mac: Uint8Array, mtu: number) {
    this.ns = ns;
    this.index = index;
    this.name = name;
    this.kind = kind;
    this.mac = mac;
    this.macKey = macKeyAt(mac, 0);
    this.mtu = mtu;
  }

  /** Operational state: a veth only passes traffic when both ends are up. */
  get carrier(): boolean {
    if (!this.up) return false;
    if (this.kind === 'veth') return this.peer !== null && this.peer.up;
    return true;
  }
}

interface CaptureEntry {
  timeUs: number;
  frame: Buffer;
  dir: 'rx' | 'tx';
  link: Link;
  ns: string;
  dev: string;
}

interface CompiledNat {
  id: number;
  rule: NatRule;
  family: Family | 0;
  dst?: Prefix;
  src?: Prefix;
  notDst?: Prefix[];
  to?: IpAddr;
  toPort?: number;
}

interface Tuple {
  proto: number;
  src: Uint8Array;
  sport: number;
  dst: Uint8Array;
  dport: number;
}

interface Conn {
  family: Family;
  orig: Tuple;
  reply: Tuple;
  dnat: boolean;
  snat: boolean;
  confirmed: boolean;
  /** Virtual time of the last packet, for conntrack timeouts. */
  lastUs: number;
}

/** Idle timeouts in ms (the kernel's defaults for ICMP, UDP "stream", TCP established). */
const CT_TIMEOUT_MS: Record<number, number> = { 1: 30_000, 58: 30_000, 17: 120_000, 6: 432_000_000 };

interface CtRef {
  conn: Conn;
  dir: 'orig' | 'reply';
  isNew: boolean;
}

class Ns {
  readonly name: string;
  links = new Map<string, Link>();
  local = new Map<IpKey, Addr>();
  addrs: Addr[] = [];
  tables = new Map<number, RouteTable>();
  fwd4 = false;
  fwd6 = false;
  nat: CompiledNat[] = [];
  natSeq = 0;
  sysctls = new Map<string, string>();
  ct = new Map<string, { conn: Conn; dir: 'orig' | 'reply' }>();
  listeners: Listener[] = [];
  vxSock = new Map<number, Link[]>();
  nextEphemeral = 32768;
  nextIfindex = 1;
  echoId = 0;

  constructor(name: string) {
    this.name = name;
  }

  table(id: number): RouteTable {
    let t = this.tables.get(id);
    if (!t) {
      t = { v4: [], v6: [] };
      this.tables.set(id, t);
    }
    return t;
  }
}

// ---------------------------------------------------------------- results

export interface PingReply {
  seq: number;
  from: string;
  ttl: number;
}

export interface PingError {
  seq: number;
  from: string;
  /** ping(8)-style text: "Destination Host Unreachable", "Time to live exceeded", ... */
  message: string;
}

export interface PingResult {
  /** At least one echo reply came back. */
  reachable: boolean;
  transmitted: number;
  received: number;
  replies: PingReply[];
  errors: PingError[];
  /** Set when the stack refused to send (no route, no source address, ...), like ping's "connect:" errors. */
  error?: { code: string; message: string };
  trace: Trace;
}

export interface TcpConnectResult {
  state: 'established' | 'refused' | 'timeout' | 'unreachable' | 'error';
  local: { ip: string; port: number } | null;
  remote: { ip: string; port: number };
  error?: { code: string; message: string };
  trace: Trace;
}

export interface UdpSendResult {
  /** Namespace whose listener received the datagram, or null. */
  delivered: string | null;
  local: { ip: string; port: number } | null;
  /** The stack refused to send (no route, ...). */
  error?: { code: string; message: string };
  /** An ICMP error that came back, ping(8)-style text. */
  icmpError?: { from: string; message: string };
  trace: Trace;
}

interface UdpProbe {
  delivered?: { ns: string; from: string; sport: number };
  error?: { from: string; message: string };
}

export interface SendOptions {
  /** Record the hop-by-hop trace (default true). */
  trace?: boolean;
  /** Source address to use instead of the kernel's choice. */
  src?: string;
}

export interface PingOptions extends SendOptions {
  count?: number;
  ttl?: number;
  /** ICMP payload bytes (default 56, as ping(8)). */
  size?: number;
}

export interface WorldOptions {
  /** Most recent frames kept, across all devices, for pcap export (default 65536; 0 disables capture). */
  captureLimit?: number;
  /** Seeds deterministic MAC generation, so two worlds can share a segment without collisions. */
  seed?: number;
}

interface PingSession {
  replies: PingReply[];
  errors: PingError[];
}

interface TcpSession {
  state: 'syn-sent' | 'established' | 'refused' | 'unreachable';
  seq: number;
}

/** Where frames were seen: "ns" (every device of the namespace), "ns/dev", or an object. */
export type CaptureTarget = string | { ns: string; dev?: string };

const NAME_RE = /^[^\s/:]{1,15}$/;
const SYSCTL_ROOTS = new Set(['ipv4', 'ipv6', 'core', 'bridge', 'netfilter', 'unix']);
/** Defaults a fresh namespace reports for keys the model stores but does not act on. */
const SYSCTL_DEFAULTS: Record<string, string> = {
  'net/ipv6/conf/*/accept_dad': '1',
  'net/ipv6/conf/*/dad_transmits': '1',
  'net/ipv6/conf/*/accept_ra': '1',
  'net/ipv6/conf/*/autoconf': '1',
  'net/ipv6/conf/*/hop_limit': '64',
  'net/ipv6/conf/*/mtu': '1500',
  'net/ipv4/conf/*/accept_redirects': '1',
  'net/ipv4/conf/*/send_redirects': '1',
  'net/ipv4/conf/*/secure_redirects': '1',
  'net/ipv4/ip_default_ttl': '64',
  'net/ipv4/ip_local_port_range': '32768\t60999',
  'net/core/somaxconn': '4096',
};

function validIfname(name: unknown): name is string {
  return typeof name === 'string' && NAME_RE.test(name) && name !== '.' && name !== '..';
}

function validNsName(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    name.length > 0 &&
    name.length <= 255 &&
    !name.includes('\0') &&
    name !== '.' &&
    name !== '..'
  );
}

function tupleKey(proto: number, src: Uint8Array, sport: number, dst: Uint8Array, dport: number): string {
  return `${proto}|${Buffer.from(src).toString('hex')}|${sport}|${Buffer.from(dst).toString('hex')}|${dport}`;
}

// ---------------------------------------------------------------- the world

export class World {
  private readonly nss = new Map<string, Ns>();
  private clockUs = 0;
  private macSeq = 0;
  private readonly seed: number;
  private readonly captureLimit: number;
  private caps: CaptureEntry[] = [];
  private capHead = 0;
  private qDev: Link[] = [];
  private qFrame: Buffer[] = [];
  private qHead = 0;
  private pendingNeigh: { dev: Link; entry: NeighEntry }[] = [];
  private tr: Trace | null = null;
  private readonly pings = new Map<string, PingSession>();
  private readonly tcps = new Map<string, TcpSession>();
  private udpProbe: UdpProbe | null = null;
  /** Counters across the world's lifetime. `hops` counts frames processed at a device (tx or rx). */
  readonly stats = { hops: 0, frames: 0, drops: 0 };

  constructor(opts: WorldOptions = {}) {
    this.captureLimit = opts.captureLimit ?? 65536;
    this.seed = (opts.seed ?? 0) & 0xff;
  }

  // ------------------------------------------------------------ clock

  /** Virtual time in milliseconds. */
  get now(): number {
    return Math.floor(this.clockUs / 1000);
  }

  /** Moves virtual time forward: FDB entries and neighbours age as they would on a real host. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new NetsimError('EINVAL', `advance: bad duration ${ms}`);
    this.clockUs += Math.round(ms * 1000);
    for (const ns of this.nss.values()) {
      for (const l of ns.links.values()) {
        if (l.fdb) {
          for (const [k, e] of l.fdb) {
            if (!e.permanent && this.clockUs - e.updatedUs > l.ageingMs * 1000) l.fdb.delete(k);
          }
        }
        if (l.vxFdb) {
          for (const [k, e] of l.vxFdb) {
            if (!e.permanent && this.clockUs - e.updatedUs > l.ageingMs * 1000) l.vxFdb.delete(k);
          }
        }
        for (const [k, n] of l.neigh) {
          const age = this.clockUs - n.updatedUs;
          if (n.state === 'REACHABLE' && age > NEIGH_REACHABLE_MS * 1000) n.state = 'STALE';
          if ((n.state === 'STALE' || n.state === 'FAILED') && age > NEIGH_GC_STALE_MS * 1000)
            l.neigh.delete(k);
        }
      }
      for (const [k, e] of ns.ct) {
        if (this.clockUs - e.conn.lastUs > (CT_TIMEOUT_MS[e.conn.orig.proto] ?? 600_000) * 1000)
          ns.ct.delete(k);
      }
    }
  }

  // ------------------------------------------------------------ namespaces

  addNamespace(name: string): void {
    if (!validNsName(name)) throw new NetsimError('EINVAL', `invalid namespace name "${String(name)}"`);
    if (this.nss.has(name))
      throw new NetsimError('EEXIST', `Cannot create namespace file "/run/netns/${name}"`);
    const ns = new Ns(name);
    this.nss.set(name, ns);
    const lo = new Link(ns, ns.nextIfindex++, 'lo', 'loopback', new Uint8Array(6), 65536);
    ns.links.set('lo', lo);
  }

  hasNamespace(name: string): boolean {
    return this.nss.has(name);
  }

  namespaces(): string[] {
    return [...this.nss.keys()];
  }

  /** Deleting a namespace destroys its devices; a veth whose peer lived here goes with it. */
  deleteNamespace(name: string): void {
    const ns = this.ns(name);
    for (const l of [...ns.links.values()]) if (ns.links.get(l.name) === l) this.destroyLink(l);
    this.nss.delete(name);
    this.localRoutes.delete(ns);
  }

  private ns(name: string): Ns {
    const ns = typeof name === 'string' ? this.nss.get(name) : undefined;
    if (!ns) throw new NetsimError('ENOENT', `Cannot open network namespace "${String(name)}"`);
    return ns;
  }

  private link(ns: Ns, name: string): Link {
    const l = ns.links.get(name);
    if (!l) throw new NetsimError('ENODEV', `Cannot find device "${String(name)}"`);
    return l;
  }

  // ------------------------------------------------------------ links

  private newMac(): Uint8Array {
    const n = ++this.macSeq;
    return Uint8Array.of(0x02, this.seed, (n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255);
  }

  private macOrNew(s: string | undefined): Uint8Array {
    if (s === undefined) return this.newMac();
    const m = mustParseMac(s);
    if (isMulticastMac(m)) throw new NetsimError('EADDRNOTAVAIL', `link-layer address ${s} is multicast`);
    return m;
  }

  private checkMtu(mtu: number | undefined, def: number): number {
    if (mtu === undefined) return def;
    if (!Number.isInteger(mtu) || mtu < 68 || mtu > 65535)
      throw new NetsimError('EINVAL', `mtu ${mtu} out of range`);
    return mtu;
  }

  addLink(nsName: string, spec: LinkSpec): void {
    const ns = this.ns(nsName);
    if (!spec || typeof spec !== 'object') throw new NetsimError('EINVAL', 'link spec missing');
    if (!validIfname(spec.name))
      throw new NetsimError('EINVAL', `"${String(spec.name)}" is not a valid ifname`);
    if (ns.links.has(spec.name)) throw new NetsimError('EEXIST', `link ${spec.name} in ${nsName}`);
    switch (spec.kind) {
      case 'veth': {
        const peerSpec = spec.peer;
        if (!peerSpec || !validIfname(peerSpec.name)) {
          throw new NetsimError('EINVAL', `"${String(peerSpec?.name)}" is not a valid ifname`);
        }
        const pns = peerSpec.ns === undefined ? ns : this.ns(peerSpec.ns);
        if (pns.links.has(peerSpec.name) || (pns === ns && peerSpec.name === spec.name)) {
          throw new NetsimError('EEXIST', `link ${peerSpec.name} in ${pns.name}`);
        }
        const mtu = this.checkMtu(spec.mtu, 1500);
        const a = new Link(ns, ns.nextIfindex++, spec.name, 'veth', this.macOrNew(spec.mac), mtu);
        const b = new Link(pns, pns.nextIfindex++, peerSpec.name, 'veth', this.macOrNew(peerSpec.mac), mtu);
        a.peer = b;
        b.peer = a;
        ns.links.set(a.name, a);
        pns.links.set(b.name, b);
        return;
      }
      case 'bridge': {
        const l = new Link(
          ns,
          ns.nextIfindex++,
          spec.name,
          'bridge',
          this.macOrNew(spec.mac),
          this.checkMtu(spec.mtu, 1500),
        );
        l.ports = new Set();
        l.fdb = new Map();
        if (spec.ageingMs !== undefined) {
          if (!Number.isFinite(spec.ageingMs) || spec.ageingMs < 0)
            throw new NetsimError('EINVAL', 'bad ageing time');
          l.ageingMs = spec.ageingMs;
        }
        l.fdb.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
        ns.links.set(l.name, l);
        return;
      }
      case 'vxlan': {
        if (!Number.isInteger(spec.vni) || spec.vni < 0 || spec.vni > 0xffffff) {
          throw new NetsimError('ERANGE', `vxlan id ${String(spec.vni)} out of range`);
        }
        const port = spec.port ?? VXLAN_PORT;
        if (!Number.isInteger(port) || port < 1 || port > 65535)
          throw new NetsimError('EINVAL', `bad vxlan port ${port}`);
        const local = spec.local === undefined ? null : mustParseIp(spec.local, 'local address');
        // Headroom for the outer headers: 50 bytes over IPv4, 70 over IPv6 (only when a lower device caps it).
        let mtuDef = 1500;
        if (spec.dev !== undefined) mtuDef = this.link(ns, spec.dev).mtu - (local?.family === 6 ? 70 : 50);
        for (const other of ns.vxSock.get(port) ?? []) {
          if (other.vni === spec.vni)
            throw new NetsimError(
              'EEXIST',
              `vxlan vni ${spec.vni} port ${port} already used by ${other.name}`,
            );
        }
        const l = new Link(
          ns,
          ns.nextIfindex++,
          spec.name,
          'vxlan',
          this.macOrNew(spec.mac),
          this.checkMtu(spec.mtu, mtuDef),
        );
        l.vni = spec.vni;
        l.vxPort = port;
        l.vxLocal = local;
        l.vxDev = spec.dev ?? null;
        l.vxLinkNs = ns;
        l.vxLearning = spec.learning ?? true;
        l.vxTtl = spec.ttl ?? 64;
        l.vxFdb = new Map();
        ns.links.set(l.name, l);
        const socks = ns.vxSock.get(port) ?? [];
        socks.push(l);
        ns.vxSock.set(port, socks);
        registerVxlanPort(port);
        return;
      }
      case 'dummy': {
        const l = new Link(
          ns,
          ns.nextIfindex++,
          spec.name,
          'dummy',
          this.macOrNew(spec.mac),
          this.checkMtu(spec.mtu, 1500),
        );
        ns.links.set(l.name, l);
        return;
      }
      default:
        throw new NetsimError('ENOTSUP', `unknown link kind "${String((spec as { kind?: unknown }).kind)}"`);
    }
  }

  deleteLink(nsName: string, name: string): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, name);
    if (l.kind === 'loopback') throw new NetsimError('ENOTSUP', 'cannot delete the loopback device');
    this.destroyLink(l);
  }

  private destroyLink(l: Link): void {
    if (l.ports) for (const p of [...l.ports]) this.release(p);
    if (l.master) this.release(l);
    this.flushLinkState(l);
    l.alive = false;
    l.ns.links.delete(l.name);
    if (l.kind === 'vxlan' && l.vxLinkNs) {
      const socks = l.vxLinkNs.vxSock.get(l.vxPort)?.filter((x) => x !== l) ?? [];
      if (socks.length) l.vxLinkNs.vxSock.set(l.vxPort, socks);
      else l.vxLinkNs.vxSock.delete(l.vxPort);
    }
    const peer = l.peer;
    if (peer) {
      l.peer = null;
      peer.peer = null;
      if (peer.ns.links.get(peer.name) === peer) this.destroyLink(peer);
    }
  }

  /** Addresses, routes and neighbours that reference a device go when it is deleted or moved. */
  private flushLinkState(l: Link): void {
    const ns = l.ns;
    for (const a of ns.addrs.filter((x) => x.dev === l)) this.removeAddr(ns, a);
    for (const t of ns.tables.values()) {
      t.v4 = t.v4.filter((r) => r.dev !== l);
      t.v6 = t.v6.filter((r) => r.dev !== l);
    }
    l.neigh.clear();
    for (const k of [...ns.sysctls.keys()]) if (k.split('/')[3] === l.name) ns.sysctls.delete(k);
  }

  private release(port: Link): void {
    const br = port.master;
    if (!br) return;
    br.ports!.delete(port);
    for (const [k, e] of br.fdb!) if (e.port === port) br.fdb!.delete(k);
    port.master = null;
    port.port = null;
    this.bridgeMtuAdjust(br);
  }

  private bridgeMtuAdjust(br: Link): void {
    if (br.mtuSetByUser || br.ports!.size === 0) return;
    let min = Number.POSITIVE_INFINITY;
    for (const p of br.ports!) min = Math.min(min, p.mtu);
    br.mtu = min;
  }

  setLink(nsName: string, name: string, ch: LinkChange): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, name);
    if (!ch || typeof ch !== 'object') throw new NetsimError('EINVAL', 'link change missing');
    // Validate everything first so a rejected change leaves the link as it was.
    if (ch.mtu !== undefined) this.checkMtu(ch.mtu, 0);
    const mac = ch.mac !== undefined ? this.macOrNew(ch.mac) : null;
    let master: Link | null | undefined;
    if (ch.master !== undefined) {
      if (ch.master === null) master = null;
      else {
        master = this.link(ns, ch.master);
        if (master.kind !== 'bridge') throw new NetsimError('ENOTSUP', `${ch.master} is not a bridge`);
        if (master === l) throw new NetsimError('ELOOP', 'cannot enslave a bridge to itself');
        if (l.kind === 'bridge') throw new NetsimError('ELOOP', 'cannot enslave a bridge to a bridge');
        if (l.kind === 'loopback') throw new NetsimError('EINVAL', 'cannot enslave the loopback device');
      }
    }
    const portFlag =
      ch.hairpin !== undefined ||
      ch.learning !== undefined ||
      ch.flood !== undefined ||
      ch.mcastFlood !== undefined ||
      ch.isolated !== undefined;
    if (portFlag && !l.master && master == null)
      throw new NetsimError('ENOTSUP', `${name} is not a bridge port`);
    if (ch.ageingMs !== undefined && l.kind !== 'bridge' && l.kind !== 'vxlan')
      throw new NetsimError('ENOTSUP', `${name} has no FDB ageing`);
    let target: Ns | undefined;
    if (ch.netns !== undefined) {
      target = this.ns(ch.netns);
      if (l.kind === 'loopback')
        throw new NetsimError('EINVAL', 'the loopback device cannot change namespace');
      const newName = ch.name ?? l.name;
      if (target !== ns && target.links.has(newName))
        throw new NetsimError('EEXIST', `link ${newName} in ${target.name}`);
    }
    if (ch.name !== undefined && ch.name !== l.name) {
      if (!validIfname(ch.name))
        throw new NetsimError('EINVAL', `"${String(ch.name)}" is not a valid ifname`);
      if ((target ?? ns).links.has(ch.name)) throw new NetsimError('EEXIST', `link ${ch.name}`);
      if (l.up && ch.up !== false && (!target || target === ns))
        throw new NetsimError('EBUSY', `cannot rename ${name} while it is up`);
    }

    if (target && target !== ns) {
      if (l.master) this.release(l);
      if (l.ports) for (const p of [...l.ports]) this.release(p);
      this.flushLinkState(l);
      l.up = false;
      ns.links.delete(l.name);
      l.ns = target;
      l.index = target.nextIfindex++;
      target.links.set(ch.name ?? l.name, l);
    }
    if (ch.name !== undefined && ch.name !== l.name) {
      l.ns.links.delete(l.name);
      l.name = ch.name;
      l.ns.links.set(l.name, l);
    }
    if (ch.mtu !== undefined) {
      l.mtu = ch.mtu;
      if (l.kind === 'bridge') l.mtuSetByUser = true;
    }
    if (mac) {
      if (l.fdb) l.fdb.delete(l.macKey);
      if (l.master) l.master.fdb!.delete(l.macKey);
      l.mac = mac;
      l.macKey = macKeyAt(mac, 0);
      if (l.fdb) l.fdb.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
      if (l.master) l.master.fdb!.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
    }
    if (master !== undefined && master !== l.master) {
      if (l.master) this.release(l);
      if (master) {
        l.master = master;
        l.port = { hairpin: false, learning: true, flood: true, mcastFlood: true, isolated: false };
        master.ports!.add(l);
        master.fdb!.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
      }
    }
    if (l.master && (ch.mtu !== undefined || master)) this.bridgeMtuAdjust(l.master);
    if (l.port) {
      if (ch.hairpin !== undefined) l.port.hairpin = ch.hairpin;
      if (ch.learning !== undefined) l.port.learning = ch.learning;
      if (ch.flood !== undefined) l.port.flood = ch.flood;
      if (ch.mcastFlood !== undefined) l.port.mcastFlood = ch.mcastFlood;
      if (ch.isolated !== undefined) l.port.isolated = ch.isolated;
    }
    if (ch.proxyArp !== undefined) l.proxyArp = ch.proxyArp;
    if (ch.promisc !== undefined) l.promisc = ch.promisc;
    if (ch.ageingMs !== undefined) l.ageingMs = ch.ageingMs;
    if (ch.up !== undefined && ch.up !== l.up) {
      if (ch.up) this.linkUp(l);
      else this.linkDown(l);
    }
  }

  private linkUp(l: Link): void {
    l.up = true;
    const ns = l.ns;
    if (l.kind === 'loopback') {
      // The kernel gives lo its addresses when it comes up.
      if (!ns.addrs.some((a) => a.dev === l && a.ip.family === 4 && a.key === 0x7f000001)) {
        this.insertAddr(ns, l, { family: 4, bytes: Uint8Array.of(127, 0, 0, 1) }, 8, 'host');
      }
      const v6lo = new Uint8Array(16);
      v6lo[15] = 1;
      if (!ns.local.has(ipKey({ family: 6, bytes: v6lo })))
        this.insertAddr(ns, l, { family: 6, bytes: v6lo }, 128, 'host');
      return;
    }
    for (const a of ns.addrs) if (a.dev === l) this.addPrefixRoute(ns, a);
    // IPv6 link-local address (addr_gen_mode eui64), as the kernel assigns on NETDEV_UP.
    const ll = linkLocalFromMac(l.mac);
    const llKey = ipKey({ family: 6, bytes: ll });
    if (!ns.addrs.some((a) => a.dev === l && a.key === llKey))
      this.insertAddr(ns, l, { family: 6, bytes: ll }, 64, 'link');
  }

  private linkDown(l: Link): void {
    l.up = false;
    const ns = l.ns;
    // IPv4 drops every route through a device that goes down; IPv6 drops the kernel's own routes.
    for (const t of ns.tables.values()) {
      t.v4 = t.v4.filter((r) => r.dev !== l);
      t.v6 = t.v6.filter((r) => !(r.dev === l && r.proto === 'kernel'));
    }
    for (const a of ns.addrs.filter((x) => x.dev === l && x.scope === 'link' && x.ip.family === 6))
      this.removeAddr(ns, a);
    for (const [k, n] of l.neigh) if (n.state !== 'PERMANENT') l.neigh.delete(k);
  }

  getLink(nsName: string, name: string): LinkInfo {
    return this.linkInfo(this.link(this.ns(nsName), name));
  }

  links(nsName: string): LinkInfo[] {
    return [...this.ns(nsName).links.values()].sort((a, b) => a.index - b.index).map((l) => this.linkInfo(l));
  }

  private linkInfo(l: Link): LinkInfo {
    const info: LinkInfo = {
      index: l.index,
      name: l.name,
      kind: l.kind,
      mac: formatMac(l.mac),
      mtu: l.mtu,
      up: l.up,
      carrier: l.carrier,
      master: l.master?.name ?? null,
      proxyArp: l.proxyArp,
      promisc: l.promisc,
      stats: { ...l.stats },
    };
    if (l.peer) info.peer = { ns: l.peer.ns.name, name: l.peer.name };
    if (l.port) info.port = { ...l.port };
    if (l.kind === 'bridge') info.bridge = { ageingMs: l.ageingMs };
    if (l.kind === 'vxlan') {
      info.vxlan = {
        vni: l.vni,
        port: l.vxPort,
        local: l.vxLocal ? formatIp(l.vxLocal) : null,
        dev: l.vxDev,
        learning: l.vxLearning,
        ttl: l.vxTtl,
      };
    }
    return info;
  }

  // ------------------------------------------------------------ addresses

  addAddress(nsName: string, dev: string, cidr: string): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, dev);
    const { ip, len } = parseCidr(cidr);
    const key = ipKey(ip);
    if (ns.addrs.some((a) => a.dev === l && a.key === key))
      throw new NetsimError('EEXIST', `address ${cidr} on ${dev}`);
    if (ip.family === 4 && ip.bytes[0] === 0) throw new NetsimError('EINVAL', `invalid address ${cidr}`);
    if (ip.family === 6 && ip.bytes[0] === 0xff) throw new NetsimError('EINVAL', `multicast address ${cidr}`);
    const scope =
      ip.family === 4
        ? ip.bytes[0] === 127
          ? 'host'
          : 'global'
        : isLinkLocalV6(ip.bytes)
          ? 'link'
          : 'global';
    this.insertAddr(ns, l, ip, len, scope);
  }

  private insertAddr(ns: Ns, l: Link, ip: IpAddr, len: number, scope: Addr['scope']): Addr {
    const a: Addr = { ip, key: ipKey(ip), len, prefix: toPrefix(ip, len), dev: l, scope };
    ns.addrs.push(a);
    if (!ns.local.has(a.key)) ns.local.set(a.key, a);
    if (l.up) this.addPrefixRoute(ns, a);
    return a;
  }

  /** The kernel's "proto kernel scope link" route for an address's subnet. */
  private addPrefixRoute(ns: Ns, a: Addr): void {
    if (a.dev.kind === 'loopback') return;
    const max = a.ip.family === 4 ? 32 : 128;
    if (a.len === max) return;
    const dst = toPrefix(a.ip, a.len);
    const t = ns.table(RT_TABLE_MAIN);
    const list = a.ip.family === 4 ? t.v4 : t.v6;
    const metric = a.ip.family === 4 ? 0 : 256;
    if (list.some((r) => r.dev === a.dev && r.proto === 'kernel' && prefixEquals(r.dst, dst))) return;
    this.insertRoute(ns, {
      family: a.ip.family,
      dst,
      type: 'unicast',
      dev: a.dev,
      via: null,
      onlink: false,
      src: a.ip.family === 4 ? a.ip : null,
      metric,
      table: RT_TABLE_MAIN,
      proto: 'kernel',
      // IPv6 routes always report universe scope.
      scope: a.ip.family === 4 ? 'link' : 'global',
      net4: 0,
      mask4: 0,
    });
  }

  deleteAddress(nsName: string, dev: string, cidr: string): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, dev);
    const { ip, len } = parseCidr(cidr);
    const key = ipKey(ip);
    const a = ns.addrs.find((x) => x.dev === l && x.key === key && (!cidr.includes('/') || x.len === len));
    if (!a) throw new NetsimError('EADDRNOTAVAIL', `address ${cidr} on ${dev}`);
    this.removeAddr(ns, a);
  }

  private removeAddr(ns: Ns, a: Addr): void {
    ns.addrs = ns.addrs.filter((x) => x !== a);
    if (ns.local.get(a.key) === a) {
      ns.local.delete(a.key);
      const other = ns.addrs.find((x) => x.key === a.key);
      if (other) ns.local.set(a.key, other);
    }
    // The subnet route goes with the last address of that subnet on the device.
    const dst = toPrefix(a.ip, a.len);
    const still = ns.addrs.some(
      (x) => x.dev === a.dev && x.ip.family === a.ip.family && x.len === a.len && prefixEquals(x.prefix, dst),
    );
    if (!still) {
      for (const t of ns.tables.values()) {
        const keep = (r: Route) => !(r.dev === a.dev && r.proto === 'kernel' && prefixEquals(r.dst, dst));
        if (a.ip.family === 4) t.v4 = t.v4.filter(keep);
        else t.v6 = t.v6.filter(keep);
      }
    }
    // IPv4 routes whose preferred source was this address go too.
    if (a.ip.family === 4) {
      for (const t of ns.tables.values()) {
        t.v4 = t.v4.filter(
          (r) => !(r.src && bytesEqual(r.src.bytes, 0, a.ip.bytes, 0, 4) && r.proto === 'kernel'),
        );
      }
    }
  }

  addresses(nsName: string, dev?: string): AddressInfo[] {
    const ns = this.ns(nsName);
    const l = dev === undefined ? null : this.link(ns, dev);
    return ns.addrs
      .filter((a) => !l || a.dev === l)
      .map((a) => {
        const address = formatIp(a.ip);
        return {
          dev: a.dev.name,
          cidr: `${address}/${a.len}`,
          address,
          prefixLen: a.len,
          family: a.ip.family,
          scope: a.scope,
        };
      });
  }

  // ------------------------------------------------------------ routes

  private compileRoute(ns: Ns, spec: RouteSpec): Route {
    if (!spec || typeof spec !== 'object') throw new NetsimError('EINVAL', 'route spec missing');
    const via = spec.via === undefined ? null : mustParseIp(spec.via, 'gateway');
    const hint = spec.family ?? via?.family;
    const { ip, len } = parseCidr(spec.dst, hint);
    const family = ip.family;
    if (spec.family !== undefined && spec.family !== family)
      throw new NetsimError('EINVAL', `prefix ${spec.dst} is not IPv${spec.family}`);
    if (via && via.family !== family)
      throw new NetsimError('EINVAL', `gateway ${spec.via} is not IPv${family}`);
    const type = spec.type ?? 'unicast';
    if (!['unicast', 'blackhole', 'unreachable', 'prohibit', 'local'].includes(type))
      throw new NetsimError('EINVAL', `route type ${type}`);
    const dev = spec.dev === undefined ? null : this.link(ns, spec.dev);
    const table = spec.table ?? RT_TABLE_MAIN;
    if (!Number.isInteger(table) || table < 1 || table > 0xffffffff)
      throw new NetsimError('EINVAL', `table ${table}`);
    const src = spec.src === undefined ? null : mustParseIp(spec.src, 'source');
    if (src && !ns.local.has(ipKey(src)))
      throw new NetsimError('EINVAL', `preferred source ${spec.src} is not a local address`);
    const metric = spec.metric ?? (family === 6 ? 1024 : 0);
    let resolvedDev = dev;
    if (type === 'unicast' || type === 'local') {
      if (!dev && !via) throw new NetsimError('EINVAL', 'route needs a gateway or a device');
      if (dev && family === 4 && !dev.up && !spec.onlink)
        throw new NetsimError('ENETDOWN', `Nexthop device ${dev.name} is not up`);
      if (via && !spec.onlink) {
        // The gateway must be reachable through a connected route (on that device when one is named).
        const r = this.lookupTable(ns.table(RT_TABLE_MAIN), via.bytes, 0, family);
        const connected = r && r.type === 'unicast' && !r.via && (!dev || r.dev === dev);
        if (!connected) throw new NetsimError('ENETUNREACH', `Nexthop has invalid gateway ${spec.via}`);
        resolvedDev = dev ?? r.dev;
      }
      if (via && spec.onlink && !dev) throw new NetsimError('EINVAL', 'onlink route needs a device');
    }
    const prefix = toPrefix(ip, len);
    const r: Route = {
      family,
      dst: prefix,
      type,
      dev: resolvedDev,
      via,
      onlink: spec.onlink ?? false,
      src,
      metric,
      table,
      proto: spec.proto ?? 'boot',
      scope:
        family === 6
          ? 'global'
          : (spec.scope ?? (type === 'local' ? 'host' : via || type !== 'unicast' ? 'global' : 'link')),
      net4: 0,
      mask4: 0,
    };
    return r;
  }

  private insertRoute(ns: Ns, r: Route): void {
    if (r.family === 4) {
      r.mask4 = r.dst.len === 0 ? 0 : (0xffffffff << (32 - r.dst.len)) >>> 0;
      r.net4 = ipKeyAt(r.dst.bytes, 0, 4) as number;
    }
    const t = ns.table(r.table);
    const list = r.family === 4 ? t.v4 : t.v6;
    // Longest prefix first, then lowest metric: the first match is the answer.
    let i = 0;
    while (
      i < list.length &&
      (list[i]!.dst.len > r.dst.len || (list[i]!.dst.len === r.dst.len && list[i]!.metric <= r.metric))
    )
      i++;
    list.splice(i, 0, r);
  }

  private findSame(ns: Ns, r: Route): Route | undefined {
    const t = ns.tables.get(r.table);
    if (!t) return undefined;
    return (r.family === 4 ? t.v4 : t.v6).find((x) => x.metric === r.metric && prefixEquals(x.dst, r.dst));
  }

  addRoute(nsName: string, spec: RouteSpec): void {
    const ns = this.ns(nsName);
    const r = this.compileRoute(ns, spec);
    if (this.findSame(ns, r)) throw new NetsimError('EEXIST', `route ${formatPrefix(r.dst)}`);
    this.insertRoute(ns, r);
  }

  /** `ip route replace`: add, or overwrite the route with the same prefix, metric and table. */
  replaceRoute(nsName: string, spec: RouteSpec): void {
    const ns = this.ns(nsName);
    const r = this.compileRoute(ns, spec);
    const old = this.findSame(ns, r);
    if (old) this.dropRoute(ns, old);
    this.insertRoute(ns, r);
  }

  deleteRoute(nsName: string, spec: RouteSpec): void {
    const ns = this.ns(nsName);
    const via = spec.via === undefined ? null : mustParseIp(spec.via, 'gateway');
    const { ip, len } = parseCidr(spec.dst, spec.family ?? via?.family);
    const dst = toPrefix(ip, len);
    const table = spec.table ?? RT_TABLE_MAIN;
    const dev = spec.dev === undefined ? null : this.link(ns, spec.dev);
    const t = ns.tables.get(table);
    const list = t ? (ip.family === 4 ? t.v4 : t.v6) : [];
    const r = list.find(
      (x) =>
        prefixEquals(x.dst, dst) &&
        (spec.metric === undefined || x.metric === spec.metric) &&
        (!dev || x.dev === dev) &&
        (!via || (x.via !== null && bytesEqual(x.via.bytes, 0, via.bytes, 0, via.bytes.length))) &&
        (spec.type === undefined || x.type === spec.type),
    );
    if (!r) throw new NetsimError('ESRCH', `route ${spec.dst}`);
    this.dropRoute(ns, r);
  }

  private dropRoute(ns: Ns, r: Route): void {
    const t = ns.tables.get(r.table)!;
    if (r.family === 4) t.v4 = t.v4.filter((x) => x !== r);
    else t.v6 = t.v6.filter((x) => x !== r);
  }

  routes(nsName: string, opts: { table?: number; family?: 4 | 6 } = {}): RouteInfo[] {
    const ns = this.ns(nsName);
    const out: RouteInfo[] = [];
    const ids = opts.table === undefined ? [...ns.tables.keys()].sort((a, b) => a - b) : [opts.table];
    for (const id of ids) {
      const t = ns.tables.get(id);
      if (!t) continue;
      for (const r of [...(opts.family === 6 ? [] : t.v4), ...(opts.family === 4 ? [] : t.v6)])
        out.push(this.routeInfo(r));
    }
    return out;
  }

  private routeInfo(r: Route): RouteInfo {
    return {
      family: r.family,
      dst: r.dst.len === 0 ? 'default' : `${formatIpBytes(r.dst.bytes, 0, r.family)}/${r.dst.len}`,
      type: r.type,
      via: r.via ? formatIp(r.via) : null,
      dev: r.dev?.name ?? null,
      onlink: r.onlink,
      src: r.src ? formatIp(r.src) : null,
      metric: r.metric,
      table: r.table,
      proto: r.proto,
      scope: r.scope,
    };
  }

  /** `ip route get`: the route the kernel would use for a destination (local addresses resolve to lo). */
  getRoute(nsName: string, dst: string): RouteInfo & { prefsrc: string | null } {
    const ns = this.ns(nsName);
    const ip = mustParseIp(dst, 'destination');
    const r = this.resolveRoute(ns, ip.bytes, 0, ip.family);
    if (!r) throw new NetsimError('ENETUNREACH', `route to ${dst}`);
    if (r.type !== 'unicast' && r.type !== 'local') {
      const code = r.type === 'blackhole' ? 'EINVAL' : r.type === 'prohibit' ? 'EACCES' : 'EHOSTUNREACH';
      throw new NetsimError(code, `route to ${dst} is ${r.type}`);
    }
    const src = this.selectSource(ns, r, ip.bytes, 0, ip.family);
    return { ...this.routeInfo(r), prefsrc: src ? formatIp(src) : null };
  }

  private lookupTable(t: RouteTable, b: Uint8Array, off: number, family: Family): Route | null {
    if (family === 4) {
      const k = ipKeyAt(b, off, 4) as number;
      for (const r of t.v4) if ((k & r.mask4) >>> 0 === r.net4) return r;
      return null;
    }
    for (const r of t.v6) if (prefixContains(r.dst, b, off)) return r;
    return null;
  }

  private localRoutes = new Map<Ns, [Route | null, Route | null]>();

  /** Local table first (own addresses go via lo), then main. */
  private resolveRoute(ns: Ns, b: Uint8Array, off: number, family: Family): Route | null {
    const k = ipKeyAt(b, off, family);
    if (ns.local.has(k) || (family === 4 && b[off] === 127)) {
      let pair = this.localRoutes.get(ns);
      if (!pair) {
        pair = [null, null];
        this.localRoutes.set(ns, pair);
      }
      let lr = pair[family === 4 ? 0 : 1];
      if (!lr || lr.dev !== ns.links.get('lo')) {
        lr = {
          family,
          dst: { family, bytes: new Uint8Array(family === 4 ? 4 : 16), len: 0 },
          type: 'local',
          dev: ns.links.get('lo') ?? null,
          via: null,
          onlink: false,
          src: null,
          metric: 0,
          table: RT_TABLE_LOCAL,
          proto: 'kernel',
          scope: 'host',
          net4: 0,
          mask4: 0,
        };
        pair[family === 4 ? 0 : 1] = lr;
      }
      return lr;
    }
    const t = ns.tables.get(RT_TABLE_MAIN);
    return t ? this.lookupTable(t, b, off, family) : null;
  }

  /** Source address selection: the route's preferred source, else an address on the outgoing device. */
  private selectSource(ns: Ns, r: Route, dst: Uint8Array, off: number, family: Family): IpAddr | null {
    if (r.src) return r.src;
    if (r.type === 'local') {
      const k = ipKeyAt(dst, off, family);
      const a = ns.local.get(k);
      if (a) return a.ip;
      if (family === 4) return { family: 4, bytes: Uint8Array.of(127, 0, 0, 1) };
    }
    const nh = r.via ? r.via.bytes : dst;
    const nhOff = r.via ? 0 : off;
    let best: Addr | null = null;
    const wantLink = family === 6 && isLinkLocalV6(nh, nhOff);
    for (const a of ns.addrs) {
      if (a.dev !== r.dev || a.ip.family !== family) continue;
      if (family === 6 && (a.scope === 'link') !== wantLink) {
        if (!best) best = a;
        continue;
      }
      if (prefixContains(a.prefix, nh, nhOff)) return a.ip;
      if (!best || (best.scope === 'link' && a.scope !== 'link')) best = a;
    }
    if (best && !(family === 6 && best.scope === 'link' && !wantLink)) return best.ip;
    // Any global address in the namespace (the kernel's fallback for devices without one).
    for (const a of ns.addrs) if (a.ip.family === family && a.scope === 'global') return a.ip;
    return best?.ip ?? null;
  }

  // ------------------------------------------------------------ neighbours

  addNeighbour(nsName: string, spec: NeighSpec, replace = false): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, spec.dev);
    const ip = mustParseIp(spec.ip, 'neighbour address');
    const mac = mustParseMac(spec.mac);
    const key = ipKey(ip);
    const cur = l.neigh.get(key);
    if (cur && !replace && cur.state !== 'INCOMPLETE' && cur.state !== 'FAILED')
      throw new NetsimError('EEXIST', `neighbour ${spec.ip} dev ${spec.dev}`);
    const state = spec.state ?? 'PERMANENT';
    const queue = cur?.queue ?? [];
    const e: NeighEntry = { ip, key, mac, state, updatedUs: this.clockUs, queue: [] };
    l.neigh.set(key, e);
    if (queue.length) {
      for (const q of queue) this.sendResolved(l, e, q.p, q.family);
      this.run();
    }
  }

  deleteNeighbour(nsName: string, dev: string, ipStr: string): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, dev);
    const ip = mustParseIp(ipStr, 'neighbour address');
    if (!l.neigh.delete(ipKey(ip))) throw new NetsimError('ENOENT', `neighbour ${ipStr} dev ${dev}`);
  }

  /** `ip neigh flush`: drops every non-permanent entry (all entries with `all`). */
  flushNeighbours(nsName: string, dev?: string, all = false): void {
    const ns = this.ns(nsName);
    const devs = dev === undefined ? [...ns.links.values()] : [this.link(ns, dev)];
    for (const l of devs) for (const [k, n] of l.neigh) if (all || n.state !== 'PERMANENT') l.neigh.delete(k);
  }

  neighbours(nsName: string, dev?: string): NeighInfo[] {
    const ns = this.ns(nsName);
    const devs = dev === undefined ? [...ns.links.values()] : [this.link(ns, dev)];
    const out: NeighInfo[] = [];
    for (const l of devs) {
      for (const n of l.neigh.values()) {
        out.push({
          dev: l.name,
          ip: formatIp(n.ip),
          family: n.ip.family,
          mac: n.mac ? formatMac(n.mac) : null,
          state: n.state,
        });
      }
    }
    return out;
  }

  // ------------------------------------------------------------ FDB

  /** `bridge fdb add MAC dev PORT master` (port of a bridge) or `... dev VXLAN dst IP self` (vxlan). */
  /**
   * `bridge fdb add|replace|append`. Modes follow the kernel: `add` fails with EEXIST on an existing
   * entry, `replace` rewrites unicast entries (not the all-zeros / multicast ones: ENOTSUP), `append`
   * adds another remote to an all-zeros or multicast entry (VXLAN head-end replication).
   */
  addFdb(nsName: string, dev: string, spec: FdbSpec, mode: 'add' | 'replace' | 'append' = 'add'): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, dev);
    const mac = mustParseMac(spec.mac);
    const mk = macKeyAt(mac, 0);
    const groupMac = mk === 0 || isMulticastMac(mac);
    if (l.kind === 'vxlan') {
      if (spec.dst === undefined) throw new NetsimError('EINVAL', 'vxlan fdb entry needs a remote dst');
      const dst = mustParseIp(spec.dst, 'remote');
      const cur = l.vxFdb!.get(mk);
      const same = cur?.dsts.some(
        (d) => d.family === dst.family && bytesEqual(d.bytes, 0, dst.bytes, 0, d.bytes.length),
      );
      if (mode === 'append' && !groupMac)
        throw new NetsimError('EINVAL', 'append is only for all-zeros or multicast entries');
      // The kernel never lets "replace" create or change a flood (all-zeros / multicast) entry.
      if (mode === 'replace' && groupMac)
        throw new NetsimError('ENOTSUP', 'Cannot replace an existing non-unicast fdb entry');
      if (cur) {
        if (mode === 'add' || (mode === 'append' && same))
          throw new NetsimError('EEXIST', `fdb ${spec.mac} dev ${dev}`);
        if (mode === 'append') {
          cur.dsts.push(dst);
          return;
        }
      }
      l.vxFdb!.set(mk, { mac, dsts: [dst], permanent: spec.permanent ?? true, updatedUs: this.clockUs });
      return;
    }
    const br = l.kind === 'bridge' ? l : l.master;
    if (!br) throw new NetsimError('EINVAL', `${dev} is not a bridge port`);
    if (mode === 'append') throw new NetsimError('EINVAL', 'append is only for VXLAN devices');
    const cur = br.fdb!.get(mk);
    if (cur && mode === 'add') throw new NetsimError('EEXIST', `fdb ${spec.mac} dev ${dev}`);
    br.fdb!.set(mk, { port: l, updatedUs: this.clockUs, permanent: spec.permanent ?? true, local: l === br });
  }

  deleteFdb(nsName: string, dev: string, macStr: string, dst?: string): void {
    const ns = this.ns(nsName);
    const l = this.link(ns, dev);
    const mk = macKeyAt(mustParseMac(macStr), 0);
    if (l.kind === 'vxlan') {
      const cur = l.vxFdb!.get(mk);
      if (!cur) throw new NetsimError('ENOENT', `fdb ${macStr} dev ${dev}`);
      if (dst !== undefined) {
        const d = mustParseIp(dst, 'remote');
        const rest = cur.dsts.filter(
          (x) => !(x.family === d.family && bytesEqual(x.bytes, 0, d.bytes, 0, d.bytes.length)),
        );
        if (rest.length === cur.dsts.length)
          throw new NetsimError('ENOENT', `fdb ${macStr} dst ${dst} dev ${dev}`);
        if (rest.length) cur.dsts = rest;
        else l.vxFdb!.delete(mk);
      } else l.vxFdb!.delete(mk);
      return;
    }
    const br = l.kind === 'bridge' ? l : l.master;
    const cur = br ? br.fdb!.get(mk) : undefined;
    if (!br || !cur || (cur.port !== l && l !== br))
      throw new NetsimError('ENOENT', `fdb ${macStr} dev ${dev}`);
    br.fdb!.delete(mk);
  }

  fdb(nsName: string, dev: string): FdbInfo[] {
    const ns = this.ns(nsName);
    const l = this.link(ns, dev);
    const out: FdbInfo[] = [];
    if (l.vxFdb) {
      for (const e of l.vxFdb.values()) {
        for (const d of e.dsts) {
          out.push({
            mac: formatMac(e.mac),
            dev: l.name,
            dst: formatIp(d),
            master: null,
            permanent: e.permanent,
            local: false,
            ageMs: e.permanent ? null : Math.floor((this.clockUs - e.updatedUs) / 1000),
          });
        }
      }
    }
    const br = l.kind === 'bridge' ? l : l.master;
    if (br) {
      for (const [k, e] of br.fdb!) {
        if (l !== br && e.port !== l) continue;
        if (!e.permanent && this.clockUs - e.updatedUs > br.ageingMs * 1000) continue;
        out.push({
          mac: formatMac(macKeyToBytes(k)),
          dev: e.port.name,
          dst: null,
          master: e.port === br ? null : br.name,
          permanent: e.permanent,
          local: e.local,
          ageMs: e.permanent ? null : Math.floor((this.clockUs - e.updatedUs) / 1000),
        });
      }
    }
    return out;
  }

  // ------------------------------------------------------------ sysctls

  setForwarding(nsName: string, family: 4 | 6, on: boolean): void {
    const ns = this.ns(nsName);
    if (family === 4) ns.fwd4 = on;
    else ns.fwd6 = on;
  }

  /**
   * Sysctls under /proc/sys/net, by dotted (`net.ipv4.ip_forward`) or slash form (needed when a device
   * name contains a dot). Forwarding and proxy_arp change behaviour; other keys are stored and read back.
   * Per-device keys of a missing device fail with ENOENT, like the missing /proc file.
   */
  setSysctl(nsName: string, key: string, value: string): void {
    const ns = this.ns(nsName);
    const k = this.sysctlKey(ns, key);
    const v = String(value).trim();
    if (v.length === 0 || v.length > 4096 || /[\0\n]/.test(v))
      throw new NetsimError('EINVAL', `sysctl ${key}=${value}`);
    const bool = k.endsWith('/forwarding') || k === 'net/ipv4/ip_forward' || k.endsWith('/proxy_arp');
    if (bool && v !== '0' && v !== '1') throw new NetsimError('EINVAL', `sysctl ${key}=${value}`);
    if (k === 'net/ipv4/ip_forward' || k === 'net/ipv4/conf/all/forwarding') ns.fwd4 = v === '1';
    else if (k === 'net/ipv6/conf/all/forwarding') ns.fwd6 = v === '1';
    else {
      const m = /^net\/ipv4\/conf\/([^/]+)\/proxy_arp$/.exec(k);
      if (m && m[1] !== 'all' && m[1] !== 'default') this.link(ns, m[1]!).proxyArp = v === '1';
      else ns.sysctls.set(k, v);
    }
  }

  getSysctl(nsName: string, key: string): string {
    const ns = this.ns(nsName);
    const k = this.sysctlKey(ns, key);
    if (k === 'net/ipv4/ip_forward' || k === 'net/ipv4/conf/all/forwarding') return ns.fwd4 ? '1' : '0';
    if (k === 'net/ipv6/conf/all/forwarding') return ns.fwd6 ? '1' : '0';
    const m = /^net\/ipv4\/conf\/([^/]+)\/proxy_arp$/.exec(k);
    if (m && m[1] !== 'all' && m[1] !== 'default') return this.link(ns, m[1]!).proxyArp ? '1' : '0';
    return ns.sysctls.get(k) ?? SYSCTL_DEFAULTS[k.replace(/^(net\/ipv[46]\/conf)\/[^/]+\//, '$1/*/')] ?? '0';
  }

  private sysctlKey(ns: Ns, key: string): string {
    if (typeof key !== 'string' || key.includes('\0') || key.includes('..') || key.length > 255) {
      throw new NetsimError('EINVAL', `invalid sysctl key ${String(key)}`);
    }
    let parts: string[];
    if (key.includes('/')) parts = key.replace(/^\/?(proc\/sys\/)?/, '').split('/');
    else {
      const d = key.split('.');
      // net.ipv4.conf.<dev>.<name>: the device name may itself contain dots.
      parts =
        d.length > 5 && d[2] === 'conf' ? [d[0]!, d[1]!, d[2]!, d.slice(3, -1).join('.'), d.at(-1)!] : d;
    }
    if (parts.some((x) => x === '') || parts[0] !== 'net' || !SYSCTL_ROOTS.has(parts[1] ?? '')) {
      throw new NetsimError('ENOENT', `/proc/sys/${parts.join('/')}`);
    }
    if (parts[2] === 'conf' || parts[2] === 'neigh') {
      if (parts.length !== 5) throw new NetsimError('ENOENT', `/proc/sys/${parts.join('/')}`);
      const dev = parts[3]!;
      if (dev !== 'all' && dev !== 'default' && !ns.links.has(dev))
        throw new NetsimError('ENOENT', `/proc/sys/${parts.join('/')}`);
    }
    return parts.join('/');
  }

  // ------------------------------------------------------------ NAT

  addNatRule(nsName: string, rule: NatRule): number {
    const ns = this.ns(nsName);
    const c = this.compileNat(rule);
    c.id = ++ns.natSeq;
    ns.nat.push(c);
    return c.id;
  }

  /** Removes every rule carrying this owner tag; returns how many went. */
  deleteNatRulesByOwner(nsName: string, owner: string): number {
    const ns = this.ns(nsName);
    const before = ns.nat.length;
    ns.nat = ns.nat.filter((r) => r.rule.owner !== owner);
    return before - ns.nat.length;
  }

  deleteNatRule(nsName: string, id: number): void {
    const ns = this.ns(nsName);
    const i = ns.nat.findIndex((r) => r.id === id);
    if (i < 0) throw new NetsimError('ENOENT', `nat rule ${id}`);
    ns.nat.splice(i, 1);
  }

  natRules(nsName: string): NatRuleInfo[] {
    return this.ns(nsName).nat.map((r) => ({ id: r.id, rule: structuredClone(r.rule) }));
  }

  /** Connection-tracking entries of a namespace (`conntrack -L`), as "src:sport -> dst:dport" pairs. */
  conntrack(nsName: string): { proto: number; orig: string; reply: string; nat: ('dnat' | 'snat')[] }[] {
    const ns = this.ns(nsName);
    const t = (x: Tuple, f: Family) =>
      `${formatIpBytes(x.src, 0, f)}:${x.sport} -> ${formatIpBytes(x.dst, 0, f)}:${x.dport}`;
    const out = [];
    for (const e of ns.ct.values()) {
      if (e.dir !== 'orig') continue;
      const c = e.conn;
      const nat: ('dnat' | 'snat')[] = [];
      if (c.dnat) nat.push('dnat');
      if (c.snat) nat.push('snat');
      out.push({ proto: c.orig.proto, orig: t(c.orig, c.family), reply: t(c.reply, c.family), nat });
    }
    return out;
  }

  /** Drops all connection-tracking state of a namespace (`conntrack -F`). */
  flushConntrack(nsName: string): void {
    this.ns(nsName).ct.clear();
  }

  private compileNat(rule: NatRule): CompiledNat {
    if (!rule || typeof rule !== 'object') throw new NetsimError('EINVAL', 'nat rule missing');
    const pfx = (s: string) => {
      const { ip, len } = parseCidr(s);
      return toPrefix(ip, len);
    };
    if (rule.type === 'dnat') {
      if (rule.proto !== 'tcp' && rule.proto !== 'udp')
        throw new NetsimError('EINVAL', `dnat proto ${String(rule.proto)}`);
      if (!Number.isInteger(rule.dport) || rule.dport < 1 || rule.dport > 65535)
        throw new NetsimError('EINVAL', `dnat port ${rule.dport}`);
      const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(rule.to) ??
        /^([^:]+)(?::(\d+))?$/.exec(rule.to) ?? [rule.to, rule.to, undefined];
      const to = mustParseIp(m[1]!, 'dnat target');
      const toPort = m[2] === undefined ? undefined : Number(m[2]);
      if (toPort !== undefined && (toPort < 1 || toPort > 65535))
        throw new NetsimError('EINVAL', `dnat target port ${toPort}`);
      const dst = rule.dst === undefined ? undefined : pfx(rule.dst);
      if (dst && dst.family !== to.family)
        throw new NetsimError('EINVAL', 'dnat match and target families differ');
      const src = rule.src === undefined ? undefined : pfx(rule.src);
      if (src && src.family !== to.family)
        throw new NetsimError('EINVAL', 'dnat source and target families differ');
      return { id: 0, rule: structuredClone(rule), family: to.family, dst, src, to, toPort };
    }
    if (rule.type === 'snat' || rule.type === 'masquerade') {
      const src = rule.src === undefined ? undefined : pfx(rule.src);
      const dst = rule.dst === undefined ? undefined : pfx(rule.dst);
      const notDst = rule.notDst?.map(pfx);
      const to = rule.to === undefined ? undefined : mustParseIp(rule.to, 'snat target');
      if (rule.type === 'snat' && !to) throw new NetsimError('EINVAL', 'snat rule needs "to"');
      if (rule.proto !== undefined && rule.proto !== 'tcp' && rule.proto !== 'udp')
        throw new NetsimError('EINVAL', `snat proto ${String(rule.proto)}`);
      if (rule.dport !== undefined && (!Number.isInteger(rule.dport) || rule.dport < 1 || rule.dport > 65535))
        throw new NetsimError('EINVAL', `snat port ${rule.dport}`);
      const family = (rule.family ?? src?.family ?? dst?.family ?? to?.family ?? 0) as Family | 0;
      return { id: 0, rule: structuredClone(rule), family, src, dst, notDst, to };
    }
    throw new NetsimError('EINVAL', `unknown nat rule type "${String((rule as { type?: unknown }).type)}"`);
  }

  // ------------------------------------------------------------ listeners

  listen(nsName: string, l: Listener): void {
    const ns = this.ns(nsName);
    if (l.proto !== 'tcp' && l.proto !== 'udp') throw new NetsimError('EINVAL', `proto ${String(l.proto)}`);
    if (!Number.isInteger(l.port) || l.port < 1 || l.port > 65535)
      throw new NetsimError('EINVAL', `port ${l.port}`);
    if (l.ip !== undefined) {
      const ip = mustParseIp(l.ip, 'bind address');
      if (!ns.local.has(ipKey(ip))) throw new NetsimError('EADDRNOTAVAIL', `bind ${l.ip}`);
    }
    if (
      ns.listeners.some(
        (x) =>
          x.proto === l.proto &&
          x.port === l.port &&
          (x.ip === undefined || l.ip === undefined || x.ip === l.ip),
      )
    ) {
      throw new NetsimError('EADDRINUSE', `bind ${l.proto} port ${l.port}`);
    }
    ns.listeners.push({ ...l });
  }

  unlisten(nsName: string, l: Listener): void {
    const ns = this.ns(nsName);
    const before = ns.listeners.length;
    ns.listeners = ns.listeners.filter((x) => !(x.proto === l.proto && x.port === l.port && x.ip === l.ip));
    if (ns.listeners.length === before) throw new NetsimError('ENOENT', `listener ${l.proto}/${l.port}`);
  }

  private hasListener(
    ns: Ns,
    proto: 'tcp' | 'udp',
    port: number,
    dst: Uint8Array,
    off: number,
    family: Family,
  ): boolean {
    for (const l of ns.listeners) {
      if (l.proto !== proto || l.port !== port) continue;
      if (l.ip === undefined) return true;
      const ip = mustParseIp(l.ip);
      if (ip.family === family && bytesEqual(ip.bytes, 0, dst, off, ip.bytes.length)) return true;
    }
    return false;
  }

  // ------------------------------------------------------------ tracing and capture

  private rec(
    kind: HopKind,
    ns: Ns,
    dev: Link | null,
    detail: string,
    pkt?: Uint8Array,
    pktIsL3?: Family,
    reason?: string,
  ): void {
    if (kind === 'drop') {
      this.stats.drops++;
      if (dev) dev.stats.dropped++;
    }
    const tr = this.tr;
    if (!tr) return;
    let packet: string | undefined;
    if (pkt) {
      packet = pktIsL3
        ? summarizeFrame(
            ethFrame(new Uint8Array(6), new Uint8Array(6), pktIsL3 === 4 ? ETH_P_IP : ETH_P_IPV6, pkt),
          )
        : summarizeFrame(pkt);
    }
    tr.push({
      seq: tr.length + 1,
      timeUs: this.clockUs,
      ns: ns.name,
      dev: dev?.name ?? null,
      kind,
      detail,
      packet,
      reason,
    });
  }

  private capture(l: Link, frame: Buffer, dir: 'rx' | 'tx'): void {
    const lim = this.captureLimit;
    if (lim <= 0) return;
    const c: CaptureEntry = { timeUs: this.clockUs, frame, dir, link: l, ns: l.ns.name, dev: l.name };
    // One ring for the whole world: memory stays bounded however many devices there are.
    if (this.caps.length < lim) this.caps.push(c);
    else {
      this.caps[this.capHead] = c;
      this.capHead = (this.capHead + 1) % lim;
    }
  }

  /**
   * Frames seen on one device ("ns/dev") or on every device of a namespace ("ns"), oldest first, from
   * the most recent `captureLimit` frames of the world. A frame that crosses two devices of one
   * namespace appears twice, as with "tcpdump -i any".
   */
  captured(target: CaptureTarget): CapturedFrame[] {
    const { ns, dev } =
      typeof target === 'string' ? (this.nss.has(target) ? { ns: target } : splitTarget(target)) : target;
    const n = this.ns(ns);
    const link = dev === undefined ? null : this.link(n, dev);
    const out: CapturedFrame[] = [];
    const ordered =
      this.capHead === 0
        ? this.caps
        : [...this.caps.slice(this.capHead), ...this.caps.slice(0, this.capHead)];
    for (const c of ordered) {
      if (link ? c.link !== link : c.ns !== ns) continue;
      out.push({ timeUs: c.timeUs, frame: c.frame, dir: c.dir, where: `${c.ns}/${c.dev}` });
    }
    return out;
  }

  pcap(target: CaptureTarget): Buffer {
    return pcapBytes(this.captured(target));
  }

  writePcap(target: CaptureTarget, path: string): number {
    const frames = this.captured(target);
    writeFileSync(path, pcapBytes(frames));
    return frames.length;
  }

  clearCaptures(): void {
    this.caps = [];
    this.capHead = 0;
  }

  // ------------------------------------------------------------ the engine

  private enqueue(dev: Link, frame: Buffer): void {
    this.qDev.push(dev);
    this.qFrame.push(frame);
  }

  /** Delivers queued frames until none are left; then fails unanswered neighbour resolutions. */
  private run(): void {
    for (;;) {
      let budget = MAX_FRAMES_PER_RUN;
      while (this.qHead < this.qDev.length) {
        if (--budget < 0) {
          // Without STP a bridge loop floods forever; stop and say so instead of hanging.
          const dev = this.qDev[this.qHead]!;
          this.rec(
            'drop',
            dev.ns,
            dev,
            'run',
            undefined,
            undefined,
            `more than ${MAX_FRAMES_PER_RUN} frames in one exchange: forwarding loop`,
          );
          this.stats.drops += this.qDev.length - this.qHead - 1;
          break;
        }
        const dev = this.qDev[this.qHead]!;
        const f = this.qFrame[this.qHead]!;
        this.qHead++;
        this.devRx(dev, f);
      }
      this.qDev = [];
      this.qFrame = [];
      this.qHead = 0;
      if (this.pendingNeigh.length === 0) return;
      const pend = this.pendingNeigh;
      this.pendingNeigh = [];
      for (const { dev, entry } of pend) {
        if (entry.state !== 'INCOMPLETE') continue;
        entry.state = 'FAILED';
        entry.updatedUs = this.clockUs;
        const q = entry.queue;
        entry.queue = [];
        for (const p of q) {
          this.rec(
            'drop',
            dev.ns,
            dev,
            `neighbour ${formatIp(entry.ip)} unresolved`,
            p.p,
            p.family,
            'no ARP/NDP reply',
          );
          if (p.forwarded) this.icmpErrorTo(dev.ns, p.p, p.family, 'host-unreachable');
          else
            this.failLocal(
              dev.ns,
              p.p,
              p.family,
              formatIp(this.firstSource(dev.ns, p.family) ?? entry.ip),
              'Destination Host Unreachable',
            );
        }
      }
    }
  }

  private firstSource(ns: Ns, family: Family): IpAddr | null {
    return ns.addrs.find((a) => a.ip.family === family && a.scope !== 'host')?.ip ?? null;
  }

  private tick(): void {
    this.clockUs++;
    this.stats.hops++;
  }

  private devXmit(l: Link, frame: Buffer): void {
    if (!l.up) {
      this.rec('drop', l.ns, l, 'transmit', frame, undefined, 'link down');
      return;
    }
    this.tick();
    this.stats.frames++;
    l.stats.txPackets++;
    l.stats.txBytes += frame.length;
    this.capture(l, frame, 'tx');
    if (this.tr) this.rec('tx', l.ns, l, `${l.kind} transmit`, frame);
    switch (l.kind) {
      case 'loopback':
        this.enqueue(l, frame);
        return;
      case 'veth': {
        const p = l.peer;
        if (!p || !p.up) {
          this.rec('drop', l.ns, l, 'veth transmit', frame, undefined, 'peer down (NO-CARRIER)');
          return;
        }
        this.enqueue(p, frame);
        return;
      }
      case 'bridge':
        this.bridgeForward(l, null, frame);
        return;
      case 'vxlan':
        this.vxlanXmit(l, frame);
        return;
      case 'dummy':
        this.rec('drop', l.ns, l, 'dummy device', frame, undefined, 'dummy devices discard what they send');
        return;
    }
  }

  private devRx(l: Link, frame: Buffer): void {
    if (!l.up || !l.alive) {
      this.rec('drop', l.ns, l, 'receive', frame, undefined, 'link down');
      return;
    }
    this.tick();
    l.stats.rxPackets++;
    l.stats.rxBytes += frame.length;
    this.capture(l, frame, 'rx');
    if (this.tr) this.rec('rx', l.ns, l, `${l.kind} receive`, frame);
    if (l.master) {
      this.bridgeInput(l.master, l, frame);
      return;
    }
    this.netifReceive(l, frame);
  }

  // ---- bridge

  private fdbLookup(br: Link, mk: number): FdbEntry | null {
    const e = br.fdb!.get(mk);
    if (!e) return null;
    if (!e.permanent && this.clockUs - e.updatedUs > br.ageingMs * 1000) {
      br.fdb!.delete(mk);
      if (this.tr) this.rec('fdb', br.ns, br, `entry ${formatMac(macKeyToBytes(mk))} aged out`);
      return null;
    }
    return e;
  }

  private bridgeInput(br: Link, port: Link, frame: Buffer): void {
    if (!br.up) {
      this.rec('drop', br.ns, port, 'bridge input', frame, undefined, `bridge ${br.name} is down`);
      return;
    }
    if (port.port!.learning && !isMulticastMac(frame, 6)) {
      const sk = macKeyAt(frame, 6);
      const cur = br.fdb!.get(sk);
      if (!cur || (!cur.permanent && cur.port !== port)) {
        br.fdb!.set(sk, { port, updatedUs: this.clockUs, permanent: false, local: false });
        if (this.tr) this.rec('fdb', br.ns, br, `learn ${formatMac(frame, 6)} on ${port.name}`);
      } else if (!cur.permanent) cur.updatedUs = this.clockUs;
    }
    this.bridgeForward(br, port, frame);
  }

  /** Forwarding decision for a frame entering the bridge from `ingress` (null: sent by the bridge device). */
  private bridgeForward(br: Link, ingress: Link | null, frame: Buffer): void {
    const mcast = isMulticastMac(frame, 0);
    if (!mcast) {
      const e = this.fdbLookup(br, macKeyAt(frame, 0));
      if (e) {
        if (e.local) {
          if (ingress === null) {
            this.rec(
              'drop',
              br.ns,
              br,
              'bridge transmit',
              frame,
              undefined,
              'destination is the bridge itself',
            );
            return;
          }
          if (this.tr) this.rec('fdb', br.ns, br, `local ${formatMac(frame, 0)} -> up to ${br.name}`);
          this.bridgeLocalIn(br, frame);
          return;
        }
        if (e.port === ingress && !ingress.port!.hairpin) {
          this.rec(
            'drop',
            br.ns,
            ingress,
            'bridge forward',
            frame,
            undefined,
            `destination is behind the ingress port and hairpin is off`,
          );
          return;
        }
        if (ingress && ingress.port!.isolated && e.port.port!.isolated) {
          this.rec('drop', br.ns, ingress, 'bridge forward', frame, undefined, 'both ports are isolated');
          return;
        }
        if (this.tr) this.rec('fdb', br.ns, br, `hit ${formatMac(frame, 0)} -> port ${e.port.name}`);
        this.devXmit(e.port, frame);
        return;
      }
    }
    // Flood: broadcast/multicast, or unknown unicast.
    const out: Link[] = [];
    for (const p of br.ports!) {
      if (p === ingress && !p.port!.hairpin) continue;
      if (mcast ? !p.port!.mcastFlood : !p.port!.flood) continue;
      if (ingress && ingress.port!.isolated && p.port!.isolated) continue;
      out.push(p);
    }
    if (this.tr) {
      this.rec(
        'fdb',
        br.ns,
        br,
        `${mcast ? 'flood' : `miss ${formatMac(frame, 0)}, flood`} to ${out.length ? out.map((p) => p.name).join(',') : '(no ports)'}${mcast && ingress ? ` + ${br.name}` : ''}`,
      );
    }
    for (const p of out) this.devXmit(p, frame);
    if (mcast && ingress) this.bridgeLocalIn(br, frame);
  }

  /** A frame passed up to the bridge device's own stack. */
  private bridgeLocalIn(br: Link, frame: Buffer): void {
    this.tick();
    br.stats.rxPackets++;
    br.stats.rxBytes += frame.length;
    this.capture(br, frame, 'rx');
    if (this.tr) this.rec('rx', br.ns, br, 'bridge receive', frame);
    this.netifReceive(br, frame);
  }

  // ---- vxlan

  private vxlanXmit(l: Link, frame: Buffer): void {
    const fdb = l.vxFdb!;
    let dsts: IpAddr[] | undefined;
    let how: string;
    if (!isMulticastMac(frame, 0)) {
      const e = fdb.get(macKeyAt(frame, 0));
      if (e && (e.permanent || this.clockUs - e.updatedUs <= l.ageingMs * 1000)) {
        dsts = e.dsts;
        how = `fdb hit ${formatMac(frame, 0)} -> ${e.dsts.map(formatIp).join(',')}`;
      } else {
        dsts = fdb.get(0)?.dsts;
        how = `fdb miss ${formatMac(frame, 0)}, default -> ${dsts?.map(formatIp).join(',') ?? '(none)'}`;
      }
    } else {
      dsts = fdb.get(0)?.dsts;
      how = `flood -> ${dsts?.map(formatIp).join(',') ?? '(none)'}`;
    }
    if (!dsts || dsts.length === 0) {
      this.rec(
        'drop',
        l.ns,
        l,
        'vxlan transmit',
        frame,
        undefined,
        `no fdb entry for ${formatMac(frame, 0)} and no default destination`,
      );
      return;
    }
    if (this.tr) this.rec('fdb', l.ns, l, how);
    const ns = l.vxLinkNs ?? l.ns;
    // Entropy for ECMP in the underlay: the source port hashes the inner flow.
    let h = 2166136261;
    for (let i = 0; i < Math.min(frame.length, 14 + 20); i++) h = Math.imul(h ^ frame[i]!, 16777619);
    const sport = 32768 + ((h >>> 0) % (61000 - 32768));
    const payload = Buffer.concat([vxlanHeader(l.vni), frame]);
    for (const dst of dsts) {
      const r = this.resolveRoute(ns, dst.bytes, 0, dst.family);
      if (!r || (r.type !== 'unicast' && r.type !== 'local')) {
        this.rec(
          'drop',
          ns,
          l,
          `vxlan encap to ${formatIp(dst)}`,
          frame,
          undefined,
          'no route to remote VTEP',
        );
        continue;
      }
      const src = l.vxLocal ?? this.selectSource(ns, r, dst.bytes, 0, dst.family);
      if (!src) {
        this.rec('drop', ns, l, 'vxlan encap', frame, undefined, 'no local address for the outer header');
        continue;
      }
      const udp = udpDatagram(sport, l.vxPort, payload);
      let outer: Buffer;
      if (dst.family === 4) {
        outer = ipv4Packet(
          { src: src.bytes, dst: dst.bytes, proto: IPPROTO_UDP, ttl: l.vxTtl, df: false },
          udp,
        );
      } else {
        outer = ipv6Packet(
          { src: src.bytes, dst: dst.bytes, nextHeader: IPPROTO_UDP, hopLimit: l.vxTtl },
          udp,
        );
      }
      if (this.tr)
        this.rec(
          'encap',
          ns,
          l,
          `vxlan vni ${l.vni} ${formatIp(src)}:${sport} -> ${formatIp(dst)}:${l.vxPort}`,
          outer,
          dst.family,
        );
      this.ipRouteOutput(ns, outer, dst.family, r, false, null);
    }
  }

  /** UDP to a VXLAN port on this namespace: decapsulate and hand the inner frame to the vxlan device. */
  private vxlanRcv(ns: Ns, devs: Link[], p: Buffer, family: Family, l4: number, end: number): boolean {
    if (end - l4 < 8 + 8 + 14) {
      this.rec('drop', ns, null, 'vxlan receive', p, family, 'runt VXLAN packet');
      return true;
    }
    const v = l4 + 8;
    if ((p[v]! & 0x08) === 0) {
      this.rec('drop', ns, null, 'vxlan receive', p, family, 'VXLAN I flag not set');
      return true;
    }
    const vni = (p[v + 4]! << 16) | (p[v + 5]! << 8) | p[v + 6]!;
    const l = devs.find((d) => d.vni === vni);
    if (!l) {
      this.rec('drop', ns, null, 'vxlan receive', p, family, `no vxlan device for vni ${vni}`);
      return true;
    }
    const inner = Buffer.from(p.subarray(v + 8, end));
    const srcOff = family === 4 ? 12 : 8;
    if (this.tr) this.rec('decap', ns, l, `vxlan vni ${vni} from ${formatIpBytes(p, srcOff, family)}`, inner);
    if (l.vxLearning && !isMulticastMac(inner, 6)) {
      const mk = macKeyAt(inner, 6);
      const cur = l.vxFdb!.get(mk);
      const srcIp: IpAddr = {
        family,
        bytes: Uint8Array.from(p.subarray(srcOff, srcOff + (family === 4 ? 4 : 16))),
      };
      if (
        !cur ||
        (!cur.permanent && !bytesEqual(cur.dsts[0]!.bytes, 0, srcIp.bytes, 0, srcIp.bytes.length))
      ) {
        l.vxFdb!.set(mk, {
          mac: Uint8Array.from(inner.subarray(6, 12)),
          dsts: [srcIp],
          permanent: false,
          updatedUs: this.clockUs,
        });
        if (this.tr) this.rec('fdb', l.ns, l, `learn ${formatMac(inner, 6)} -> ${formatIp(srcIp)}`);
      } else if (!cur.permanent) cur.updatedUs = this.clockUs;
    }
    this.enqueue(l, inner);
    return true;
  }

  // ---- L2 -> L3

  private netifReceive(l: Link, frame: Buffer): void {
    if (frame.length < 14) {
      this.rec('drop', l.ns, l, 'receive', frame, undefined, 'runt frame');
      return;
    }
    if (l.kind !== 'loopback' && !isMulticastMac(frame, 0) && macKeyAt(frame, 0) !== l.macKey) {
      this.rec(
        'drop',
        l.ns,
        l,
        'receive',
        frame,
        undefined,
        `frame for ${formatMac(frame, 0)} is not addressed to this device`,
      );
      return;
    }
    const type = (frame[12]! << 8) | frame[13]!;
    if (type === ETH_P_ARP) this.arpRcv(l, frame);
    else if (type === ETH_P_IP) this.ipRcv(l, frame, 4);
    else if (type === ETH_P_IPV6) this.ipRcv(l, frame, 6);
    else this.rec('drop', l.ns, l, 'receive', frame, undefined, `unknown ethertype 0x${type.toString(16)}`);
  }

  private arpRcv(l: Link, frame: Buffer): void {
    const ns = l.ns;
    if (
      frame.length < 42 ||
      frame[14] !== 0 ||
      frame[15] !== 1 ||
      frame[16] !== 0x08 ||
      frame[17] !== 0x00 ||
      frame[18] !== 6 ||
      frame[19] !== 4
    ) {
      this.rec('drop', ns, l, 'arp', frame, undefined, 'malformed ARP');
      return;
    }
    const op = (frame[20]! << 8) | frame[21]!;
    const spaKey = ipKeyAt(frame, 28, 4);
    const tpaKey = ipKeyAt(frame, 38, 4);
    if (op === 1) {
      let answer = false;
      let why = '';
      const a = ns.local.get(tpaKey);
      if (a) {
        answer = true;
        if (this.tr) why = `${formatIpBytes(frame, 38, 4)} is local`;
      } else if (l.proxyArp) {
        const r = this.resolveRoute(ns, frame, 38, 4);
        if (r && r.type === 'unicast' && r.dev !== l) {
          answer = true;
          why = `proxy ARP: route via ${r.dev?.name}`;
        }
      }
      if (!answer) {
        if (this.tr)
          this.rec('local', ns, l, `ARP request for ${formatIpBytes(frame, 38, 4)} ignored (not ours)`);
        return;
      }
      const sha = frame.subarray(22, 28);
      // The requester's mapping is learned on the way (as STALE, like the kernel).
      if (spaKey !== 0)
        this.learnNeigh(
          l,
          { family: 4, bytes: Uint8Array.from(frame.subarray(28, 32)) },
          Uint8Array.from(sha),
          'STALE',
          false,
        );
      const reply = arpPacket(2, l.mac, frame.subarray(38, 42), sha, frame.subarray(28, 32));
      const out = ethFrame(sha, l.mac, ETH_P_ARP, reply);
      if (this.tr) this.rec('reply', ns, l, `ARP reply (${why})`, out);
      this.devXmit(l, out);
      return;
    }
    if (op === 2) {
      const e = l.neigh.get(spaKey);
      if (!e) {
        if (this.tr) this.rec('local', ns, l, 'unsolicited ARP reply ignored (arp_accept=0)');
        return;
      }
      this.learnNeigh(l, e.ip, Uint8Array.from(frame.subarray(22, 28)), 'REACHABLE', true);
      return;
    }
    this.rec('drop', ns, l, 'arp', frame, undefined, `ARP op ${op}`);
  }

  private learnNeigh(l: Link, ip: IpAddr, mac: Uint8Array, state: NeighState, confirm: boolean): void {
    const key = ipKey(ip);
    let e = l.neigh.get(key);
    if (e && (e.state === 'PERMANENT' || e.state === 'NOARP')) return;
    if (!e) {
      e = { ip, key, mac, state, updatedUs: this.clockUs, queue: [] };
      l.neigh.set(key, e);
    } else {
      if (!confirm && e.state === 'REACHABLE' && e.mac && bytesEqual(e.mac, 0, mac, 0, 6)) return;
      e.mac = mac;
      e.state = state;
      e.updatedUs = this.clockUs;
    }
    if (this.tr) this.rec('neigh', l.ns, l, `${formatIp(ip)} lladdr ${formatMac(mac)} ${state}`);
    if (e.queue.length) {
      const q = e.queue;
      e.queue = [];
      for (const p of q) this.sendResolved(l, e, p.p, p.family);
    }
  }

  // ---- IP

  private ipRcv(l: Link, frame: Buffer, family: Family): void {
    const ns = l.ns;
    // Copy out of the frame: forwarding and NAT rewrite headers, and captured frames must stay intact.
    const p = Buffer.allocUnsafe(frame.length - 14);
    frame.copy(p, 0, 14);
    if (family === 4) {
      if (
        p.length < 20 ||
        p[0]! >> 4 !== 4 ||
        (p[0]! & 0xf) < 5 ||
        p.readUInt16BE(2) > p.length ||
        inetChecksum(p, 0, (p[0]! & 0xf) * 4) !== 0
      ) {
        this.rec('drop', ns, l, 'ip receive', frame, undefined, 'bad IPv4 header');
        return;
      }
    } else if (p.length < 40 || p[0]! >> 4 !== 6 || 40 + p.readUInt16BE(4) > p.length) {
      this.rec('drop', ns, l, 'ip receive', frame, undefined, 'bad IPv6 header');
      return;
    }
    const len = family === 4 ? p.readUInt16BE(2) : 40 + p.readUInt16BE(4);
    const pkt = len < p.length ? p.subarray(0, len) : p;
    const ct = ns.nat.length || ns.ct.size ? this.natPre(ns, pkt, family, l) : null;
    const dOff = family === 4 ? 16 : 24;
    if (this.isLocalDst(ns, pkt, dOff, family)) {
      this.localDeliver(ns, l, pkt, family, ct);
      return;
    }
    if (family === 6 && pkt[24] === 0xff) {
      this.rec('drop', ns, l, 'ip receive', pkt, family, 'multicast group not joined');
      return;
    }
    if (!(family === 4 ? ns.fwd4 : ns.fwd6)) {
      this.rec(
        'drop',
        ns,
        l,
        'ip receive',
        pkt,
        family,
        `not a local address and forwarding is off (net.${family === 4 ? 'ipv4.ip_forward' : 'ipv6.conf.all.forwarding'}=0)`,
      );
      return;
    }
    const ttlOff = family === 4 ? 8 : 7;
    if (pkt[ttlOff]! <= 1) {
      this.rec('drop', ns, l, 'forward', pkt, family, 'TTL exceeded');
      this.icmpErrorTo(ns, pkt, family, 'ttl');
      return;
    }
    const r = this.resolveRoute(ns, pkt, dOff, family);
    if (!r) {
      this.rec('drop', ns, l, 'route lookup', pkt, family, 'no route to destination');
      this.icmpErrorTo(ns, pkt, family, 'net-unreachable');
      return;
    }
    if (r.type !== 'unicast') {
      this.routeTypeDrop(ns, l, r, pkt, family, true);
      return;
    }
    pkt[ttlOff]!--;
    if (family === 4) refreshChecksums(pkt, 4);
    if (this.tr) this.rec('forward', ns, l, `forward to ${formatIpBytes(pkt, dOff, family)}`, pkt, family);
    this.ipRouteOutput(ns, pkt, family, r, true, ct);
  }

  private routeTypeDrop(
    ns: Ns,
    l: Link | null,
    r: Route,
    pkt: Buffer,
    family: Family,
    sendIcmp: boolean,
  ): void {
    const d = formatPrefix(r.dst);
    this.rec('drop', ns, l, `route ${r.type} ${d}`, pkt, family, `${r.type} route`);
    if (!sendIcmp) return;
    if (r.type === 'unreachable') this.icmpErrorTo(ns, pkt, family, 'host-unreachable');
    else if (r.type === 'prohibit') this.icmpErrorTo(ns, pkt, family, 'prohibited');
  }

  private isLocalDst(ns: Ns, p: Buffer, off: number, family: Family): boolean {
    if (ns.local.has(ipKeyAt(p, off, family))) return true;
    if (family === 4) {
      if (p[off] === 127) return true;
      if (p[off] === 255 && p[off + 1] === 255 && p[off + 2] === 255 && p[off + 3] === 255) return true;
      // Directed broadcast of a local subnet.
      for (const a of ns.addrs) {
        if (a.ip.family !== 4 || a.len >= 31) continue;
        const host = (0xffffffff >>> a.len) >>> 0;
        const k = ipKeyAt(p, off, 4) as number;
        if ((k & host) >>> 0 === host && prefixContains(a.prefix, p, off)) return true;
      }
      return false;
    }
    // Link-scope multicast: all-nodes and solicited-node groups are always joined.
    return p[off] === 0xff && (p[off + 1]! & 0x0f) === 0x02;
  }

  /** After the route is known: NAT POSTROUTING, then neighbour output. */
  private ipRouteOutput(
    ns: Ns,
    p: Buffer,
    family: Family,
    r: Route,
    forwarded: boolean,
    ct: CtRef | null,
  ): void {
    const dOff = family === 4 ? 16 : 24;
    if (this.tr) {
      const via = r.via ? ` via ${formatIp(r.via)}` : '';
      this.rec(
        'route',
        ns,
        r.dev,
        `${r.type === 'local' ? 'local' : formatPrefix(r.dst)}${via} dev ${r.dev?.name ?? '-'} (table ${r.table === RT_TABLE_MAIN ? 'main' : r.table === RT_TABLE_LOCAL ? 'local' : r.table})`,
      );
    }
    const dev = r.dev;
    if (!dev) {
      this.rec('drop', ns, null, 'output', p, family, 'route has no device');
      return;
    }
    if (ct) this.natPost(ns, p, family, dev, ct);
    if (dev.kind === 'loopback') {
      const f = ethFrame(new Uint8Array(6), new Uint8Array(6), family === 4 ? ETH_P_IP : ETH_P_IPV6, p);
      this.devXmit(dev, f);
      return;
    }
    if (!dev.up) {
      this.rec('drop', ns, dev, 'output', p, family, 'link down');
      return;
    }
    const nh = r.via ? r.via.bytes : p;
    const nhOff = r.via ? 0 : dOff;
    // IPv6 multicast maps straight to a 33:33 MAC; no resolution.
    if (family === 6 && nh[nhOff] === 0xff) {
      this.devXmit(dev, ethFrame(multicastMacForIPv6(nh, nhOff), dev.mac, ETH_P_IPV6, p));
      return;
    }
    if (family === 4 && this.isBroadcastOn(dev, nh, nhOff)) {
      this.devXmit(dev, ethFrame(BROADCAST_MAC, dev.mac, ETH_P_IP, p));
      return;
    }
    const key = ipKeyAt(nh, nhOff, family);
    let e = dev.neigh.get(key);
    if (e && e.mac && e.state !== 'INCOMPLETE' && e.state !== 'FAILED') {
      this.sendResolved(dev, e, p, family);
      return;
    }
    if (e && e.state === 'INCOMPLETE') {
      if (e.queue.length < UNRES_QLEN) e.queue.push({ p, family, forwarded });
      return;
    }
    const ip: IpAddr = {
      family,
      bytes: Uint8Array.from(nh.subarray(nhOff, nhOff + (family === 4 ? 4 : 16))),
    };
    e = {
      ip,
      key,
      mac: null,
      state: 'INCOMPLETE',
      updatedUs: this.clockUs,
      queue: [{ p, family, forwarded }],
    };
    dev.neigh.set(key, e);
    this.pendingNeigh.push({ dev, entry: e });
    this.solicit(dev, ip, p, family);
  }

  private isBroadcastOn(dev: Link, b: Uint8Array, off: number): boolean {
    if (b[off] === 255 && b[off + 1] === 255 && b[off + 2] === 255 && b[off + 3] === 255) return true;
    for (const a of dev.ns.addrs) {
      if (a.dev !== dev || a.ip.family !== 4 || a.len >= 31) continue;
      const host = (0xffffffff >>> a.len) >>> 0;
      if (((ipKeyAt(b, off, 4) as number) & host) >>> 0 === host && prefixContains(a.prefix, b, off))
        return true;
    }
    return false;
  }

  private sendResolved(dev: Link, e: NeighEntry, p: Buffer, family: Family): void {
    const f = ethFrame(e.mac!, dev.mac, family === 4 ? ETH_P_IP : ETH_P_IPV6, p);
    this.devXmit(dev, f);
  }

  /** ARP request / neighbour solicitation for `ip` on `dev`; the source comes from the waiting packet. */
  private solicit(dev: Link, ip: IpAddr, p: Buffer, family: Family): void {
    const ns = dev.ns;
    if (family === 4) {
      // Announce the packet's source if it is ours on this device, else the device's primary address.
      let spa: Uint8Array | null = null;
      const sk = ipKeyAt(p, 12, 4);
      const own = ns.local.get(sk);
      if (own && own.dev === dev) spa = own.ip.bytes;
      if (!spa) spa = ns.addrs.find((a) => a.dev === dev && a.ip.family === 4)?.ip.bytes ?? null;
      if (!spa && own) spa = own.ip.bytes;
      if (!spa) spa = new Uint8Array(4);
      const req = arpPacket(1, dev.mac, spa, new Uint8Array(6), ip.bytes);
      const f = ethFrame(BROADCAST_MAC, dev.mac, ETH_P_ARP, req);
      if (this.tr) this.rec('neigh', ns, dev, `resolve ${formatIp(ip)}: ARP who-has`, f);
      this.devXmit(dev, f);
      return;
    }
    let src: Uint8Array | null = null;
    const own = ns.local.get(ipKeyAt(p, 8, 6));
    if (own && own.dev === dev) src = own.ip.bytes;
    if (!src)
      src = ns.addrs.find((a) => a.dev === dev && a.ip.family === 6 && a.scope === 'link')?.ip.bytes ?? null;
    if (!src) src = ns.addrs.find((a) => a.dev === dev && a.ip.family === 6)?.ip.bytes ?? null;
    if (!src) {
      this.rec('drop', ns, dev, 'ndisc', p, family, 'no IPv6 address on the device to solicit from');
      return;
    }
    const sn = solicitedNodeAddr(ip.bytes);
    const pkt = ipv6Packet(
      { src, dst: sn, nextHeader: IPPROTO_ICMPV6, hopLimit: 255 },
      ndpMessage(135, ip.bytes, dev.mac),
    );
    const f = ethFrame(multicastMacForIPv6(sn), dev.mac, ETH_P_IPV6, pkt);
    if (this.tr) this.rec('neigh', ns, dev, `resolve ${formatIp(ip)}: neighbor solicitation`, f);
    this.devXmit(dev, f);
  }

  /** Locally generated packet: OUTPUT NAT, route, POSTROUTING, out. Returns an errno name on refusal. */
  private ipLocalOut(ns: Ns, p: Buffer, family: Family, replyTo?: Link): string | null {
    const ct = ns.nat.length || ns.ct.size ? this.natPre(ns, p, family, null) : null;
    const dOff = family === 4 ? 16 : 24;
    // Replies to link-local / multicast sources leave by the interface the request came in on.
    let r: Route | null;
    if (replyTo && family === 6 && (isLinkLocalV6(p, dOff) || p[dOff] === 0xff)) {
      r = { ...this.resolveRoute(ns, p, dOff, family)!, dev: replyTo, via: null, type: 'unicast' };
      if (!r.dev) return 'ENETUNREACH';
    } else r = this.resolveRoute(ns, p, dOff, family);
    if (!r) {
      this.rec('drop', ns, null, 'route lookup', p, family, 'Network is unreachable');
      return 'ENETUNREACH';
    }
    if (r.type !== 'unicast' && r.type !== 'local') {
      this.routeTypeDrop(ns, null, r, p, family, false);
      return r.type === 'blackhole' ? 'EINVAL' : r.type === 'prohibit' ? 'EACCES' : 'EHOSTUNREACH';
    }
    this.ipRouteOutput(ns, p, family, r, false, ct);
    return null;
  }

  private localDeliver(ns: Ns, l: Link, p: Buffer, family: Family, ct: CtRef | null): void {
    if (ct?.isNew) this.ctConfirm(ns, ct.conn);
    // Replies of a DNATed connection that ends here are de-DNATed on input.
    else if (ct && ct.dir === 'reply' && ct.conn.dnat) {
      const c = ct.conn;
      this.rewrite(p, family, 'src', c.orig.dst, c.orig.dport);
      if (this.tr)
        this.rec(
          'nat',
          ns,
          l,
          `de-DNAT to ${formatIpBytes(c.orig.dst, 0, family)}:${c.orig.dport}`,
          p,
          family,
        );
    }
    const proto = family === 4 ? p[9]! : p[6]!;
    const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
    const end = family === 4 ? p.readUInt16BE(2) : 40 + p.readUInt16BE(4);
    const sOff = family === 4 ? 12 : 8;
    const dOff = family === 4 ? 16 : 24;
    if (this.tr) this.rec('local', ns, l, `deliver to ${ns.name} stack`, p, family);
    if ((proto === IPPROTO_ICMP && family === 4) || (proto === IPPROTO_ICMPV6 && family === 6)) {
      const type = p[l4]!;
      if (type === (family === 4 ? 8 : 128)) {
        if (family === 6 && p[dOff] === 0xff) return;
        // p is this namespace's private copy: turn it around in place (no IPv4 options survive ihl > 5).
        let reply: Buffer;
        if (family === 4 && l4 !== 20) {
          const body = Buffer.from(p.subarray(l4, end));
          body[0] = 0;
          reply = ipv4Packet(
            { src: p.subarray(16, 20), dst: p.subarray(12, 16), proto: IPPROTO_ICMP, ttl: 64, id: 0 },
            body,
          );
        } else {
          reply = p.subarray(0, end);
          const alen = family === 4 ? 4 : 16;
          for (let i = 0; i < alen; i++) {
            const t = reply[sOff + i]!;
            reply[sOff + i] = reply[dOff + i]!;
            reply[dOff + i] = t;
          }
          if (family === 4) {
            reply[8] = 64;
            reply.writeUInt16BE(0, 4);
          } else reply[7] = 64;
          reply[l4] = family === 4 ? 0 : 129;
          refreshChecksums(reply, family);
        }
        if (this.tr) this.rec('reply', ns, l, 'echo reply', reply, family);
        this.ipLocalOut(ns, reply, family, l);
        return;
      }
      if (type === (family === 4 ? 0 : 129)) {
        const s = this.pings.get(`${ns.name}|${p.readUInt16BE(l4 + 4)}`);
        if (s)
          s.replies.push({
            seq: p.readUInt16BE(l4 + 6),
            from: formatIpBytes(p, sOff, family),
            ttl: p[family === 4 ? 8 : 7]!,
          });
        return;
      }
      if (family === 6 && (type === 135 || type === 136)) {
        this.ndiscRcv(ns, l, p, l4, end, type);
        return;
      }
      const isErr = family === 4 ? type === 3 || type === 11 : type === 1 || type === 3;
      if (isErr) {
        this.icmpErrorRcv(ns, p, family, l4, end);
        return;
      }
      return;
    }
    if (proto === IPPROTO_UDP) {
      const dport = p.readUInt16BE(l4 + 2);
      const socks = ns.vxSock.get(dport);
      if (socks?.length && this.vxlanRcv(ns, socks, p, family, l4, end)) return;
      if (this.hasListener(ns, 'udp', dport, p, dOff, family)) {
        if (this.udpProbe && !this.udpProbe.delivered) {
          this.udpProbe.delivered = {
            ns: ns.name,
            from: formatIpBytes(p, sOff, family),
            sport: p.readUInt16BE(l4),
          };
        }
        if (this.tr) this.rec('local', ns, l, `UDP datagram for a listener on port ${dport}`);
        return;
      }
      this.rec('drop', ns, l, `udp port ${dport}`, p, family, 'port unreachable');
      this.icmpErrorTo(ns, p, family, 'port-unreachable');
      return;
    }
    if (proto === IPPROTO_TCP) {
      this.tcpRcv(ns, l, p, family, l4);
      return;
    }
    this.rec('drop', ns, l, 'deliver', p, family, `protocol ${proto} unreachable`);
  }

  private ndiscRcv(ns: Ns, l: Link, p: Buffer, l4: number, end: number, type: number): void {
    if (p[7] !== 255 || end - l4 < 24) {
      this.rec('drop', ns, l, 'ndisc', p, 6, 'invalid neighbour discovery message');
      return;
    }
    const target = Uint8Array.from(p.subarray(l4 + 8, l4 + 24));
    let ll: Uint8Array | null = null;
    for (let o = l4 + 24; o + 8 <= end; ) {
      const olen = p[o + 1]! * 8;
      if (olen === 0) break;
      if ((p[o] === 1 && type === 135) || (p[o] === 2 && type === 136))
        ll = Uint8Array.from(p.subarray(o + 2, o + 8));
      o += olen;
    }
    if (type === 135) {
      const a = ns.local.get(ipKeyAt(target, 0, 6));
      if (!a) {
        if (this.tr)
          this.rec(
            'local',
            ns,
            l,
            `neighbor solicitation for ${formatIpBytes(target, 0, 6)} ignored (not ours)`,
          );
        return;
      }
      const src: IpAddr = { family: 6, bytes: Uint8Array.from(p.subarray(8, 24)) };
      const unspecified = src.bytes.every((x) => x === 0);
      if (ll && !unspecified) this.learnNeigh(l, src, ll, 'STALE', false);
      const dst = unspecified ? Uint8Array.of(0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) : src.bytes;
      const na = ipv6Packet(
        { src: target, dst, nextHeader: IPPROTO_ICMPV6, hopLimit: 255 },
        ndpMessage(136, target, l.mac, { solicited: !unspecified, override: true, router: ns.fwd6 }),
      );
      const dmac = unspecified ? multicastMacForIPv6(dst) : (ll ?? BROADCAST_MAC);
      const f = ethFrame(dmac, l.mac, ETH_P_IPV6, na);
      if (this.tr) this.rec('reply', ns, l, 'neighbor advertisement', f);
      this.devXmit(l, f);
      return;
    }
    const e = l.neigh.get(ipKeyAt(target, 0, 6));
    if (!e || !ll) return;
    this.learnNeigh(l, e.ip, ll, 'REACHABLE', true);
  }

  private icmpErrorRcv(ns: Ns, p: Buffer, family: Family, l4: number, end: number): void {
    const type = p[l4]!;
    const code = p[l4 + 1]!;
    const inner = l4 + 8;
    if (end - inner < (family === 4 ? 28 : 48)) return;
    const innerProto = family === 4 ? p[inner + 9]! : p[inner + 6]!;
    const innerL4 = family === 4 ? inner + (p[inner]! & 0xf) * 4 : inner + 40;
    const from = formatIpBytes(p, family === 4 ? 12 : 8, family);
    let msg: string;
    if (family === 4) {
      msg =
        type === 11
          ? 'Time to live exceeded'
          : ([
              'Destination Net Unreachable',
              'Destination Host Unreachable',
              'Destination Protocol Unreachable',
              'Destination Port Unreachable',
            ][code] ?? (code === 13 ? 'Packet filtered' : `Destination unreachable (code ${code})`));
    } else {
      msg =
        type === 3
          ? 'Time exceeded: Hop limit'
          : ([
              'No route',
              'Administratively prohibited',
              'Beyond scope',
              'Address unreachable',
              'Port unreachable',
            ][code] ?? `Destination unreachable (code ${code})`);
    }
    if (innerProto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
      const s = this.pings.get(`${ns.name}|${p.readUInt16BE(innerL4 + 4)}`);
      if (s) s.errors.push({ seq: p.readUInt16BE(innerL4 + 6), from, message: msg });
      return;
    }
    if (innerProto === IPPROTO_UDP && this.udpProbe && !this.udpProbe.error) {
      this.udpProbe.error = { from, message: msg };
      return;
    }
    if (innerProto === IPPROTO_TCP) {
      const sOff = family === 4 ? 12 : 8;
      const dOff = family === 4 ? 16 : 24;
      const key = `${ns.name}|${formatIpBytes(p, inner + sOff, family)}|${p.readUInt16BE(innerL4)}|${formatIpBytes(p, inner + dOff, family)}|${p.readUInt16BE(innerL4 + 2)}`;
      const s = this.tcps.get(key);
      if (s && s.state === 'syn-sent') s.state = 'unreachable';
    }
  }

  private failLocal(ns: Ns, p: Buffer, family: Family, from: string, message: string): void {
    const proto = family === 4 ? p[9]! : p[6]!;
    const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
    if (proto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
      const s = this.pings.get(`${ns.name}|${p.readUInt16BE(l4 + 4)}`);
      if (s) s.errors.push({ seq: p.readUInt16BE(l4 + 6), from, message });
    } else if (proto === IPPROTO_TCP) {
      const sOff = family === 4 ? 12 : 8;
      const dOff = family === 4 ? 16 : 24;
      const key = `${ns.name}|${formatIpBytes(p, sOff, family)}|${p.readUInt16BE(l4)}|${formatIpBytes(p, dOff, family)}|${p.readUInt16BE(l4 + 2)}`;
      const s = this.tcps.get(key);
      if (s && s.state === 'syn-sent') s.state = 'unreachable';
    }
  }

  /** ICMP error back to the source of `p` (never about ICMP errors, as RFC 1122 requires). */
  private icmpErrorTo(
    ns: Ns,
    p: Buffer,
    family: Family,
    kind: 'net-unreachable' | 'host-unreachable' | 'port-unreachable' | 'prohibited' | 'ttl',
  ): void {
    const proto = family === 4 ? p[9]! : p[6]!;
    const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
    if (proto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
      const t = p[l4]!;
      const isErr = family === 4 ? t !== 0 && t !== 8 : t < 128;
      if (isErr || (family === 6 && (t === 135 || t === 136))) return;
    }
    const sOff = family === 4 ? 12 : 8;
    const srcIp = Uint8Array.from(p.subarray(sOff, sOff + (family === 4 ? 4 : 16)));
    if (srcIp.every((x) => x === 0)) return;
    let type: number;
    let code: number;
    if (family === 4) {
      [type, code] =
        kind === 'ttl'
          ? [11, 0]
          : kind === 'net-unreachable'
            ? [3, 0]
            : kind === 'host-unreachable'
              ? [3, 1]
              : kind === 'port-unreachable'
                ? [3, 3]
                : [3, 13];
    } else {
      [type, code] =
        kind === 'ttl'
          ? [3, 0]
          : kind === 'net-unreachable'
            ? [1, 0]
            : kind === 'host-unreachable'
              ? [1, 3]
              : kind === 'port-unreachable'
                ? [1, 4]
                : [1, 1];
    }
    const r = this.resolveRoute(ns, srcIp, 0, family);
    if (!r || (r.type !== 'unicast' && r.type !== 'local')) return;
    const src = this.selectSource(ns, r, srcIp, 0, family);
    if (!src) return;
    const body = icmpError(type, code, p, family);
    const err =
      family === 4
        ? ipv4Packet({ src: src.bytes, dst: srcIp, proto: IPPROTO_ICMP, ttl: 64 }, body)
        : ipv6Packet({ src: src.bytes, dst: srcIp, nextHeader: IPPROTO_ICMPV6, hopLimit: 64 }, body);
    if (this.tr)
      this.rec('reply', ns, r.dev, `ICMP ${kind} to ${formatIp({ family, bytes: srcIp })}`, err, family);
    this.ipLocalOut(ns, err, family);
  }

  private tcpRcv(ns: Ns, l: Link, p: Buffer, family: Family, l4: number): void {
    const flags = p[l4 + 13]!;
    const sOff = family === 4 ? 12 : 8;
    const dOff = family === 4 ? 16 : 24;
    const sport = p.readUInt16BE(l4);
    const dport = p.readUInt16BE(l4 + 2);
    const seq = p.readUInt32BE(l4 + 4);
    const alen = family === 4 ? 4 : 16;
    const src = Uint8Array.from(p.subarray(dOff, dOff + alen));
    const dst = Uint8Array.from(p.subarray(sOff, sOff + alen));
    const build = (seg: Buffer) =>
      family === 4
        ? ipv4Packet({ src, dst, proto: IPPROTO_TCP, ttl: 64 }, seg)
        : ipv6Packet({ src, dst, nextHeader: IPPROTO_TCP, hopLimit: 64 }, seg);
    // Client side: our connect() gets its answer.
    const key = `${ns.name}|${formatIpBytes(p, dOff, family)}|${dport}|${formatIpBytes(p, sOff, family)}|${sport}`;
    const s = this.tcps.get(key);
    if (s && s.state === 'syn-sent') {
      if ((flags & (TCP_SYN | TCP_ACK)) === (TCP_SYN | TCP_ACK)) {
        s.state = 'established';
        const ack = build(
          tcpSegment({ sport: dport, dport: sport, seq: s.seq + 1, ack: seq + 1, flags: TCP_ACK }),
        );
        if (this.tr) this.rec('reply', ns, l, 'TCP connection established, ACK', ack, family);
        this.ipLocalOut(ns, ack, family, l);
      } else if (flags & TCP_RST) s.state = 'refused';
      return;
    }
    if ((flags & (TCP_SYN | TCP_ACK)) === TCP_SYN) {
      if (this.hasListener(ns, 'tcp', dport, p, dOff, family)) {
        // Deterministic initial sequence number derived from the 4-tuple.
        let h = 2166136261;
        for (const b of key) h = Math.imul(h ^ b.charCodeAt(0), 16777619);
        const synack = build(
          tcpSegment({
            sport: dport,
            dport: sport,
            seq: h >>> 0,
            ack: seq + 1,
            flags: TCP_SYN | TCP_ACK,
            mss: 1460,
          }),
        );
        if (this.tr) this.rec('reply', ns, l, `SYN-ACK from listener on port ${dport}`, synack, family);
        this.ipLocalOut(ns, synack, family, l);
      } else {
        const rst = build(
          tcpSegment({
            sport: dport,
            dport: sport,
            seq: 0,
            ack: seq + 1,
            flags: TCP_RST | TCP_ACK,
            window: 0,
          }),
        );
        if (this.tr) this.rec('reply', ns, l, `RST: nothing listens on port ${dport}`, rst, family);
        this.ipLocalOut(ns, rst, family, l);
      }
      return;
    }
    if (flags & TCP_ACK && this.tr) this.rec('local', ns, l, `TCP ACK on port ${dport}: connection accepted`);
  }

  // ---- NAT / conntrack

  private tupleOf(p: Buffer, family: Family): Tuple | null {
    const proto = family === 4 ? p[9]! : p[6]!;
    const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
    const alen = family === 4 ? 4 : 16;
    const sOff = family === 4 ? 12 : 8;
    const dOff = family === 4 ? 16 : 24;
    let sport: number;
    let dport: number;
    if (proto === IPPROTO_TCP || proto === IPPROTO_UDP) {
      sport = p.readUInt16BE(l4);
      dport = p.readUInt16BE(l4 + 2);
    } else if (proto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
      const t = p[l4]!;
      const echo = family === 4 ? t === 8 || t === 0 : t === 128 || t === 129;
      if (!echo) return null;
      sport = dport = p.readUInt16BE(l4 + 4);
    } else return null;
    return { proto, src: p.subarray(sOff, sOff + alen), sport, dst: p.subarray(dOff, dOff + alen), dport };
  }

  private rewrite(p: Buffer, family: Family, which: 'src' | 'dst', addr: Uint8Array, port: number): void {
    const off = which === 'src' ? (family === 4 ? 12 : 8) : family === 4 ? 16 : 24;
    p.set(addr, off);
    const proto = family === 4 ? p[9]! : p[6]!;
    const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
    if (proto === IPPROTO_TCP || proto === IPPROTO_UDP) p.writeUInt16BE(port, l4 + (which === 'src' ? 0 : 2));
    refreshChecksums(p, family);
  }

  private natPre(ns: Ns, p: Buffer, family: Family, inDev: Link | null): CtRef | null {
    const t = this.tupleOf(p, family);
    if (!t) return null;
    const k = tupleKey(t.proto, t.src, t.sport, t.dst, t.dport);
    const hit = ns.ct.get(k);
    if (hit) {
      const c = hit.conn;
      c.lastUs = this.clockUs;
      if (hit.dir === 'orig' && c.dnat) {
        this.rewrite(p, family, 'dst', c.reply.src, c.reply.sport);
        if (this.tr)
          this.rec(
            'nat',
            ns,
            inDev,
            `DNAT (established) to ${formatIpBytes(c.reply.src, 0, family)}:${c.reply.sport}`,
            p,
            family,
          );
      } else if (hit.dir === 'reply' && c.snat) {
        this.rewrite(p, family, 'dst', c.orig.src, c.orig.sport);
        if (this.tr)
          this.rec(
            'nat',
            ns,
            inDev,
            `de-SNAT to ${formatIpBytes(c.orig.src, 0, family)}:${c.orig.sport}`,
            p,
            family,
          );
      }
      return { conn: c, dir: hit.dir, isNew: false };
    }
    const orig: Tuple = {
      proto: t.proto,
      src: Uint8Array.from(t.src),
      sport: t.sport,
      dst: Uint8Array.from(t.dst),
      dport: t.dport,
    };
    const conn: Conn = {
      family,
      orig,
      reply: { proto: t.proto, src: orig.dst, sport: orig.dport, dst: orig.src, dport: orig.sport },
      dnat: false,
      snat: false,
      confirmed: false,
      lastUs: this.clockUs,
    };
    const protoName = t.proto === IPPROTO_TCP ? 'tcp' : t.proto === IPPROTO_UDP ? 'udp' : null;
    if (protoName) {
      for (const r of ns.nat) {
        if (
          r.rule.type !== 'dnat' ||
          r.family !== family ||
          r.rule.proto !== protoName ||
          r.rule.dport !== t.dport
        )
          continue;
        if (r.dst ? !prefixContains(r.dst, t.dst, 0) : !ns.local.has(ipKeyAt(t.dst, 0, family))) continue;
        if (r.src && !prefixContains(r.src, t.src, 0)) continue;
        if (r.rule.iif !== undefined && inDev?.name !== r.rule.iif) continue;
        if (r.rule.notIif !== undefined && inDev?.name === r.rule.notIif) continue;
        const port = r.toPort ?? t.dport;
        conn.dnat = true;
        conn.reply = { proto: t.proto, src: r.to!.bytes, sport: port, dst: orig.src, dport: orig.sport };
        this.rewrite(p, family, 'dst', r.to!.bytes, port);
        if (this.tr)
          this.rec(
            'nat',
            ns,
            inDev,
            `DNAT rule ${r.id}${r.rule.comment ? ` (${r.rule.comment})` : ''}: ${formatIpBytes(orig.dst, 0, family)}:${orig.dport} -> ${formatIp(r.to!)}:${port}`,
            p,
            family,
          );
        break;
      }
    }
    ns.ct.set(k, { conn, dir: 'orig' });
    return { conn, dir: 'orig', isNew: true };
  }

  private natPost(ns: Ns, p: Buffer, family: Family, out: Link, ref: CtRef): void {
    const c = ref.conn;
    if (!ref.isNew || c.confirmed) {
      if (ref.dir === 'orig' && c.snat) {
        this.rewrite(p, family, 'src', c.reply.dst, c.reply.dport);
        if (this.tr)
          this.rec(
            'nat',
            ns,
            out,
            `SNAT (established) to ${formatIpBytes(c.reply.dst, 0, family)}`,
            p,
            family,
          );
      } else if (ref.dir === 'reply' && c.dnat) {
        this.rewrite(p, family, 'src', c.orig.dst, c.orig.dport);
        if (this.tr)
          this.rec(
            'nat',
            ns,
            out,
            `de-DNAT to ${formatIpBytes(c.orig.dst, 0, family)}:${c.orig.dport}`,
            p,
            family,
          );
      }
      return;
    }
    const sOff = family === 4 ? 12 : 8;
    const dOff = family === 4 ? 16 : 24;
    for (const r of ns.nat) {
      if (r.rule.type === 'dnat') continue;
      if (r.family && r.family !== family) continue;
      if (r.src && !prefixContains(r.src, c.orig.src, 0)) continue;
      if (r.dst && !prefixContains(r.dst, p, dOff)) continue;
      if (r.notDst?.some((x) => x.family === family && prefixContains(x, p, dOff))) continue;
      if (r.rule.outIf !== undefined && r.rule.outIf !== out.name) continue;
      if (r.rule.proto !== undefined && c.orig.proto !== (r.rule.proto === 'tcp' ? IPPROTO_TCP : IPPROTO_UDP))
        continue;
      if (r.rule.dport !== undefined && c.reply.sport !== r.rule.dport) continue;
      let to: Uint8Array | null = null;
      if (r.rule.type === 'snat') to = r.to!.family === family ? r.to!.bytes : null;
      else {
        const a = ns.addrs.find((x) => x.dev === out && x.ip.family === family && x.scope === 'global');
        to = a ? a.ip.bytes : null;
      }
      if (!to) continue;
      if (bytesEqual(to, 0, p, sOff, to.length)) break;
      c.snat = true;
      c.reply = { ...c.reply, dst: Uint8Array.from(to) };
      this.rewrite(p, family, 'src', to, c.reply.dport);
      if (this.tr)
        this.rec(
          'nat',
          ns,
          out,
          `${r.rule.type === 'snat' ? 'SNAT' : 'MASQUERADE'} rule ${r.id}${r.rule.comment ? ` (${r.rule.comment})` : ''}: source -> ${formatIpBytes(to, 0, family)}`,
          p,
          family,
        );
      break;
    }
    this.ctConfirm(ns, c);
  }

  private ctConfirm(ns: Ns, c: Conn): void {
    if (c.confirmed) return;
    c.confirmed = true;
    ns.ct.set(tupleKey(c.reply.proto, c.reply.src, c.reply.sport, c.reply.dst, c.reply.dport), {
      conn: c,
      dir: 'reply',
    });
  }

  // ------------------------------------------------------------ endpoints

  private pickSource(
    ns: Ns,
    dst: IpAddr,
    srcStr: string | undefined,
  ): { src: IpAddr } | { error: { code: string; message: string } } {
    if (srcStr !== undefined) {
      const s = mustParseIp(srcStr, 'source');
      if (s.family !== dst.family)
        throw new NetsimError('EINVAL', `source ${srcStr} and destination differ in family`);
      if (!ns.local.has(ipKey(s)))
        return { error: { code: 'EADDRNOTAVAIL', message: `bind: Cannot assign requested address` } };
      return { src: s };
    }
    const r = this.resolveRoute(ns, dst.bytes, 0, dst.family);
    if (!r) return { error: { code: 'ENETUNREACH', message: 'connect: Network is unreachable' } };
    if (r.type !== 'unicast' && r.type !== 'local') {
      const m: Record<string, [string, string]> = {
        blackhole: ['EINVAL', 'connect: Invalid argument'],
        prohibit: ['EACCES', 'connect: Permission denied'],
        unreachable: ['EHOSTUNREACH', 'connect: No route to host'],
      };
      const [code, message] = m[r.type]!;
      return { error: { code, message } };
    }
    const s = this.selectSource(ns, r, dst.bytes, 0, dst.family);
    if (!s) return { error: { code: 'EADDRNOTAVAIL', message: 'connect: Cannot assign requested address' } };
    return { src: s };
  }

  /**
   * Sends ICMP echo requests from a namespace and runs the network until it is quiet.
   * Virtual time advances one second between requests, as ping(8) paces them.
   */
  ping(fromNs: string, to: string, opts: PingOptions = {}): PingResult {
    const ns = this.ns(fromNs);
    const dst = mustParseIp(to, 'destination');
    const count = opts.count ?? 1;
    if (!Number.isInteger(count) || count < 1 || count > 65535)
      throw new NetsimError('EINVAL', `bad count ${count}`);
    const size = opts.size ?? 56;
    if (!Number.isInteger(size) || size < 0 || size > 65000)
      throw new NetsimError('EINVAL', `bad packet size ${size}`);
    const ttl = opts.ttl ?? 64;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 255) throw new NetsimError('EINVAL', `bad ttl ${ttl}`);
    const trace: Trace = [];
    this.tr = opts.trace === false ? null : trace;
    ns.echoId = (ns.echoId + 1) & 0xffff;
    const id = ns.echoId;
    const session: PingSession = { replies: [], errors: [] };
    const key = `${ns.name}|${id}`;
    this.pings.set(key, session);
    const result: PingResult = {
      reachable: false,
      transmitted: 0,
      received: 0,
      replies: [],
      errors: [],
      trace,
    };
    try {
      const data = echoPayload(size);
      for (let seq = 1; seq <= count; seq++) {
        if (seq > 1) this.advance(1000);
        const s = this.pickSource(ns, dst, opts.src);
        if ('error' in s) {
          result.error = s.error;
          if (this.tr)
            trace.push({
              seq: trace.length + 1,
              timeUs: this.clockUs,
              ns: ns.name,
              dev: null,
              kind: 'drop',
              detail: `ping ${to}`,
              reason: s.error.message,
            });
          break;
        }
        const icmp = icmpEcho(dst.family === 4 ? 8 : 128, id, seq, data);
        const p =
          dst.family === 4
            ? ipv4Packet({ src: s.src.bytes, dst: dst.bytes, proto: IPPROTO_ICMP, ttl, id: seq }, icmp)
            : ipv6Packet(
                { src: s.src.bytes, dst: dst.bytes, nextHeader: IPPROTO_ICMPV6, hopLimit: ttl },
                icmp,
              );
        result.transmitted++;
        const err = this.ipLocalOut(ns, p, dst.family);
        this.run();
        if (err) {
          result.error = { code: err, message: errText(err) };
          break;
        }
      }
    } finally {
      this.tr = null;
      this.pings.delete(key);
    }
    result.replies = session.replies;
    result.errors = session.errors;
    result.received = new Set(session.replies.map((r) => r.seq)).size;
    result.reachable = result.received > 0;
    return result;
  }

  /**
   * Sends one UDP datagram. `delivered` names the namespace whose listener got it (after any NAT);
   * `error` carries an ICMP error that came back (e.g. "Destination Port Unreachable").
   */
  udpSend(
    fromNs: string,
    to: string,
    port: number,
    payload: Uint8Array = new Uint8Array(0),
    opts: SendOptions = {},
  ): UdpSendResult {
    const ns = this.ns(fromNs);
    const dst = mustParseIp(to, 'destination');
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new NetsimError('EINVAL', `bad port ${port}`);
    if (!(payload instanceof Uint8Array) || payload.length > 65000)
      throw new NetsimError('EINVAL', 'bad UDP payload');
    const trace: Trace = [];
    this.tr = opts.trace === false ? null : trace;
    const probe: UdpProbe = {};
    this.udpProbe = probe;
    try {
      const s = this.pickSource(ns, dst, opts.src);
      if ('error' in s)
        return {
          delivered: null,
          local: null,
          error: { code: s.error.code, message: s.error.message.replace('connect: ', 'sendto: ') },
          trace,
        };
      const sport = ns.nextEphemeral;
      ns.nextEphemeral = ns.nextEphemeral >= 60999 ? 32768 : ns.nextEphemeral + 1;
      const udp = udpDatagram(sport, port, payload);
      const p =
        dst.family === 4
          ? ipv4Packet({ src: s.src.bytes, dst: dst.bytes, proto: IPPROTO_UDP, ttl: 64 }, udp)
          : ipv6Packet({ src: s.src.bytes, dst: dst.bytes, nextHeader: IPPROTO_UDP, hopLimit: 64 }, udp);
      const err = this.ipLocalOut(ns, p, dst.family);
      this.run();
      const local = { ip: formatIp(s.src), port: sport };
      if (err)
        return {
          delivered: null,
          local,
          error: { code: err, message: errText(err).replace('connect: ', 'sendto: ') },
          trace,
        };
      const out: UdpSendResult = { delivered: probe.delivered?.ns ?? null, local, trace };
      if (probe.error) out.icmpError = probe.error;
      return out;
    } finally {
      this.tr = null;
      this.udpProbe = null;
    }
  }

  /** A TCP three-way handshake from `fromNs` to `to:port`; the far side answers if something listens. */
  tcpConnect(fromNs: string, to: string, port: number, opts: SendOptions = {}): TcpConnectResult {
    const ns = this.ns(fromNs);
    const dst = mustParseIp(to, 'destination');
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new NetsimError('EINVAL', `bad port ${port}`);
    const trace: Trace = [];
    this.tr = opts.trace === false ? null : trace;
    const remote = { ip: formatIp(dst), port };
    try {
      const s = this.pickSource(ns, dst, opts.src);
      if ('error' in s) {
        return {
          state: s.error.code === 'ENETUNREACH' || s.error.code === 'EHOSTUNREACH' ? 'unreachable' : 'error',
          local: null,
          remote,
          error: s.error,
          trace,
        };
      }
      const sport = ns.nextEphemeral;
      ns.nextEphemeral = ns.nextEphemeral >= 60999 ? 32768 : ns.nextEphemeral + 1;
      const local = { ip: formatIp(s.src), port: sport };
      const key = `${ns.name}|${local.ip}|${sport}|${remote.ip}|${port}`;
      let h = 2166136261;
      for (const c of key) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
      const isn = h >>> 0;
      const session: TcpSession = { state: 'syn-sent', seq: isn };
      this.tcps.set(key, session);
      try {
        const seg = tcpSegment({ sport, dport: port, seq: isn, ack: 0, flags: TCP_SYN, mss: 1460 });
        const p =
          dst.family === 4
            ? ipv4Packet({ src: s.src.bytes, dst: dst.bytes, proto: IPPROTO_TCP, ttl: 64 }, seg)
            : ipv6Packet({ src: s.src.bytes, dst: dst.bytes, nextHeader: IPPROTO_TCP, hopLimit: 64 }, seg);
        const err = this.ipLocalOut(ns, p, dst.family);
        this.run();
        if (err)
          return { state: 'unreachable', local, remote, error: { code: err, message: errText(err) }, trace };
        const st = session.state === 'syn-sent' ? 'timeout' : session.state;
        const out: TcpConnectResult = { state: st, local, remote, trace };
        if (st === 'refused') out.error = { code: 'ECONNREFUSED', message: 'connect: Connection refused' };
        if (st === 'timeout') out.error = { code: 'ETIMEDOUT', message: 'connect: Connection timed out' };
        if (st === 'unreachable') out.error = { code: 'EHOSTUNREACH', message: 'connect: No route to host' };
        return out;
      } finally {
        this.tcps.delete(key);
      }
    } finally {
      this.tr = null;
    }
  }

  // ------------------------------------------------------------ serialization

  toJSON(): WorldJSON {
    const namespaces: NsJSON[] = [];
    for (const ns of this.nss.values()) {
      const links: LinkJSON[] = [...ns.links.values()]
        .sort((a, b) => a.index - b.index)
        .map((l) => {
          const j: LinkJSON = {
            index: l.index,
            name: l.name,
            kind: l.kind,
            mac: formatMac(l.mac),
            mtu: l.mtu,
            up: l.up,
          };
          if (l.master) j.master = l.master.name;
          if (l.port) j.port = { ...l.port };
          if (l.peer) j.peer = { ns: l.peer.ns.name, name: l.peer.name };
          if (l.proxyArp) j.proxyArp = true;
          if (l.promisc) j.promisc = true;
          if (l.mtuSetByUser) j.mtuSetByUser = true;
          if (l.kind === 'bridge') {
            j.ageingMs = l.ageingMs;
            j.fdb = [...l.fdb!]
              .filter(([, e]) => !e.local)
              .map(([k, e]) => ({
                mac: formatMac(macKeyToBytes(k)),
                port: e.port.name,
                permanent: e.permanent,
                updatedUs: e.updatedUs,
              }));
          }
          if (l.kind === 'vxlan') {
            j.vxlan = {
              vni: l.vni,
              port: l.vxPort,
              local: l.vxLocal ? formatIp(l.vxLocal) : null,
              dev: l.vxDev,
              learning: l.vxLearning,
              ttl: l.vxTtl,
              linkNs: l.vxLinkNs?.name ?? ns.name,
              ageingMs: l.ageingMs,
            };
            j.fdb = [...l.vxFdb!.values()].map((e) => ({
              mac: formatMac(e.mac),
              dsts: e.dsts.map(formatIp),
              permanent: e.permanent,
              updatedUs: e.updatedUs,
            }));
          }
          const neigh = [...l.neigh.values()]
            .filter((n) => n.mac && n.state !== 'INCOMPLETE')
            .map((n) => ({
              ip: formatIp(n.ip),
              mac: formatMac(n.mac!),
              state: n.state,
              updatedUs: n.updatedUs,
            }));
          if (neigh.length) j.neigh = neigh;
          return j;
        });
      const routes: RouteJSON[] = [];
      for (const t of ns.tables.values())
        for (const r of [...t.v4, ...t.v6]) routes.push({ ...this.routeInfo(r) });
      namespaces.push({
        name: ns.name,
        nextIfindex: ns.nextIfindex,
        forwarding: { ipv4: ns.fwd4, ipv6: ns.fwd6 },
        links,
        addresses: ns.addrs.map((a) => ({
          dev: a.dev.name,
          cidr: `${formatIp(a.ip)}/${a.len}`,
          scope: a.scope,
        })),
        routes,
        nat: ns.nat.map((r) => ({ id: r.id, rule: structuredClone(r.rule) })),
        natSeq: ns.natSeq,
        sysctls: Object.fromEntries(ns.sysctls),
        listeners: ns.listeners.map((l) => ({ ...l })),
        nextEphemeral: ns.nextEphemeral,
        echoId: ns.echoId,
      });
    }
    return { version: 1, clockUs: this.clockUs, macSeq: this.macSeq, seed: this.seed, namespaces };
  }

  /** Rebuilds a world from `toJSON()` output. Throws EINVAL naming the first inconsistency. */
  static fromJSON(data: unknown, opts: WorldOptions = {}): World {
    const j = data as WorldJSON;
    if (!j || typeof j !== 'object' || j.version !== 1 || !Array.isArray(j.namespaces)) {
      throw new NetsimError('EINVAL', 'not a netsim world (expected {"version":1,"namespaces":[...]})');
    }
    const w = new World({ ...opts, seed: opts.seed ?? j.seed });
    try {
      w.restore(j);
    } catch (e) {
      if (e instanceof NetsimError)
        throw new NetsimError('EINVAL', `inconsistent netsim world: ${e.message}`);
      throw new NetsimError('EINVAL', `inconsistent netsim world: ${(e as Error).message}`);
    }
    return w;
  }

  private restore(j: WorldJSON): void {
    for (const n of j.namespaces) {
      const ns = new Ns(n.name);
      if (!validNsName(n.name) || this.nss.has(n.name))
        throw new NetsimError('EINVAL', `namespace ${n.name}`);
      this.nss.set(n.name, ns);
    }
    // Links first (veth pairs span namespaces), then masters, then addresses and routes.
    const byNs = new Map<string, Map<string, LinkJSON>>();
    for (const n of j.namespaces) {
      const ns = this.nss.get(n.name)!;
      const m = new Map<string, LinkJSON>();
      byNs.set(n.name, m);
      for (const lj of n.links) {
        m.set(lj.name, lj);
        const l = new Link(ns, lj.index, lj.name, lj.kind, mustParseMac(lj.mac), lj.mtu);
        l.up = lj.up;
        l.proxyArp = lj.proxyArp ?? false;
        l.promisc = lj.promisc ?? false;
        l.mtuSetByUser = lj.mtuSetByUser ?? false;
        if (lj.kind === 'bridge') {
          l.ports = new Set();
          l.fdb = new Map([[l.macKey, { port: l, updatedUs: 0, permanent: true, local: true }]]);
          l.ageingMs = lj.ageingMs ?? DEFAULT_AGEING_MS;
        }
        if (lj.kind === 'vxlan') {
          const v = lj.vxlan!;
          l.vni = v.vni;
          l.vxPort = v.port;
          l.vxLocal = v.local ? mustParseIp(v.local) : null;
          l.vxDev = v.dev;
          l.vxLearning = v.learning;
          l.vxTtl = v.ttl;
          l.ageingMs = v.ageingMs ?? DEFAULT_AGEING_MS;
          l.vxFdb = new Map();
          for (const e of lj.fdb ?? []) {
            const mac = mustParseMac(e.mac);
            l.vxFdb.set(macKeyAt(mac, 0), {
              mac,
              dsts: (e.dsts ?? []).map((d) => mustParseIp(d)),
              permanent: e.permanent,
              updatedUs: e.updatedUs,
            });
          }
          registerVxlanPort(v.port);
        }
        for (const nj of lj.neigh ?? []) {
          const ip = mustParseIp(nj.ip);
          l.neigh.set(ipKey(ip), {
            ip,
            key: ipKey(ip),
            mac: mustParseMac(nj.mac),
            state: nj.state,
            updatedUs: nj.updatedUs,
            queue: [],
          });
        }
        if (ns.links.has(l.name)) throw new NetsimError('EEXIST', `link ${l.name} in ${ns.name}`);
        ns.links.set(l.name, l);
      }
      ns.nextIfindex = n.nextIfindex;
    }
    for (const n of j.namespaces) {
      const ns = this.nss.get(n.name)!;
      for (const lj of n.links) {
        const l = ns.links.get(lj.name)!;
        if (lj.peer) {
          const pns = this.nss.get(lj.peer.ns);
          const p = pns?.links.get(lj.peer.name);
          if (!p || p.kind !== 'veth')
            throw new NetsimError(
              'ENODEV',
              `veth peer ${lj.peer.ns}/${lj.peer.name} of ${n.name}/${lj.name}`,
            );
          l.peer = p;
        }
        if (lj.master) {
          const br = ns.links.get(lj.master);
          if (!br || br.kind !== 'bridge')
            throw new NetsimError('ENODEV', `master ${lj.master} of ${lj.name}`);
          l.master = br;
          l.port = {
            hairpin: false,
            learning: true,
            flood: true,
            mcastFlood: true,
            isolated: false,
            ...lj.port,
          };
          br.ports!.add(l);
          br.fdb!.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
        }
        if (lj.kind === 'vxlan') {
          const lns = this.nss.get(lj.vxlan!.linkNs) ?? ns;
          l.vxLinkNs = lns;
          const socks = lns.vxSock.get(l.vxPort) ?? [];
          socks.push(l);
          lns.vxSock.set(l.vxPort, socks);
        }
      }
      for (const lj of n.links) {
        if (lj.kind !== 'bridge') continue;
        const br = ns.links.get(lj.name)!;
        for (const e of lj.fdb ?? []) {
          const port = ns.links.get(e.port!);
          if (!port) throw new NetsimError('ENODEV', `fdb port ${e.port}`);
          br.fdb!.set(macKeyAt(mustParseMac(e.mac), 0), {
            port,
            updatedUs: e.updatedUs,
            permanent: e.permanent,
            local: false,
          });
        }
      }
      ns.fwd4 = !!n.forwarding?.ipv4;
      ns.fwd6 = !!n.forwarding?.ipv6;
      for (const a of n.addresses) {
        const l = ns.links.get(a.dev);
        if (!l) throw new NetsimError('ENODEV', `address device ${a.dev}`);
        const { ip, len } = parseCidr(a.cidr);
        const ad: Addr = { ip, key: ipKey(ip), len, prefix: toPrefix(ip, len), dev: l, scope: a.scope };
        ns.addrs.push(ad);
        if (!ns.local.has(ad.key)) ns.local.set(ad.key, ad);
      }
      for (const r of n.routes) {
        const dev = r.dev === null ? null : (ns.links.get(r.dev) ?? null);
        if (r.dev !== null && !dev) throw new NetsimError('ENODEV', `route device ${r.dev}`);
        const via = r.via === null ? null : mustParseIp(r.via);
        const { ip, len } = parseCidr(r.dst, r.family);
        this.insertRoute(ns, {
          family: r.family,
          dst: toPrefix(ip, len),
          type: r.type,
          dev,
          via,
          onlink: r.onlink,
          src: r.src === null ? null : mustParseIp(r.src),
          metric: r.metric,
          table: r.table,
          proto: r.proto,
          scope: r.scope,
          net4: 0,
          mask4: 0,
        });
      }
      for (const rj of n.nat ?? []) {
        const c = this.compileNat(rj.rule);
        c.id = rj.id;
        ns.nat.push(c);
      }
      ns.natSeq = n.natSeq ?? ns.nat.length;
      ns.sysctls = new Map(Object.entries(n.sysctls ?? {}));
      ns.listeners = (n.listeners ?? []).map((l) => ({ ...l }));
      ns.nextEphemeral = n.nextEphemeral ?? 32768;
      ns.echoId = n.echoId ?? 0;
    }
    this.clockUs = j.clockUs ?? 0;
    this.macSeq = j.macSeq ?? 0;
  }
}

const payloads = new Map<number, Buffer>();
/** ping(8)'s payload pattern; shared per size since packets copy it. */
function echoPayload(size: number): Buffer {
  let b = payloads.get(size);
  if (!b) {
    b = Buffer.alloc(size);
    for (let i = 0; i < size; i++) b[i] = (i + 0x10) & 0xff;
    if (payloads.size < 16) payloads.set(size, b);
  }
  return b;
}

function errText(code: string): string {
  const m: Record<string, string> = {
    ENETUNREACH: 'connect: Network is unreachable',
    EHOSTUNREACH: 'connect: No route to host',
    EINVAL: 'connect: Invalid argument',
    EACCES: 'connect: Permission denied',
  };
  return m[code] ?? code;
}

function splitTarget(s: string): { ns: string; dev?: string } {
  const i = s.lastIndexOf('/');
  return i < 0 ? { ns: s } : { ns: s.slice(0, i), dev: s.slice(i + 1) };
}

// ---------------------------------------------------------------- JSON shapes

export interface LinkJSON {
  index: number;
  name: string;
  kind: LinkKind;
  mac: string;
  mtu: number;
  up: boolean;
  master?: string;
  port?: PortFlags;
  peer?: { ns: string; name: string };
  proxyArp?: boolean;
  promisc?: boolean;
  mtuSetByUser?: boolean;
  ageingMs?: number;
  vxlan?: {
    vni: number;
    port: number;
    local: string | null;
    dev: string | null;
    learning: boolean;
    ttl: number;
    linkNs: string;
    ageingMs?: number;
  };
  fdb?: { mac: string; port?: string; dsts?: string[]; permanent: boolean; updatedUs: number }[];
  neigh?: { ip: string; mac: string; state: NeighState; updatedUs: number }[];
}

export type RouteJSON = RouteInfo;

export interface NsJSON {
  name: string;
  nextIfindex: number;
  forwarding: { ipv4: boolean; ipv6: boolean };
  links: LinkJSON[];
  addresses: { dev: string; cidr: string; scope: 'global' | 'link' | 'host' }[];
  routes: RouteJSON[];
  nat: NatRuleInfo[];
  natSeq: number;
  sysctls?: Record<string, string>;
  listeners: Listener[];
  nextEphemeral: number;
  echoId: number;
}

export interface WorldJSON {
  version: 1;
  clockUs: number;
  macSeq: number;
  seed: number;
  namespaces: NsJSON[];
}
