/**
 * The Datapath: everything a CNI plugin (or the overlay / BGP route programmer) does to the network goes
 * through this interface, so the same plugin code runs against the Linux kernel (`datapath-linux.ts`) or
 * against a simulated network (`datapath-sim.ts`, built on @kemu/netsim).
 *
 * Conventions every implementation follows:
 * - Every operation names the network namespace it acts in with a {@link NetnsRef}: {@link HOST_NETNS}
 *   for the node's namespace, or the container's netns path exactly as given in CNI_NETNS.
 * - Failures are thrown as {@link DatapathError} carrying an errno-style `code` (ENOENT when a netns,
 *   link, address or route does not exist; EEXIST when it already does; EINVAL for a bad argument;
 *   EBUSY, EPERM, ...). The CNI skeleton maps these codes to CNI error codes in one place.
 * - Deletes of things that are already gone throw ENOENT; callers that want idempotence catch it
 *   (see {@link ignoreNotFound}).
 * - Addresses are CIDR strings (`10.22.0.5/16`, `fd00::5/64`); IPs are plain strings; MACs are lower-case
 *   colon-separated.
 */

/** A network namespace: {@link HOST_NETNS} or an absolute netns path such as `/var/run/netns/pod-1`. */
export type NetnsRef = string;

/** The node's own ("host") network namespace. */
export const HOST_NETNS: NetnsRef = 'host';

export type DatapathErrorCode =
  | 'ENOENT'
  | 'EEXIST'
  | 'EINVAL'
  | 'EBUSY'
  | 'EPERM'
  | 'ENOTSUP'
  | 'ENODEV'
  | 'EADDRINUSE'
  | 'ETIMEDOUT'
  | 'EIO';

export class DatapathError extends Error {
  override readonly name = 'DatapathError';
  constructor(
    readonly code: DatapathErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Recognises a DatapathError by its shape, not its class: a plugin executable bundles its own copy of this
 * module, so an error thrown by the datapath of another copy must still be understood (errors are data).
 */
export function isDatapathError(e: unknown, code?: DatapathErrorCode): e is DatapathError {
  const shaped =
    e instanceof DatapathError ||
    (e instanceof Error && e.name === 'DatapathError' && typeof (e as { code?: unknown }).code === 'string');
  return shaped && (code === undefined || (e as DatapathError).code === code);
}

/** Runs `fn`, returning `undefined` instead of throwing when the target does not exist (ENOENT/ENODEV). */
export async function ignoreNotFound<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (e) {
    if (isDatapathError(e, 'ENOENT') || isDatapathError(e, 'ENODEV')) return undefined;
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Links

export type LinkKind = 'loopback' | 'device' | 'bridge' | 'veth' | 'vxlan' | 'dummy' | 'other';

export interface LinkInfo {
  name: string;
  index: number;
  kind: LinkKind;
  mac: string;
  mtu: number;
  up: boolean;
  /** Name of the bridge this link is enslaved to, if any. */
  master?: string;
  promisc?: boolean;
  /** Bridge port hairpin mode (only meaningful when `master` is set). */
  hairpin?: boolean;
  /** veth only: interface index of the peer (in whatever netns it lives). */
  peerIndex?: number;
  vxlan?: VxlanParams;
  bridge?: BridgeParams;
}

export interface BridgeParams {
  vlanFiltering?: boolean;
}

export interface VxlanParams {
  vni: number;
  /** UDP destination port; Linux's IANA default is 4789. */
  port?: number;
  /** Local tunnel source address. */
  local?: string;
  /** Underlay device name. */
  dev?: string;
  /** Kernel MAC learning on the VXLAN device (Flannel-style overlays turn it off and program FDB). */
  learning?: boolean;
}

/** What to create. veth creates both ends; `peer.netns` places the peer directly in another namespace. */
export type LinkSpec =
  | { kind: 'bridge'; name: string; mtu?: number; mac?: string; up?: boolean; bridge?: BridgeParams }
  | { kind: 'dummy'; name: string; mtu?: number; mac?: string; up?: boolean }
  | {
      kind: 'veth';
      name: string;
      mtu?: number;
      mac?: string;
      up?: boolean;
      peer: { name: string; netns: NetnsRef; mac?: string };
    }
  | { kind: 'vxlan'; name: string; mtu?: number; mac?: string; up?: boolean; vxlan: VxlanParams };

export interface LinkChanges {
  up?: boolean;
  mtu?: number;
  mac?: string;
  /** Enslave to this bridge; `null` releases it. */
  master?: string | null;
  promisc?: boolean;
  /** Bridge port hairpin mode; the link must be enslaved. */
  hairpin?: boolean;
  /** Rename the link. */
  name?: string;
  /** Move the link into another namespace (applied last, after the other changes). */
  netns?: NetnsRef;
}

// ---------------------------------------------------------------------------------------------------------
// Addresses, routes, neighbours, FDB

export interface AddrInfo {
  /** Link name the address is on. */
  link: string;
  /** CIDR, e.g. `10.22.0.5/16`. */
  cidr: string;
  family: 4 | 6;
  scope?: 'global' | 'link' | 'host';
}

export type RouteType = 'unicast' | 'blackhole' | 'unreachable' | 'prohibit' | 'local';

export interface RouteSpec {
  /** Destination CIDR; `0.0.0.0/0` / `::/0` for a default route. */
  dst: string;
  /** Next hop; omitted for a directly connected (or blackhole) route. */
  via?: string;
  /** Output device. */
  dev?: string;
  /** Routing table id; defaults to main (254). */
  table?: number;
  type?: RouteType;
  /** Treat `via` as directly reachable on `dev` even if no address covers it (overlay routes). */
  onlink?: boolean;
  metric?: number;
  /** Preferred source address. */
  src?: string;
  scope?: 'global' | 'link' | 'host';
  /** Originating protocol tag (e.g. 'kernel', 'boot', 'static', 'bgp'); informational. */
  protocol?: string;
}

export type RouteInfo = RouteSpec & { family: 4 | 6 };

export interface NeighSpec {
  ip: string;
  mac: string;
  dev: string;
  /** Permanent entries are never aged out (what overlays program). */
  permanent?: boolean;
}

export interface FdbSpec {
  mac: string;
  dev: string;
  /** VXLAN: remote VTEP address for this MAC. */
  dst?: string;
  /** Bridge this entry lives in (when `dev` is a bridge port). */
  master?: string;
  permanent?: boolean;
}

// ---------------------------------------------------------------------------------------------------------
// NAT: a small structured model, not iptables text. Each rule belongs to an `owner` (e.g. a chain id
// derived from network name + container id), so a DEL removes exactly what its ADD installed.

export interface MasqueradeRule {
  kind: 'masquerade';
  owner: string;
  /** Source range to masquerade (the pod's IP as /32 or /128, or a pod CIDR). */
  src: string;
  /** Do not masquerade traffic to these destinations (the pod's own network, multicast). */
  excludeDst?: string[];
  /** Free-form tag for humans (`name: "bridge" id: "..."`). */
  comment?: string;
}

export interface DnatRule {
  kind: 'dnat';
  owner: string;
  protocol: 'tcp' | 'udp' | 'sctp';
  hostPort: number;
  /** Only match traffic to this host IP; omitted = any local address. */
  hostIP?: string;
  /** Where to send it. */
  toIP: string;
  toPort: number;
  /** Also masquerade the hairpin / localhost case so replies return through the node (portmap `snat`). */
  snat?: boolean;
  /**
   * With `snat`: sources whose connections to the host port are masqueraded (the pod's network, as the
   * reference portmap marks them, so another pod's replies also come back through the node); default `toIP`.
   */
  masqSrc?: string;
  /** Restrict to these extra conditions, e.g. input interface (`iifname`) or source CIDR. */
  conditions?: { iif?: string; notIif?: string; srcCidr?: string }[];
  comment?: string;
}

export type NatRule = MasqueradeRule | DnatRule;

// ---------------------------------------------------------------------------------------------------------

export interface Datapath {
  /** 'linux', 'sim', 'memory', ... — for logs and error messages. */
  readonly kind: string;

  /**
   * Whether the namespace exists (for CNI DEL after the netns is gone, CHECK, STATUS); EINVAL when the path
   * names something that is not a network namespace.
   */
  netnsExists(netns: NetnsRef): Promise<boolean>;

  getLink(netns: NetnsRef, name: string): Promise<LinkInfo | undefined>;
  listLinks(netns: NetnsRef): Promise<LinkInfo[]>;
  /** Creates a link; EEXIST if the name is taken (for veth: either end). Returns the (host-side) link. */
  addLink(netns: NetnsRef, spec: LinkSpec): Promise<LinkInfo>;
  setLink(netns: NetnsRef, name: string, changes: LinkChanges): Promise<void>;
  /** Deletes a link (a veth takes its peer with it); ENOENT if absent. */
  delLink(netns: NetnsRef, name: string): Promise<void>;

  listAddrs(netns: NetnsRef, link?: string): Promise<AddrInfo[]>;
  /** EEXIST if the same address is already on the link. */
  addAddr(netns: NetnsRef, link: string, cidr: string): Promise<void>;
  delAddr(netns: NetnsRef, link: string, cidr: string): Promise<void>;

  listRoutes(netns: NetnsRef, filter?: { table?: number; dev?: string; family?: 4 | 6 }): Promise<RouteInfo[]>;
  /** EEXIST if an equal route exists, unless `replace` is set. */
  addRoute(netns: NetnsRef, route: RouteSpec, opts?: { replace?: boolean }): Promise<void>;
  delRoute(netns: NetnsRef, route: RouteSpec): Promise<void>;

  listNeighs(netns: NetnsRef, dev?: string): Promise<NeighSpec[]>;
  /** Adds or replaces. */
  setNeigh(netns: NetnsRef, neigh: NeighSpec): Promise<void>;
  delNeigh(netns: NetnsRef, neigh: Pick<NeighSpec, 'ip' | 'dev'>): Promise<void>;

  listFdb(netns: NetnsRef, dev?: string): Promise<FdbSpec[]>;
  /** Adds or replaces. */
  setFdb(netns: NetnsRef, entry: FdbSpec): Promise<void>;
  delFdb(netns: NetnsRef, entry: Pick<FdbSpec, 'mac' | 'dev' | 'dst'>): Promise<void>;

  /** Sysctl by dotted key, e.g. `net.ipv4.ip_forward`, `net.ipv4.conf.eth0.arp_notify`. */
  getSysctl(netns: NetnsRef, key: string): Promise<string>;
  setSysctl(netns: NetnsRef, key: string, value: string): Promise<void>;

  /** Installs the rules (idempotent: rules already present for the owner are replaced). */
  addNatRules(netns: NetnsRef, rules: NatRule[]): Promise<void>;
  /**
   * Removes every rule of this owner; no error if there are none (DEL must be idempotent). `families`, when
   * the caller knows them (its ADD's result), are the only address families the owner's rules can be in:
   * a datapath may leave the others unread (on Linux, each family read is an iptables process).
   */
  delNatRules(netns: NetnsRef, owner: string, opts?: { families?: readonly (4 | 6)[] }): Promise<void>;
  listNatRules(netns: NetnsRef, owner?: string): Promise<NatRule[]>;

  /**
   * Optional: drop per-namespace resources (e.g. a cached socket that pins the namespace) once the caller
   * has no operation on `netns` in flight. The in-process invoker calls it after each plugin call.
   */
  releaseNetns?(netns: NetnsRef): void;

  /** Releases sockets / helper processes. */
  close?(): Promise<void>;
}

/** Options a Datapath factory may receive. `sim` implementations take `statePath`. */
export interface DatapathOptions {
  /**
   * The netns path that stands for {@link HOST_NETNS}. Default: the calling process's own namespace.
   * Tests set this to a throwaway namespace so the real node stays untouched.
   */
  hostNetns?: string;
  /** State file of a simulated network (`KEMU_NETSIM_STATE`). */
  statePath?: string;
}
