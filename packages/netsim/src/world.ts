// The simulated datapath. A World holds network namespaces; each frame is real bytes and is processed the
// way the Linux stack would: device transmit/receive, bridge FDB, VXLAN encap/decap, IP routing with
// longest-prefix match, ARP/NDP neighbour resolution, netfilter-style NAT with connection tracking.
// Processing is a FIFO of frame deliveries driven to quiescence, so results are deterministic.
//
// This class is the façade: the public calls, each handed to the subsystem module that owns it
// (world-*.ts), all of them working on one WorldState.
import type { Family } from '@kemu/ip';
import { NetsimError } from './errors.js';
import type { CapturedFrame } from './pcap.js';
import type {
  AddressInfo,
  FdbInfo,
  FdbSpec,
  LinkChange,
  LinkInfo,
  LinkSpec,
  Listener,
  NatRule,
  NatRuleInfo,
  NeighInfo,
  NeighSpec,
  RouteInfo,
  RouteSpec,
} from './types.js';
import type { CaptureTarget } from './world-capture.js';
import type { WorldJSON } from './world-persist.js';
import type {
  PingOptions,
  PingResult,
  SendOptions,
  TcpConnectResult,
  UdpExchangeResult,
  UdpSendResult,
} from './world-results.js';
import type { UdpAnswer } from './world-udp-answer.js';
import { stack } from './world-stack.js';
import { nsByName, WorldState } from './world-state.js';
import * as bridge from './world-bridge.js';
import * as captures from './world-capture.js';
import * as clock from './world-clock.js';
import * as ct from './world-conntrack.js';
import * as fib from './world-fib.js';
import * as ifaddr from './world-ifaddr.js';
import * as l4 from './world-l4.js';
import * as link from './world-link.js';
import * as nat from './world-nat.js';
import * as nf from './nf-table.js';
import { type NftFamily, nftApply, nftList } from './nf-nft-table.js';
import type { NfTableName } from './nf-rule.js';
import * as neighbour from './world-neighbour.js';
import * as netns from './world-netns.js';
import * as persist from './world-persist.js';
import * as sysctl from './world-sysctl.js';

export { RT_TABLE_LOCAL, RT_TABLE_MAIN } from './world-model.js';
export type { CaptureTarget } from './world-capture.js';
export type {
  PingError,
  PingOptions,
  PingReply,
  PingResult,
  SendOptions,
  TcpConnectResult,
  UdpExchangeResult,
  UdpSendResult,
} from './world-results.js';
export type { LinkJSON, NsJSON, RouteJSON, WorldJSON } from './world-persist.js';

export interface WorldOptions {
  /** Most recent frames kept, across all devices, for pcap export (default 65536; 0 disables capture). */
  captureLimit?: number;
  /** Seeds deterministic MAC generation, so two worlds can share a segment without collisions. */
  seed?: number;
}

export class World {
  /** Everything the world holds; the world-*.ts modules work on it. */
  private readonly w: WorldState;
  /** Counters across the world's lifetime. `hops` counts frames processed at a device (tx or rx). */
  readonly stats: { hops: number; frames: number; drops: number };

  constructor(opts: WorldOptions = {}) {
    this.w = new WorldState(opts.captureLimit ?? 65536, (opts.seed ?? 0) & 0xff, stack);
    this.stats = this.w.stats;
  }

  /** Virtual time in milliseconds. */
  get now(): number {
    return Math.floor(this.w.clockUs / 1000);
  }

  /** Moves virtual time forward: FDB entries and neighbours age as they would on a real host. */
  advance(ms: number): void {
    clock.advance(this.w, ms);
  }

  addNamespace(name: string): void {
    netns.addNamespace(this.w, name);
  }

  hasNamespace(name: string): boolean {
    return netns.hasNamespace(this.w, name);
  }

  namespaces(): string[] {
    return netns.namespaces(this.w);
  }

  /** Deleting a namespace destroys its devices; a veth whose peer lived here goes with it. */
  deleteNamespace(name: string): void {
    netns.deleteNamespace(this.w, name);
  }

  addLink(nsName: string, spec: LinkSpec): void {
    link.addLink(this.w, nsName, spec);
  }

  deleteLink(nsName: string, name: string): void {
    link.deleteLink(this.w, nsName, name);
  }

  setLink(nsName: string, name: string, ch: LinkChange): void {
    link.setLink(this.w, nsName, name, ch);
  }

  getLink(nsName: string, name: string): LinkInfo {
    return link.getLink(this.w, nsName, name);
  }

  hasLink(nsName: string, name: string): boolean {
    return link.hasLink(this.w, nsName, name);
  }

  links(nsName: string): LinkInfo[] {
    return link.links(this.w, nsName);
  }

  addAddress(nsName: string, dev: string, cidr: string): void {
    ifaddr.addAddress(this.w, nsName, dev, cidr);
  }

  deleteAddress(nsName: string, dev: string, cidr: string): void {
    ifaddr.deleteAddress(this.w, nsName, dev, cidr);
  }

  addresses(nsName: string, dev?: string): AddressInfo[] {
    return ifaddr.addresses(this.w, nsName, dev);
  }

  addRoute(nsName: string, spec: RouteSpec): void {
    fib.addRoute(this.w, nsName, spec);
  }

  /** `ip route replace`: add, or overwrite the route with the same prefix, metric and table. */
  replaceRoute(nsName: string, spec: RouteSpec): void {
    fib.replaceRoute(this.w, nsName, spec);
  }

  deleteRoute(nsName: string, spec: RouteSpec): void {
    fib.deleteRoute(this.w, nsName, spec);
  }

  routes(nsName: string, opts: { table?: number; family?: 4 | 6 } = {}): RouteInfo[] {
    return fib.routes(this.w, nsName, opts);
  }

  /** `ip route get`: the route the kernel would use for a destination (local addresses resolve to lo). */
  getRoute(nsName: string, dst: string): RouteInfo & { prefsrc: string | null } {
    return fib.getRoute(this.w, nsName, dst);
  }

  addNeighbour(nsName: string, spec: NeighSpec, replace = false): void {
    neighbour.addNeighbour(this.w, nsName, spec, replace);
  }

  deleteNeighbour(nsName: string, dev: string, ipStr: string): void {
    neighbour.deleteNeighbour(this.w, nsName, dev, ipStr);
  }

  /** `ip neigh flush`: drops every non-permanent entry (all entries with `all`). */
  flushNeighbours(nsName: string, dev?: string, all = false): void {
    neighbour.flushNeighbours(this.w, nsName, dev, all);
  }

  neighbours(nsName: string, dev?: string): NeighInfo[] {
    return neighbour.neighbours(this.w, nsName, dev);
  }

  /**
   * `bridge fdb add MAC dev PORT master` (port of a bridge) or `... dev VXLAN dst IP self` (vxlan), and
   * `bridge fdb replace|append`. Modes follow the kernel: `add` fails with EEXIST on an existing
   * entry, `replace` rewrites unicast entries (not the all-zeros / multicast ones: ENOTSUP), `append`
   * adds another remote to an all-zeros or multicast entry (VXLAN head-end replication).
   */
  addFdb(nsName: string, dev: string, spec: FdbSpec, mode: 'add' | 'replace' | 'append' = 'add'): void {
    bridge.addFdb(this.w, nsName, dev, spec, mode);
  }

  deleteFdb(nsName: string, dev: string, macStr: string, dst?: string): void {
    bridge.deleteFdb(this.w, nsName, dev, macStr, dst);
  }

  fdb(nsName: string, dev: string): FdbInfo[] {
    return bridge.fdb(this.w, nsName, dev);
  }

  setForwarding(nsName: string, family: 4 | 6, on: boolean): void {
    sysctl.setForwarding(this.w, nsName, family, on);
  }

  /**
   * Sysctls under /proc/sys/net, by dotted (`net.ipv4.ip_forward`) or slash form (needed when a device
   * name contains a dot). Forwarding and proxy_arp change behaviour; other keys are stored and read back.
   * Per-device keys of a missing device fail with ENOENT, like the missing /proc file.
   */
  setSysctl(nsName: string, key: string, value: string): void {
    sysctl.setSysctl(this.w, nsName, key, value);
  }

  getSysctl(nsName: string, key: string): string {
    return sysctl.getSysctl(this.w, nsName, key);
  }

  addNatRule(nsName: string, rule: NatRule): number {
    return nat.addNatRule(this.w, nsName, rule);
  }

  /** Removes every rule carrying this owner tag; returns how many went. */
  deleteNatRulesByOwner(nsName: string, owner: string): number {
    return nat.deleteNatRulesByOwner(this.w, nsName, owner);
  }

  deleteNatRule(nsName: string, id: number): void {
    nat.deleteNatRule(this.w, nsName, id);
  }

  natRules(nsName: string): NatRuleInfo[] {
    return nat.natRules(this.w, nsName);
  }

  /**
   * `iptables-restore` (family 4) or `ip6tables-restore` (6) in a namespace: every table of the input is
   * replaced (or, with `noflush`, changed) only if all of it is valid; errors name the line.
   */
  iptablesRestore(nsName: string, text: string, o: { family?: Family; noflush?: boolean } = {}): void {
    if (typeof text !== 'string') throw new NetsimError('EINVAL', 'iptables-restore input must be text');
    nf.restore(nsByName(this.w, nsName).nf, o.family ?? 4, text, { noflush: o.noflush });
  }

  /** `iptables-save` of a namespace: the tables that were ever loaded, with rules as iptables prints them. */
  iptablesSave(nsName: string, o: { family?: Family; table?: NfTableName } = {}): string {
    return nf.save(nsByName(this.w, nsName).nf, o.family ?? 4, o.table);
  }

  /** Packet and byte counters of every rule, by table and chain (`iptables -L -v -x`). */
  iptablesCounters(nsName: string, o: { family?: Family; table: NfTableName }): { chain: string; rule: string; packets: number; bytes: number }[] {
    const t = nsByName(this.w, nsName).nf.tables(o.family ?? 4).get(o.table);
    const out = [];
    for (const c of t?.values() ?? []) for (const r of c.rules) out.push({ chain: c.name, rule: r.spec, packets: r.packets, bytes: r.bytes });
    return out;
  }

  /**
   * Creates or replaces an nftables-style verdict map (or set) that `-j VMAP --map NAME --key ...` rules
   * look packets up in: element keys like "10.96.0.10 . tcp . 53", verdicts accept, drop, "jump CHAIN",
   * "goto CHAIN" (or "member" for a set). One lookup, however many elements.
   */
  nftSetMap(nsName: string, name: string, elements: Record<string, string>): void {
    nf.setMap(nsByName(this.w, nsName).nf, name, elements);
  }

  nftDeleteMap(nsName: string, name: string): void {
    nf.deleteMap(nsByName(this.w, nsName).nf, name);
  }

  /**
   * `nft -f`: applies an nftables script (add/create/flush/delete of tables, chains, rules, sets, maps and
   * elements, or the `table ... { }` form `nft list` prints) to a namespace as one transaction.
   */
  nft(nsName: string, script: string): void {
    if (typeof script !== 'string') throw new NetsimError('EINVAL', 'nft input must be text');
    const st = nsByName(this.w, nsName).nf.nft;
    nftApply(st, script);
    st.generation++;
  }

  /**
   * A number that changes whenever the namespace's iptables tables, maps or nftables tables change, by
   * whoever changes them: a periodic resync can tell that nothing touched the rules it wrote.
   */
  netfilterGeneration(nsName: string): number {
    const nf = nsByName(this.w, nsName).nf;
    return nf.generation + nf.nft.generation;
  }

  /** `nft list table FAMILY NAME`, as nft prints it (elements in key order). */
  nftList(nsName: string, family: NftFamily, table: string): string {
    return nftList(nsByName(this.w, nsName).nf.nft, family, table, this.w.clockUs);
  }

  /**
   * Lets `toNs` use `fromNs`'s nftables tables, as one object: for many nodes whose kube-proxy writes the
   * same rules, so a rule set of millions of chains is held (and changed) once. Each namespace keeps its
   * own addresses, routes and conntrack; what one writes (including dynamic set elements) all see.
   */
  nftShare(fromNs: string, toNs: string): void {
    nsByName(this.w, toNs).nf.nft = nsByName(this.w, fromNs).nf.nft;
  }

  /** The nftables tables of a namespace, as "FAMILY NAME" (`nft list tables`). */
  nftTables(nsName: string): string[] {
    return [...nsByName(this.w, nsName).nf.nft.tables.keys()];
  }

  /** Connection-tracking entries of a namespace (`conntrack -L`), as "src:sport -> dst:dport" pairs. */
  conntrack(nsName: string): { proto: number; orig: string; reply: string; nat: ('dnat' | 'snat')[] }[] {
    return ct.conntrack(this.w, nsName);
  }

  /** `conntrack -D [-p proto] [-d origDst] [-r replySrc]`; returns how many connections went. */
  deleteConntrack(nsName: string, f: { proto?: 'tcp' | 'udp' | 'icmp'; origDst?: string; replySrc?: string }): number {
    const proto = f.proto === undefined ? undefined : ({ tcp: 6, udp: 17, icmp: 1 } as const)[f.proto];
    if (f.proto !== undefined && proto === undefined) throw new NetsimError('EINVAL', `unknown protocol "${String(f.proto)}"`);
    return ct.deleteConntrack(this.w, nsName, { proto, origDst: f.origDst, replySrc: f.replySrc });
  }

  /** Drops all connection-tracking state of a namespace (`conntrack -F`). */
  flushConntrack(nsName: string): void {
    ct.flushConntrack(this.w, nsName);
  }

  listen(nsName: string, l: Listener): void {
    l4.listen(this.w, nsName, l);
  }

  unlisten(nsName: string, l: Listener): void {
    l4.unlisten(this.w, nsName, l);
  }

  /** A UDP listener that answers each datagram it receives with what `answer` returns (a server's socket). */
  answerUdp(nsName: string, l: { port: number; ip?: string }, answer: UdpAnswer): void {
    l4.answerUdp(this.w, nsName, l, answer);
  }

  /**
   * Frames seen on one device ("ns/dev") or on every device of a namespace ("ns"), oldest first, from
   * the most recent `captureLimit` frames of the world. A frame that crosses two devices of one
   * namespace appears twice, as with "tcpdump -i any".
   */
  captured(target: CaptureTarget): CapturedFrame[] {
    return captures.captured(this.w, target);
  }

  pcap(target: CaptureTarget): Buffer {
    return captures.pcap(this.w, target);
  }

  writePcap(target: CaptureTarget, path: string): number {
    return captures.writePcap(this.w, target, path);
  }

  clearCaptures(): void {
    captures.clearCaptures(this.w);
  }

  /**
   * Sends ICMP echo requests from a namespace and runs the network until it is quiet.
   * Virtual time advances one second between requests, as ping(8) paces them.
   */
  ping(fromNs: string, to: string, opts: PingOptions = {}): PingResult {
    return l4.ping(this.w, fromNs, to, opts);
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
    return l4.udpSend(this.w, fromNs, to, port, payload, opts);
  }

  /**
   * One datagram from a connected UDP socket and the reply it takes, as a stub resolver asks its server:
   * `reply` is set only when the answer comes back from `to:port` (NAT on the way reversed).
   */
  udpExchange(fromNs: string, to: string, port: number, payload: Uint8Array, opts: SendOptions = {}): UdpExchangeResult {
    return l4.udpExchange(this.w, fromNs, to, port, payload, opts);
  }

  /** A TCP three-way handshake from `fromNs` to `to:port`; the far side answers if something listens. */
  tcpConnect(fromNs: string, to: string, port: number, opts: SendOptions = {}): TcpConnectResult {
    return l4.tcpConnect(this.w, fromNs, to, port, opts);
  }

  toJSON(): WorldJSON {
    return persist.toJSON(this.w);
  }

  /** Rebuilds a world from `toJSON()` output. Throws EINVAL naming the first inconsistency. */
  static fromJSON(data: unknown, opts: WorldOptions = {}): World {
    const j = data as WorldJSON;
    if (!j || typeof j !== 'object' || j.version !== 1 || !Array.isArray(j.namespaces)) {
      throw new NetsimError('EINVAL', 'not a netsim world (expected {"version":1,"namespaces":[...]})');
    }
    const world = new World({ ...opts, seed: opts.seed ?? j.seed });
    try {
      persist.restore(world.w, j);
    } catch (e) {
      if (e instanceof NetsimError)
        throw new NetsimError('EINVAL', `inconsistent netsim world: ${e.message}`);
      throw new NetsimError('EINVAL', `inconsistent netsim world: ${(e as Error).message}`);
    }
    return world;
  }
}
