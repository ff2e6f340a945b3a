// Public shapes of the model: what callers pass in and what listings return. Plain data, JSON-safe.

export type LinkKind = 'loopback' | 'veth' | 'bridge' | 'vxlan' | 'dummy';

export interface VethSpec {
  kind: 'veth';
  name: string;
  mac?: string;
  mtu?: number;
  /** The other end; created in `peer.ns` (default: the same namespace). */
  peer: { name: string; ns?: string; mac?: string };
}

export interface BridgeSpec {
  kind: 'bridge';
  name: string;
  mac?: string;
  mtu?: number;
  /** FDB ageing time in milliseconds (kernel default 300 s). */
  ageingMs?: number;
}

export interface VxlanSpec {
  kind: 'vxlan';
  name: string;
  vni: number;
  /** UDP destination port (default 4789, the IANA port). */
  port?: number;
  /** Local VTEP address used as the outer source. */
  local?: string;
  /** Underlay device (sets the default MTU to its MTU minus 50). */
  dev?: string;
  learning?: boolean;
  ttl?: number;
  mac?: string;
  mtu?: number;
}

export interface DummySpec {
  kind: 'dummy';
  name: string;
  mac?: string;
  mtu?: number;
}

export type LinkSpec = VethSpec | BridgeSpec | VxlanSpec | DummySpec;

export interface LinkChange {
  up?: boolean;
  mtu?: number;
  mac?: string;
  /** Enslave to a bridge, or `null` to release. */
  master?: string | null;
  /** Rename. */
  name?: string;
  /** Move to another namespace (addresses and routes are flushed, the link goes down, as in Linux). */
  netns?: string;
  // bridge port flags (bridge link set ...)
  hairpin?: boolean;
  learning?: boolean;
  flood?: boolean;
  mcastFlood?: boolean;
  isolated?: boolean;
  /** Promiscuous mode flag (reported; the bridge already sees every frame). */
  promisc?: boolean;
  // per-device sysctls
  proxyArp?: boolean;
  // bridge / vxlan attributes
  ageingMs?: number;
}

export interface LinkInfo {
  index: number;
  name: string;
  kind: LinkKind;
  mac: string;
  mtu: number;
  up: boolean;
  /** Operationally up: admin up and, for a veth, the peer admin up. */
  carrier: boolean;
  master: string | null;
  peer?: { ns: string; name: string };
  port?: { hairpin: boolean; learning: boolean; flood: boolean; mcastFlood: boolean; isolated: boolean };
  proxyArp: boolean;
  promisc: boolean;
  bridge?: { ageingMs: number };
  vxlan?: {
    vni: number;
    port: number;
    local: string | null;
    dev: string | null;
    learning: boolean;
    ttl: number;
  };
  stats: { rxPackets: number; txPackets: number; rxBytes: number; txBytes: number; dropped: number };
}

export interface AddressInfo {
  dev: string;
  /** "10.0.0.2/24" */
  cidr: string;
  address: string;
  prefixLen: number;
  family: 4 | 6;
  scope: 'global' | 'link' | 'host';
}

export type RouteType = 'unicast' | 'blackhole' | 'unreachable' | 'prohibit' | 'local';

export interface RouteSpec {
  /** "10.1.0.0/16", "fd00::/64" or "default" (with `family`). */
  dst: string;
  family?: 4 | 6;
  via?: string;
  dev?: string;
  onlink?: boolean;
  type?: RouteType;
  table?: number;
  src?: string;
  metric?: number;
  proto?: string;
  scope?: 'global' | 'link' | 'host';
}

export interface RouteInfo {
  family: 4 | 6;
  dst: string;
  type: RouteType;
  via: string | null;
  dev: string | null;
  onlink: boolean;
  src: string | null;
  metric: number;
  table: number;
  proto: string;
  scope: 'global' | 'link' | 'host';
}

export type NeighState = 'PERMANENT' | 'NOARP' | 'REACHABLE' | 'STALE' | 'INCOMPLETE' | 'FAILED';

export interface NeighSpec {
  dev: string;
  ip: string;
  mac: string;
  state?: 'PERMANENT' | 'REACHABLE' | 'STALE' | 'NOARP';
}

export interface NeighInfo {
  dev: string;
  ip: string;
  family: 4 | 6;
  mac: string | null;
  state: NeighState;
}

export interface FdbSpec {
  mac: string;
  /** VXLAN only: remote VTEP address. */
  dst?: string;
  /** Bridge only: the port the MAC lives behind (defaults to the device given). */
  permanent?: boolean;
}

export interface FdbInfo {
  mac: string;
  /** Bridge port or VXLAN device name. */
  dev: string;
  dst: string | null;
  /** Entry lives on a bridge as "master"; vxlan entries are "self". */
  master: string | null;
  permanent: boolean;
  local: boolean;
  /** Milliseconds since last seen (learned entries). */
  ageMs: number | null;
}

export interface DnatRule {
  type: 'dnat';
  proto: 'tcp' | 'udp';
  dport: number;
  /** Destination to match; default: any address local to the namespace (addrtype LOCAL). */
  dst?: string;
  /** "ip" or "ip:port" / "[v6]:port". */
  to: string;
  /** Only packets from this source range. */
  src?: string;
  /** Only packets that arrived on this device (never locally generated ones). */
  iif?: string;
  /** Not packets that arrived on this device. */
  notIif?: string;
  comment?: string;
  /** Groups rules so a caller can remove what it installed (`deleteNatRules(ns, {owner})`). */
  owner?: string;
}

export interface SnatRule {
  type: 'snat' | 'masquerade';
  family?: 4 | 6;
  src?: string;
  dst?: string;
  /** Destinations excluded (CNI "! -d podCIDR"). */
  notDst?: string[];
  outIf?: string;
  /** SNAT only: address to rewrite the source to. */
  to?: string;
  /** Only this protocol / destination port (after DNAT). */
  proto?: 'tcp' | 'udp';
  dport?: number;
  comment?: string;
  owner?: string;
}

export type NatRule = DnatRule | SnatRule;

export interface NatRuleInfo {
  id: number;
  rule: NatRule;
}

export interface Listener {
  proto: 'tcp' | 'udp';
  port: number;
  /** Bind address; default any. */
  ip?: string;
}
