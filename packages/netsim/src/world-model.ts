// The internal model of the simulated datapath: devices, addresses, routes, neighbour and FDB entries,
// connection-tracking tuples and the per-namespace tables. Plain data shared by the world-*.ts modules;
// none of it is part of the package's public surface.
import { type Family, type IpAddr, type IpKey, type Prefix } from '@kemu/ip';
import { macKeyAt } from './addr.js';
import { Netfilter } from './nf-table.js';
import { VXLAN_PORT } from './packet.js';
import type { LinkKind, Listener, NatRule, NeighState, RouteType } from './types.js';

export const RT_TABLE_MAIN = 254;
export const RT_TABLE_LOCAL = 255;
export const DEFAULT_AGEING_MS = 300_000;

export interface FdbEntry {
  port: Link;
  updatedUs: number;
  permanent: boolean;
  local: boolean;
}

export interface VxFdbEntry {
  mac: Uint8Array;
  dsts: IpAddr[];
  permanent: boolean;
  updatedUs: number;
}

export interface QueuedPacket {
  p: Buffer;
  family: Family;
  /** Forwarded packets get an ICMP "host unreachable" back when resolution fails. */
  forwarded: boolean;
}

export interface NeighEntry {
  ip: IpAddr;
  key: IpKey;
  mac: Uint8Array | null;
  state: NeighState;
  updatedUs: number;
  queue: QueuedPacket[];
}

export interface Addr {
  ip: IpAddr;
  key: IpKey;
  len: number;
  /** The address's subnet, precomputed for the per-packet checks. */
  prefix: Prefix;
  dev: Link;
  scope: 'global' | 'link' | 'host';
}

export interface Route {
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

export interface RouteTable {
  v4: Route[];
  v6: Route[];
}

export interface PortFlags {
  hairpin: boolean;
  learning: boolean;
  flood: boolean;
  mcastFlood: boolean;
  isolated: boolean;
}

export class Link {
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
  private neighTable: Map<IpKey, NeighEntry> | null = null;
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

  /** The neighbour table, made on first use: most devices of a large world never resolve an address. */
  get neigh(): Map<IpKey, NeighEntry> {
    return (this.neighTable ??= new Map());
  }

  /** The neighbour table if one was ever made, for readers that must not make one. */
  get neighIfAny(): Map<IpKey, NeighEntry> | null {
    return this.neighTable;
  }

  /** Operational state: a veth only passes traffic when both ends are up. */
  get carrier(): boolean {
    if (!this.up) return false;
    if (this.kind === 'veth') return this.peer !== null && this.peer.up;
    return true;
  }
}

export interface CompiledNat {
  id: number;
  rule: NatRule;
  family: Family | 0;
  dst?: Prefix;
  src?: Prefix;
  notDst?: Prefix[];
  to?: IpAddr;
  toPort?: number;
}

export interface Tuple {
  proto: number;
  src: Uint8Array;
  sport: number;
  dst: Uint8Array;
  dport: number;
}

export interface Conn {
  family: Family;
  orig: Tuple;
  reply: Tuple;
  dnat: boolean;
  snat: boolean;
  confirmed: boolean;
  /** Virtual time of the last packet, for conntrack timeouts. */
  lastUs: number;
}

export interface CtRef {
  conn: Conn;
  dir: 'orig' | 'reply';
  isNew: boolean;
}

export class Ns {
  readonly name: string;
  links = new Map<string, Link>();
  local = new Map<IpKey, Addr>();
  addrs: Addr[] = [];
  tables = new Map<number, RouteTable>();
  fwd4 = false;
  fwd6 = false;
  nat: CompiledNat[] = [];
  natSeq = 0;
  listeners: Listener[] = [];
  nextEphemeral = 32768;
  nextIfindex = 1;
  echoId = 0;
  // The tables below are made on first use: a world of 150,000 pod namespaces, most of which never get a
  // rule, a sysctl, a tracked connection or a VXLAN socket, would otherwise hold some twenty empty
  // containers per namespace for the garbage collector to walk.
  private nfState: Netfilter | null = null;
  private sysctlTable: Map<string, string> | null = null;
  private ctTable: Map<string, { conn: Conn; dir: 'orig' | 'reply' }> | null = null;
  private vxSockTable: Map<number, Link[]> | null = null;

  constructor(name: string) {
    this.name = name;
  }

  /** iptables-style tables and nftables-style maps (world-netfilter.ts runs them). */
  get nf(): Netfilter {
    return (this.nfState ??= new Netfilter());
  }

  /** The rule set if one was ever made here, for readers that must not make one. */
  get nfIfAny(): Netfilter | null {
    return this.nfState;
  }

  get sysctls(): Map<string, string> {
    return (this.sysctlTable ??= new Map());
  }

  /** The sysctls if any was ever set here, for readers that must not make the table. */
  get sysctlsIfAny(): Map<string, string> | null {
    return this.sysctlTable;
  }

  /** Connection tracking: tuple key to connection and direction. */
  get ct(): Map<string, { conn: Conn; dir: 'orig' | 'reply' }> {
    return (this.ctTable ??= new Map());
  }

  /** Whether any connection is tracked here (without making the table). */
  get tracksConnections(): boolean {
    return this.ctTable !== null && this.ctTable.size > 0;
  }

  /** VXLAN devices listening in this namespace, by UDP port. */
  get vxSock(): Map<number, Link[]> {
    return (this.vxSockTable ??= new Map());
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

/** The ICMP errors the stack sends (icmp_send's type/code pairs, named). */
export type IcmpErrorKind =
  | 'net-unreachable'
  | 'host-unreachable'
  | 'port-unreachable'
  | 'prohibited'
  | 'ttl';

export const NAME_RE = /^[^\s/:]{1,15}$/;

export function validIfname(name: unknown): name is string {
  return typeof name === 'string' && NAME_RE.test(name) && name !== '.' && name !== '..';
}

export function validNsName(name: unknown): name is string {
  return (
    typeof name === 'string' &&
    name.length > 0 &&
    name.length <= 255 &&
    !name.includes('\0') &&
    name !== '.' &&
    name !== '..'
  );
}
