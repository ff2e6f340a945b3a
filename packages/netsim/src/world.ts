// The simulated datapath. A World holds network namespaces; each frame is real bytes and is processed the
// way the Linux stack would: device transmit/receive, bridge FDB, VXLAN encap/decap, IP routing with
// longest-prefix match, ARP/NDP neighbour resolution, netfilter-style NAT with connection tracking.
// Processing is a FIFO of frame deliveries driven to quiescence, so results are deterministic.
//
// This class is the façade: the public calls, each handed to the subsystem module that owns it
// (world-*.ts), all of them working on one WorldState.
import {
  BROADCAST_MAC,
  bytesEqual,
  type Family,
  formatIp,
  formatIpBytes,
  formatMac,
  formatPrefix,
  type IpAddr,
  ipKey,
  ipKeyAt,
  isLinkLocalV6,
  isMulticastMac,
  macKeyAt,
  macKeyToBytes,
  multicastMacForIPv6,
  mustParseIp,
  mustParseMac,
  prefixContains,
  solicitedNodeAddr,
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
  TCP_ACK,
  TCP_RST,
  TCP_SYN,
  tcpSegment,
  udpDatagram,
  vxlanHeader,
} from './packet.js';
import type { CapturedFrame } from './pcap.js';
import type { Trace } from './trace.js';
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
  NeighState,
  RouteInfo,
  RouteSpec,
} from './types.js';
import { capture, type CaptureTarget, rec } from './world-capture.js';
import { CT_TIMEOUT_MS, ctConfirm } from './world-conntrack.js';
import { resolveRoute, selectSource } from './world-fib.js';
import type { PingOptions, PingResult, SendOptions, TcpConnectResult, UdpSendResult } from './world-l4.js';
import {
  type CtRef,
  type FdbEntry,
  type Link,
  type NeighEntry,
  type Ns,
  type Route,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
} from './world-model.js';
import { natPost, natPre, rewrite } from './world-nat.js';
import type { WorldJSON } from './world-persist.js';
import {
  linkByName,
  nsByName,
  type PingSession,
  type TcpSession,
  type UdpProbe,
  WorldState,
} from './world-state.js';
import * as bridge from './world-bridge.js';
import * as captures from './world-capture.js';
import * as ct from './world-conntrack.js';
import * as fib from './world-fib.js';
import * as ifaddr from './world-ifaddr.js';
import * as link from './world-link.js';
import * as nat from './world-nat.js';
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
  UdpSendResult,
} from './world-l4.js';
export type { LinkJSON, NsJSON, RouteJSON, WorldJSON } from './world-persist.js';

const NEIGH_REACHABLE_MS = 30_000;
const NEIGH_GC_STALE_MS = 60_000;
const UNRES_QLEN = 101;
const MAX_FRAMES_PER_RUN = 1_000_000;

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
  readonly stats: WorldState['stats'];

  constructor(opts: WorldOptions = {}) {
    this.w = new WorldState(opts.captureLimit ?? 65536, (opts.seed ?? 0) & 0xff);
    this.stats = this.w.stats;
  }

  /** Virtual time in milliseconds. */
  get now(): number {
    return Math.floor(this.w.clockUs / 1000);
  }

  /** Moves virtual time forward: FDB entries and neighbours age as they would on a real host. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new NetsimError('EINVAL', `advance: bad duration ${ms}`);
    this.w.clockUs += Math.round(ms * 1000);
    for (const ns of this.w.nss.values()) {
      for (const l of ns.links.values()) {
        if (l.fdb) {
          for (const [k, e] of l.fdb) {
            if (!e.permanent && this.w.clockUs - e.updatedUs > l.ageingMs * 1000) l.fdb.delete(k);
          }
        }
        if (l.vxFdb) {
          for (const [k, e] of l.vxFdb) {
            if (!e.permanent && this.w.clockUs - e.updatedUs > l.ageingMs * 1000) l.vxFdb.delete(k);
          }
        }
        for (const [k, n] of l.neigh) {
          const age = this.w.clockUs - n.updatedUs;
          if (n.state === 'REACHABLE' && age > NEIGH_REACHABLE_MS * 1000) n.state = 'STALE';
          if ((n.state === 'STALE' || n.state === 'FAILED') && age > NEIGH_GC_STALE_MS * 1000)
            l.neigh.delete(k);
        }
      }
      for (const [k, e] of ns.ct) {
        if (this.w.clockUs - e.conn.lastUs > (CT_TIMEOUT_MS[e.conn.orig.proto] ?? 600_000) * 1000)
          ns.ct.delete(k);
      }
    }
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
    const ns = nsByName(this.w, nsName);
    const l = linkByName(ns, spec.dev);
    const ip = mustParseIp(spec.ip, 'neighbour address');
    const mac = mustParseMac(spec.mac);
    const key = ipKey(ip);
    const cur = l.neigh.get(key);
    if (cur && !replace && cur.state !== 'INCOMPLETE' && cur.state !== 'FAILED')
      throw new NetsimError('EEXIST', `neighbour ${spec.ip} dev ${spec.dev}`);
    const state = spec.state ?? 'PERMANENT';
    const queue = cur?.queue ?? [];
    const e: NeighEntry = { ip, key, mac, state, updatedUs: this.w.clockUs, queue: [] };
    l.neigh.set(key, e);
    if (queue.length) {
      for (const q of queue) this.sendResolved(l, e, q.p, q.family);
      this.run();
    }
  }

  deleteNeighbour(nsName: string, dev: string, ipStr: string): void {
    const ns = nsByName(this.w, nsName);
    const l = linkByName(ns, dev);
    const ip = mustParseIp(ipStr, 'neighbour address');
    if (!l.neigh.delete(ipKey(ip))) throw new NetsimError('ENOENT', `neighbour ${ipStr} dev ${dev}`);
  }

  /** `ip neigh flush`: drops every non-permanent entry (all entries with `all`). */
  flushNeighbours(nsName: string, dev?: string, all = false): void {
    const ns = nsByName(this.w, nsName);
    const devs = dev === undefined ? [...ns.links.values()] : [linkByName(ns, dev)];
    for (const l of devs) for (const [k, n] of l.neigh) if (all || n.state !== 'PERMANENT') l.neigh.delete(k);
  }

  neighbours(nsName: string, dev?: string): NeighInfo[] {
    const ns = nsByName(this.w, nsName);
    const devs = dev === undefined ? [...ns.links.values()] : [linkByName(ns, dev)];
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

  /** `bridge fdb add MAC dev PORT master` (port of a bridge) or `... dev VXLAN dst IP self` (vxlan). */
  /**
   * `bridge fdb add|replace|append`. Modes follow the kernel: `add` fails with EEXIST on an existing
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

  /** Connection-tracking entries of a namespace (`conntrack -L`), as "src:sport -> dst:dport" pairs. */
  conntrack(nsName: string): { proto: number; orig: string; reply: string; nat: ('dnat' | 'snat')[] }[] {
    return ct.conntrack(this.w, nsName);
  }

  /** Drops all connection-tracking state of a namespace (`conntrack -F`). */
  flushConntrack(nsName: string): void {
    ct.flushConntrack(this.w, nsName);
  }

  listen(nsName: string, l: Listener): void {
    const ns = nsByName(this.w, nsName);
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
    const ns = nsByName(this.w, nsName);
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

  private enqueue(dev: Link, frame: Buffer): void {
    this.w.qDev.push(dev);
    this.w.qFrame.push(frame);
  }

  /** Delivers queued frames until none are left; then fails unanswered neighbour resolutions. */
  private run(): void {
    for (;;) {
      let budget = MAX_FRAMES_PER_RUN;
      while (this.w.qHead < this.w.qDev.length) {
        if (--budget < 0) {
          // Without STP a bridge loop floods forever; stop and say so instead of hanging.
          const dev = this.w.qDev[this.w.qHead]!;
          rec(this.w, 
            'drop',
            dev.ns,
            dev,
            'run',
            undefined,
            undefined,
            `more than ${MAX_FRAMES_PER_RUN} frames in one exchange: forwarding loop`,
          );
          this.w.stats.drops += this.w.qDev.length - this.w.qHead - 1;
          break;
        }
        const dev = this.w.qDev[this.w.qHead]!;
        const f = this.w.qFrame[this.w.qHead]!;
        this.w.qHead++;
        this.devRx(dev, f);
      }
      this.w.qDev = [];
      this.w.qFrame = [];
      this.w.qHead = 0;
      if (this.w.pendingNeigh.length === 0) return;
      const pend = this.w.pendingNeigh;
      this.w.pendingNeigh = [];
      for (const { dev, entry } of pend) {
        if (entry.state !== 'INCOMPLETE') continue;
        entry.state = 'FAILED';
        entry.updatedUs = this.w.clockUs;
        const q = entry.queue;
        entry.queue = [];
        for (const p of q) {
          rec(this.w, 
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
    this.w.clockUs++;
    this.w.stats.hops++;
  }

  private devXmit(l: Link, frame: Buffer): void {
    if (!l.up) {
      rec(this.w, 'drop', l.ns, l, 'transmit', frame, undefined, 'link down');
      return;
    }
    this.tick();
    this.w.stats.frames++;
    l.stats.txPackets++;
    l.stats.txBytes += frame.length;
    capture(this.w, l, frame, 'tx');
    if (this.w.tr) rec(this.w, 'tx', l.ns, l, `${l.kind} transmit`, frame);
    switch (l.kind) {
      case 'loopback':
        this.enqueue(l, frame);
        return;
      case 'veth': {
        const p = l.peer;
        if (!p || !p.up) {
          rec(this.w, 'drop', l.ns, l, 'veth transmit', frame, undefined, 'peer down (NO-CARRIER)');
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
        rec(this.w, 'drop', l.ns, l, 'dummy device', frame, undefined, 'dummy devices discard what they send');
        return;
    }
  }

  private devRx(l: Link, frame: Buffer): void {
    if (!l.up || !l.alive) {
      rec(this.w, 'drop', l.ns, l, 'receive', frame, undefined, 'link down');
      return;
    }
    this.tick();
    l.stats.rxPackets++;
    l.stats.rxBytes += frame.length;
    capture(this.w, l, frame, 'rx');
    if (this.w.tr) rec(this.w, 'rx', l.ns, l, `${l.kind} receive`, frame);
    if (l.master) {
      this.bridgeInput(l.master, l, frame);
      return;
    }
    this.netifReceive(l, frame);
  }

  private fdbLookup(br: Link, mk: number): FdbEntry | null {
    const e = br.fdb!.get(mk);
    if (!e) return null;
    if (!e.permanent && this.w.clockUs - e.updatedUs > br.ageingMs * 1000) {
      br.fdb!.delete(mk);
      if (this.w.tr) rec(this.w, 'fdb', br.ns, br, `entry ${formatMac(macKeyToBytes(mk))} aged out`);
      return null;
    }
    return e;
  }

  private bridgeInput(br: Link, port: Link, frame: Buffer): void {
    if (!br.up) {
      rec(this.w, 'drop', br.ns, port, 'bridge input', frame, undefined, `bridge ${br.name} is down`);
      return;
    }
    if (port.port!.learning && !isMulticastMac(frame, 6)) {
      const sk = macKeyAt(frame, 6);
      const cur = br.fdb!.get(sk);
      if (!cur || (!cur.permanent && cur.port !== port)) {
        br.fdb!.set(sk, { port, updatedUs: this.w.clockUs, permanent: false, local: false });
        if (this.w.tr) rec(this.w, 'fdb', br.ns, br, `learn ${formatMac(frame, 6)} on ${port.name}`);
      } else if (!cur.permanent) cur.updatedUs = this.w.clockUs;
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
            rec(this.w, 
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
          if (this.w.tr) rec(this.w, 'fdb', br.ns, br, `local ${formatMac(frame, 0)} -> up to ${br.name}`);
          this.bridgeLocalIn(br, frame);
          return;
        }
        if (e.port === ingress && !ingress.port!.hairpin) {
          rec(this.w, 
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
          rec(this.w, 'drop', br.ns, ingress, 'bridge forward', frame, undefined, 'both ports are isolated');
          return;
        }
        if (this.w.tr) rec(this.w, 'fdb', br.ns, br, `hit ${formatMac(frame, 0)} -> port ${e.port.name}`);
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
    if (this.w.tr) {
      rec(this.w, 
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
    capture(this.w, br, frame, 'rx');
    if (this.w.tr) rec(this.w, 'rx', br.ns, br, 'bridge receive', frame);
    this.netifReceive(br, frame);
  }

  private vxlanXmit(l: Link, frame: Buffer): void {
    const fdb = l.vxFdb!;
    let dsts: IpAddr[] | undefined;
    let how: string;
    if (!isMulticastMac(frame, 0)) {
      const e = fdb.get(macKeyAt(frame, 0));
      if (e && (e.permanent || this.w.clockUs - e.updatedUs <= l.ageingMs * 1000)) {
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
      rec(this.w, 
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
    if (this.w.tr) rec(this.w, 'fdb', l.ns, l, how);
    const ns = l.vxLinkNs ?? l.ns;
    // Entropy for ECMP in the underlay: the source port hashes the inner flow.
    let h = 2166136261;
    for (let i = 0; i < Math.min(frame.length, 14 + 20); i++) h = Math.imul(h ^ frame[i]!, 16777619);
    const sport = 32768 + ((h >>> 0) % (61000 - 32768));
    const payload = Buffer.concat([vxlanHeader(l.vni), frame]);
    for (const dst of dsts) {
      const r = resolveRoute(this.w, ns, dst.bytes, 0, dst.family);
      if (!r || (r.type !== 'unicast' && r.type !== 'local')) {
        rec(this.w, 
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
      const src = l.vxLocal ?? selectSource(ns, r, dst.bytes, 0, dst.family);
      if (!src) {
        rec(this.w, 'drop', ns, l, 'vxlan encap', frame, undefined, 'no local address for the outer header');
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
      if (this.w.tr)
        rec(this.w, 
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
      rec(this.w, 'drop', ns, null, 'vxlan receive', p, family, 'runt VXLAN packet');
      return true;
    }
    const v = l4 + 8;
    if ((p[v]! & 0x08) === 0) {
      rec(this.w, 'drop', ns, null, 'vxlan receive', p, family, 'VXLAN I flag not set');
      return true;
    }
    const vni = (p[v + 4]! << 16) | (p[v + 5]! << 8) | p[v + 6]!;
    const l = devs.find((d) => d.vni === vni);
    if (!l) {
      rec(this.w, 'drop', ns, null, 'vxlan receive', p, family, `no vxlan device for vni ${vni}`);
      return true;
    }
    const inner = Buffer.from(p.subarray(v + 8, end));
    const srcOff = family === 4 ? 12 : 8;
    if (this.w.tr) rec(this.w, 'decap', ns, l, `vxlan vni ${vni} from ${formatIpBytes(p, srcOff, family)}`, inner);
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
          updatedUs: this.w.clockUs,
        });
        if (this.w.tr) rec(this.w, 'fdb', l.ns, l, `learn ${formatMac(inner, 6)} -> ${formatIp(srcIp)}`);
      } else if (!cur.permanent) cur.updatedUs = this.w.clockUs;
    }
    this.enqueue(l, inner);
    return true;
  }

  private netifReceive(l: Link, frame: Buffer): void {
    if (frame.length < 14) {
      rec(this.w, 'drop', l.ns, l, 'receive', frame, undefined, 'runt frame');
      return;
    }
    if (l.kind !== 'loopback' && !isMulticastMac(frame, 0) && macKeyAt(frame, 0) !== l.macKey) {
      rec(this.w, 
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
    else rec(this.w, 'drop', l.ns, l, 'receive', frame, undefined, `unknown ethertype 0x${type.toString(16)}`);
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
      rec(this.w, 'drop', ns, l, 'arp', frame, undefined, 'malformed ARP');
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
        if (this.w.tr) why = `${formatIpBytes(frame, 38, 4)} is local`;
      } else if (l.proxyArp) {
        const r = resolveRoute(this.w, ns, frame, 38, 4);
        if (r && r.type === 'unicast' && r.dev !== l) {
          answer = true;
          why = `proxy ARP: route via ${r.dev?.name}`;
        }
      }
      if (!answer) {
        if (this.w.tr)
          rec(this.w, 'local', ns, l, `ARP request for ${formatIpBytes(frame, 38, 4)} ignored (not ours)`);
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
      if (this.w.tr) rec(this.w, 'reply', ns, l, `ARP reply (${why})`, out);
      this.devXmit(l, out);
      return;
    }
    if (op === 2) {
      const e = l.neigh.get(spaKey);
      if (!e) {
        if (this.w.tr) rec(this.w, 'local', ns, l, 'unsolicited ARP reply ignored (arp_accept=0)');
        return;
      }
      this.learnNeigh(l, e.ip, Uint8Array.from(frame.subarray(22, 28)), 'REACHABLE', true);
      return;
    }
    rec(this.w, 'drop', ns, l, 'arp', frame, undefined, `ARP op ${op}`);
  }

  private learnNeigh(l: Link, ip: IpAddr, mac: Uint8Array, state: NeighState, confirm: boolean): void {
    const key = ipKey(ip);
    let e = l.neigh.get(key);
    if (e && (e.state === 'PERMANENT' || e.state === 'NOARP')) return;
    if (!e) {
      e = { ip, key, mac, state, updatedUs: this.w.clockUs, queue: [] };
      l.neigh.set(key, e);
    } else {
      if (!confirm && e.state === 'REACHABLE' && e.mac && bytesEqual(e.mac, 0, mac, 0, 6)) return;
      e.mac = mac;
      e.state = state;
      e.updatedUs = this.w.clockUs;
    }
    if (this.w.tr) rec(this.w, 'neigh', l.ns, l, `${formatIp(ip)} lladdr ${formatMac(mac)} ${state}`);
    if (e.queue.length) {
      const q = e.queue;
      e.queue = [];
      for (const p of q) this.sendResolved(l, e, p.p, p.family);
    }
  }

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
        rec(this.w, 'drop', ns, l, 'ip receive', frame, undefined, 'bad IPv4 header');
        return;
      }
    } else if (p.length < 40 || p[0]! >> 4 !== 6 || 40 + p.readUInt16BE(4) > p.length) {
      rec(this.w, 'drop', ns, l, 'ip receive', frame, undefined, 'bad IPv6 header');
      return;
    }
    const len = family === 4 ? p.readUInt16BE(2) : 40 + p.readUInt16BE(4);
    const pkt = len < p.length ? p.subarray(0, len) : p;
    const ct = ns.nat.length || ns.ct.size ? natPre(this.w, ns, pkt, family, l) : null;
    const dOff = family === 4 ? 16 : 24;
    if (this.isLocalDst(ns, pkt, dOff, family)) {
      this.localDeliver(ns, l, pkt, family, ct);
      return;
    }
    if (family === 6 && pkt[24] === 0xff) {
      rec(this.w, 'drop', ns, l, 'ip receive', pkt, family, 'multicast group not joined');
      return;
    }
    if (!(family === 4 ? ns.fwd4 : ns.fwd6)) {
      rec(this.w, 
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
      rec(this.w, 'drop', ns, l, 'forward', pkt, family, 'TTL exceeded');
      this.icmpErrorTo(ns, pkt, family, 'ttl');
      return;
    }
    const r = resolveRoute(this.w, ns, pkt, dOff, family);
    if (!r) {
      rec(this.w, 'drop', ns, l, 'route lookup', pkt, family, 'no route to destination');
      this.icmpErrorTo(ns, pkt, family, 'net-unreachable');
      return;
    }
    if (r.type !== 'unicast') {
      this.routeTypeDrop(ns, l, r, pkt, family, true);
      return;
    }
    pkt[ttlOff]!--;
    if (family === 4) refreshChecksums(pkt, 4);
    if (this.w.tr) rec(this.w, 'forward', ns, l, `forward to ${formatIpBytes(pkt, dOff, family)}`, pkt, family);
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
    rec(this.w, 'drop', ns, l, `route ${r.type} ${d}`, pkt, family, `${r.type} route`);
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
    if (this.w.tr) {
      const via = r.via ? ` via ${formatIp(r.via)}` : '';
      rec(this.w, 
        'route',
        ns,
        r.dev,
        `${r.type === 'local' ? 'local' : formatPrefix(r.dst)}${via} dev ${r.dev?.name ?? '-'} (table ${r.table === RT_TABLE_MAIN ? 'main' : r.table === RT_TABLE_LOCAL ? 'local' : r.table})`,
      );
    }
    const dev = r.dev;
    if (!dev) {
      rec(this.w, 'drop', ns, null, 'output', p, family, 'route has no device');
      return;
    }
    if (ct) natPost(this.w, ns, p, family, dev, ct);
    if (dev.kind === 'loopback') {
      const f = ethFrame(new Uint8Array(6), new Uint8Array(6), family === 4 ? ETH_P_IP : ETH_P_IPV6, p);
      this.devXmit(dev, f);
      return;
    }
    if (!dev.up) {
      rec(this.w, 'drop', ns, dev, 'output', p, family, 'link down');
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
      updatedUs: this.w.clockUs,
      queue: [{ p, family, forwarded }],
    };
    dev.neigh.set(key, e);
    this.w.pendingNeigh.push({ dev, entry: e });
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
      if (this.w.tr) rec(this.w, 'neigh', ns, dev, `resolve ${formatIp(ip)}: ARP who-has`, f);
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
      rec(this.w, 'drop', ns, dev, 'ndisc', p, family, 'no IPv6 address on the device to solicit from');
      return;
    }
    const sn = solicitedNodeAddr(ip.bytes);
    const pkt = ipv6Packet(
      { src, dst: sn, nextHeader: IPPROTO_ICMPV6, hopLimit: 255 },
      ndpMessage(135, ip.bytes, dev.mac),
    );
    const f = ethFrame(multicastMacForIPv6(sn), dev.mac, ETH_P_IPV6, pkt);
    if (this.w.tr) rec(this.w, 'neigh', ns, dev, `resolve ${formatIp(ip)}: neighbor solicitation`, f);
    this.devXmit(dev, f);
  }

  /** Locally generated packet: OUTPUT NAT, route, POSTROUTING, out. Returns an errno name on refusal. */
  private ipLocalOut(ns: Ns, p: Buffer, family: Family, replyTo?: Link): string | null {
    const ct = ns.nat.length || ns.ct.size ? natPre(this.w, ns, p, family, null) : null;
    const dOff = family === 4 ? 16 : 24;
    // Replies to link-local / multicast sources leave by the interface the request came in on.
    let r: Route | null;
    if (replyTo && family === 6 && (isLinkLocalV6(p, dOff) || p[dOff] === 0xff)) {
      r = { ...resolveRoute(this.w, ns, p, dOff, family)!, dev: replyTo, via: null, type: 'unicast' };
      if (!r.dev) return 'ENETUNREACH';
    } else r = resolveRoute(this.w, ns, p, dOff, family);
    if (!r) {
      rec(this.w, 'drop', ns, null, 'route lookup', p, family, 'Network is unreachable');
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
    if (ct?.isNew) ctConfirm(ns, ct.conn);
    // Replies of a DNATed connection that ends here are de-DNATed on input.
    else if (ct && ct.dir === 'reply' && ct.conn.dnat) {
      const c = ct.conn;
      rewrite(p, family, 'src', c.orig.dst, c.orig.dport);
      if (this.w.tr)
        rec(this.w, 
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
    if (this.w.tr) rec(this.w, 'local', ns, l, `deliver to ${ns.name} stack`, p, family);
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
        if (this.w.tr) rec(this.w, 'reply', ns, l, 'echo reply', reply, family);
        this.ipLocalOut(ns, reply, family, l);
        return;
      }
      if (type === (family === 4 ? 0 : 129)) {
        const s = this.w.pings.get(`${ns.name}|${p.readUInt16BE(l4 + 4)}`);
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
        if (this.w.udpProbe && !this.w.udpProbe.delivered) {
          this.w.udpProbe.delivered = {
            ns: ns.name,
            from: formatIpBytes(p, sOff, family),
            sport: p.readUInt16BE(l4),
          };
        }
        if (this.w.tr) rec(this.w, 'local', ns, l, `UDP datagram for a listener on port ${dport}`);
        return;
      }
      rec(this.w, 'drop', ns, l, `udp port ${dport}`, p, family, 'port unreachable');
      this.icmpErrorTo(ns, p, family, 'port-unreachable');
      return;
    }
    if (proto === IPPROTO_TCP) {
      this.tcpRcv(ns, l, p, family, l4);
      return;
    }
    rec(this.w, 'drop', ns, l, 'deliver', p, family, `protocol ${proto} unreachable`);
  }

  private ndiscRcv(ns: Ns, l: Link, p: Buffer, l4: number, end: number, type: number): void {
    if (p[7] !== 255 || end - l4 < 24) {
      rec(this.w, 'drop', ns, l, 'ndisc', p, 6, 'invalid neighbour discovery message');
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
        if (this.w.tr)
          rec(this.w, 
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
      if (this.w.tr) rec(this.w, 'reply', ns, l, 'neighbor advertisement', f);
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
      const s = this.w.pings.get(`${ns.name}|${p.readUInt16BE(innerL4 + 4)}`);
      if (s) s.errors.push({ seq: p.readUInt16BE(innerL4 + 6), from, message: msg });
      return;
    }
    if (innerProto === IPPROTO_UDP && this.w.udpProbe && !this.w.udpProbe.error) {
      this.w.udpProbe.error = { from, message: msg };
      return;
    }
    if (innerProto === IPPROTO_TCP) {
      const sOff = family === 4 ? 12 : 8;
      const dOff = family === 4 ? 16 : 24;
      const key = `${ns.name}|${formatIpBytes(p, inner + sOff, family)}|${p.readUInt16BE(innerL4)}|${formatIpBytes(p, inner + dOff, family)}|${p.readUInt16BE(innerL4 + 2)}`;
      const s = this.w.tcps.get(key);
      if (s && s.state === 'syn-sent') s.state = 'unreachable';
    }
  }

  private failLocal(ns: Ns, p: Buffer, family: Family, from: string, message: string): void {
    const proto = family === 4 ? p[9]! : p[6]!;
    const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
    if (proto === (family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6)) {
      const s = this.w.pings.get(`${ns.name}|${p.readUInt16BE(l4 + 4)}`);
      if (s) s.errors.push({ seq: p.readUInt16BE(l4 + 6), from, message });
    } else if (proto === IPPROTO_TCP) {
      const sOff = family === 4 ? 12 : 8;
      const dOff = family === 4 ? 16 : 24;
      const key = `${ns.name}|${formatIpBytes(p, sOff, family)}|${p.readUInt16BE(l4)}|${formatIpBytes(p, dOff, family)}|${p.readUInt16BE(l4 + 2)}`;
      const s = this.w.tcps.get(key);
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
    const r = resolveRoute(this.w, ns, srcIp, 0, family);
    if (!r || (r.type !== 'unicast' && r.type !== 'local')) return;
    const src = selectSource(ns, r, srcIp, 0, family);
    if (!src) return;
    const body = icmpError(type, code, p, family);
    const err =
      family === 4
        ? ipv4Packet({ src: src.bytes, dst: srcIp, proto: IPPROTO_ICMP, ttl: 64 }, body)
        : ipv6Packet({ src: src.bytes, dst: srcIp, nextHeader: IPPROTO_ICMPV6, hopLimit: 64 }, body);
    if (this.w.tr)
      rec(this.w, 'reply', ns, r.dev, `ICMP ${kind} to ${formatIp({ family, bytes: srcIp })}`, err, family);
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
    const s = this.w.tcps.get(key);
    if (s && s.state === 'syn-sent') {
      if ((flags & (TCP_SYN | TCP_ACK)) === (TCP_SYN | TCP_ACK)) {
        s.state = 'established';
        const ack = build(
          tcpSegment({ sport: dport, dport: sport, seq: s.seq + 1, ack: seq + 1, flags: TCP_ACK }),
        );
        if (this.w.tr) rec(this.w, 'reply', ns, l, 'TCP connection established, ACK', ack, family);
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
        if (this.w.tr) rec(this.w, 'reply', ns, l, `SYN-ACK from listener on port ${dport}`, synack, family);
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
        if (this.w.tr) rec(this.w, 'reply', ns, l, `RST: nothing listens on port ${dport}`, rst, family);
        this.ipLocalOut(ns, rst, family, l);
      }
      return;
    }
    if (flags & TCP_ACK && this.w.tr) rec(this.w, 'local', ns, l, `TCP ACK on port ${dport}: connection accepted`);
  }

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
    const r = resolveRoute(this.w, ns, dst.bytes, 0, dst.family);
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
    const s = selectSource(ns, r, dst.bytes, 0, dst.family);
    if (!s) return { error: { code: 'EADDRNOTAVAIL', message: 'connect: Cannot assign requested address' } };
    return { src: s };
  }

  /**
   * Sends ICMP echo requests from a namespace and runs the network until it is quiet.
   * Virtual time advances one second between requests, as ping(8) paces them.
   */
  ping(fromNs: string, to: string, opts: PingOptions = {}): PingResult {
    const ns = nsByName(this.w, fromNs);
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
    this.w.tr = opts.trace === false ? null : trace;
    ns.echoId = (ns.echoId + 1) & 0xffff;
    const id = ns.echoId;
    const session: PingSession = { replies: [], errors: [] };
    const key = `${ns.name}|${id}`;
    this.w.pings.set(key, session);
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
          if (this.w.tr)
            trace.push({
              seq: trace.length + 1,
              timeUs: this.w.clockUs,
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
      this.w.tr = null;
      this.w.pings.delete(key);
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
    const ns = nsByName(this.w, fromNs);
    const dst = mustParseIp(to, 'destination');
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new NetsimError('EINVAL', `bad port ${port}`);
    if (!(payload instanceof Uint8Array) || payload.length > 65000)
      throw new NetsimError('EINVAL', 'bad UDP payload');
    const trace: Trace = [];
    this.w.tr = opts.trace === false ? null : trace;
    const probe: UdpProbe = {};
    this.w.udpProbe = probe;
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
      this.w.tr = null;
      this.w.udpProbe = null;
    }
  }

  /** A TCP three-way handshake from `fromNs` to `to:port`; the far side answers if something listens. */
  tcpConnect(fromNs: string, to: string, port: number, opts: SendOptions = {}): TcpConnectResult {
    const ns = nsByName(this.w, fromNs);
    const dst = mustParseIp(to, 'destination');
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new NetsimError('EINVAL', `bad port ${port}`);
    const trace: Trace = [];
    this.w.tr = opts.trace === false ? null : trace;
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
      this.w.tcps.set(key, session);
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
        this.w.tcps.delete(key);
      }
    } finally {
      this.w.tr = null;
    }
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
