/**
 * A BGP speaker: sessions to configured neighbours, Adj-RIB-In per neighbour, the decision process into
 * the Loc-RIB, Adj-RIB-Out per neighbour with the iBGP and route-reflection (RFC 4456) export rules, and
 * the routes it selects handed to a {@link RouteSink}.
 */
import { EventEmitter } from 'node:events';
import { BgpConfigError, CeaseSubcode, ErrorCode } from './errors.js';
import { formatPrefix, parseIpAddr, parsePrefix, type Prefix } from '@kemu/ip';
import { type Afi, routerIdToNumber } from './router-id.js';
import {
  AFI_IPV4,
  AFI_IPV6,
  AsPathSegmentType,
  type AsPathSegment,
  type CodecContext,
  encodeAnnouncements,
  encodeNotification,
  encodeWithdrawals,
  mergeAs4Path,
  type PathAttributes,
  type RouteRefreshMessage,
  SAFI_UNICAST,
  type UpdateMessage,
} from './message.js';
import {
  type RibEntry,
  type Route,
  type RouteSource,
  routeAttributes,
  selectBest,
  toRibEntry,
} from './rib.js';
import type { InstalledRoute, RouteSink } from './route-sink.js';
import {
  type NeighborConfig,
  Session,
  type SessionError,
  type SessionHooks,
  type SessionState,
} from './session.js';
import { type Listener, tcpTransport, type Transport } from './transport.js';

export interface SpeakerOptions {
  /** BGP identifier, a dotted quad. */
  routerId: string;
  /** Our AS number (2- or 4-octet). */
  as: number;
  /** Where to accept connections; `false` to only connect out. */
  listen?: { address: string; port: number } | false;
  neighbors?: NeighborConfig[];
  /** Proposed hold time in seconds (default 90). */
  holdTime?: number;
  keepaliveTime?: number;
  /** Seconds between connection attempts (default 120, as RFC 4271 suggests). */
  connectRetryTime?: number;
  /** Act as a route reflector (RFC 4456); `clusterId` defaults to the router ID. */
  routeReflector?: { clusterId?: string };
  /** Address families to negotiate (default IPv4 and IPv6 unicast). */
  families?: Afi[];
  /** Our next hop for IPv6 routes when a session runs over IPv4 (default the IPv4-mapped address). */
  nextHop6?: string;
  /** Next hop shown for our own routes in the Loc-RIB (default the listen address). */
  localNextHop?: string;
  transport?: Transport;
  /**
   * Where prefix texts and objects are interned. Many speakers in one process (a route simulation) share
   * one, so a prefix learned by a thousand speakers is stored once; default: one per speaker.
   */
  prefixTable?: PrefixTable;
  routeSink?: RouteSink;
  log?: (line: string) => void;
}

export interface AdvertiseOptions {
  med?: number;
  localPref?: number;
  communities?: number[];
  /** Next hop to announce instead of our session address. */
  nextHop?: string;
}

export interface PeerStatus {
  address: string;
  port: number;
  name?: string;
  as: number;
  type: 'ibgp' | 'ebgp';
  rrClient: boolean;
  state: SessionState;
  routerId?: string;
  holdTime?: number;
  keepaliveTime?: number;
  families?: Afi[];
  fourOctetAs?: boolean;
  routeRefresh?: boolean;
  uptimeSeconds?: number;
  prefixesReceived: number;
  prefixesAdvertised: number;
  lastError?: SessionError;
}

export interface RibChange {
  prefix: string;
  /** The new best route, or undefined when the prefix left the Loc-RIB. */
  route?: RibEntry;
}

/** What one neighbour is sent for a route; shared by all neighbours of the same export class. */
interface OutRoute {
  afi: Afi;
  prefix: Prefix;
  attrs: PathAttributes;
  nextHop: string;
  key: string;
  bytes?: Map<boolean, Buffer[]>;
  /** Flush-time bookkeeping: the representative of this attribute set in the current flush... */
  rep?: OutRoute;
  repStamp?: number;
  /** ...and, on a representative, the routes of the neighbour being flushed that share it. */
  peerStamp?: number;
  peerFirst?: OutRoute;
  peerMore?: OutRoute[];
}

interface PeerRib {
  session: Session;
  ibgp: boolean;
  /**
   * How many prefixes this neighbour has announced to us. Its Adj-RIB-In is not a table of its own: the
   * routes live once, among each prefix's candidates (a client of two reflectors in a thousand-node
   * cluster would otherwise hold every route twice over).
   */
  received: number;
  adjOut: Map<string, OutRoute>;
  pending: Set<string>;
  source?: RouteSource;
}

function validAs(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= 0xffffffff;
}

/** One canonical text and {@link Prefix} object per prefix, shared by everything that refers to it. */
export class PrefixTable {
  private readonly byText = new Map<string, { key: string; pfx: Prefix }>();
  /** IPv4 per prefix length by the address as a 32-bit integer: no text is built for a prefix seen before. */
  private readonly byV4 = Array.from({ length: 33 }, () => new Map<number, { key: string; pfx: Prefix }>());

  get size(): number {
    return this.byText.size;
  }

  /** The entry for `p` if it was interned before; never grows the table. */
  lookup(p: Prefix): { key: string; pfx: Prefix } | undefined {
    if (p.family === 4) return this.byV4[p.len]?.get(v4Int(p));
    return this.byText.get(formatPrefix(p));
  }

  intern(p: Prefix): { key: string; pfx: Prefix } {
    if (p.family === 4) {
      const m = this.byV4[p.len]!;
      const ip = v4Int(p);
      let rec = m.get(ip);
      if (!rec) {
        const text = formatPrefix(p);
        rec = this.byText.get(text) ?? { key: text, pfx: p };
        this.byText.set(text, rec);
        m.set(ip, rec);
      }
      return rec;
    }
    const text = formatPrefix(p);
    let have = this.byText.get(text);
    if (!have) {
      have = { key: text, pfx: p };
      this.byText.set(text, have);
    }
    return have;
  }
}

/** The network address of an IPv4 prefix as a signed 32-bit integer (host bits cleared). */
function v4Int(p: Prefix): number {
  const a = p.bytes;
  const mask = p.len === 0 ? 0 : -1 << (32 - p.len);
  return ((a[0]! << 24) | (a[1]! << 16) | (a[2]! << 8) | a[3]!) & mask;
}

export class BgpSpeaker extends EventEmitter {
  readonly routerId: string;
  readonly as: number;
  readonly clusterId?: string;
  private readonly transport: Transport;
  private readonly families: Afi[];
  private readonly sessions = new Map<string, Session>();
  private readonly ribs = new Map<Session, PeerRib>();
  /** Adj-RIBs-In by prefix: every candidate route, keyed by session (null for our own routes). */
  private readonly candidates = new Map<string, Route[]>();
  /** Neighbours in Established, the only ones a Loc-RIB change is propagated to. */
  private readonly up = new Set<PeerRib>();
  private readonly prefixes: PrefixTable;
  private readonly locRibMap = new Map<string, Route>();
  private listener?: Listener;
  private flushScheduled = false;
  /** Sessions with something in `pending`, so a flush does not walk every neighbour. */
  private readonly dirty = new Set<Session>();
  /**
   * Loc-RIB changes since the last flush, one entry per change however many neighbours there are (a
   * reflector with a thousand clients would otherwise touch a thousand pending sets per change); every
   * Established neighbour works through the same list at flush time, like an update group.
   */
  private changed: string[] = [];
  /** Parallel to `changed`: the change only matters to eBGP neighbours (iBGP-learned, not reflecting). */
  private changedEbgpOnly: boolean[] = [];
  /** Increments per flush and per neighbour within it, to mark flush-time bookkeeping as current. */
  private stamp = 0;
  private readonly sinkDesired = new Map<string, { op: 'install' | 'remove'; route: InstalledRoute }>();
  private readonly sinkBusy = new Set<string>();
  private started = false;
  private readonly localSource: RouteSource;

  constructor(readonly options: SpeakerOptions) {
    super();
    if (routerIdToNumber(options.routerId) === undefined || options.routerId === '0.0.0.0') {
      throw new BgpConfigError(
        'routerId',
        `${JSON.stringify(options.routerId)} is not a non-zero dotted quad such as 10.0.0.1`,
      );
    }
    if (!validAs(options.as))
      throw new BgpConfigError('as', `${options.as} is not an AS number (1..4294967295)`);
    const hold = options.holdTime ?? 90;
    if (!Number.isInteger(hold) || hold < 0 || hold > 65535 || hold === 1 || hold === 2) {
      throw new BgpConfigError('holdTime', `${hold} is not 0 or 3..65535 seconds`);
    }
    const cid = options.routeReflector?.clusterId;
    if (cid !== undefined && routerIdToNumber(cid) === undefined) {
      throw new BgpConfigError('clusterId', `${JSON.stringify(cid)} is not a dotted quad`);
    }
    this.routerId = options.routerId;
    this.as = options.as;
    this.clusterId = options.routeReflector ? (cid ?? options.routerId) : undefined;
    this.transport = options.transport ?? tcpTransport;
    this.families = options.families ?? [4, 6];
    this.prefixes = options.prefixTable ?? new PrefixTable();
    this.localSource = { ibgp: false, rrClient: false, routerId: this.routerId, as: this.as };
    for (const n of options.neighbors ?? []) this.addNeighbor(n);
  }

  get isRouteReflector(): boolean {
    return this.clusterId !== undefined;
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  /** Opens the listening socket (done by {@link start} too); lets many speakers listen before any connects. */
  async listen(): Promise<void> {
    if (this.listener || !this.options.listen) return;
    const { address, port } = this.options.listen;
    this.listener = await this.transport.listen(address, port, (s) => {
      const session = this.sessions.get(s.remoteAddress);
      if (!session) {
        this.log(`rejecting connection from unconfigured ${s.remoteAddress}`);
        s.write(encodeNotification(ErrorCode.Cease, CeaseSubcode.ConnectionRejected));
        s.end();
        return;
      }
      session.accept(s);
    });
  }

  /** Starts listening and connecting. */
  async start(): Promise<void> {
    if (this.started) return;
    await this.listen();
    this.started = true;
    for (const s of this.sessions.values()) s.start();
  }

  /** Port actually listened on (useful with port 0). */
  get listenPort(): number | undefined {
    return this.listener?.port;
  }

  /** Sends Cease (Administrative Shutdown) to every neighbour and stops listening. */
  async stop(): Promise<void> {
    this.started = false;
    for (const s of this.sessions.values()) s.stop(CeaseSubcode.AdministrativeShutdown);
    await this.listener?.close();
    this.listener = undefined;
    await this.settled();
  }

  /** Drops everything without NOTIFICATIONs (a crash, for simulations). */
  async destroy(): Promise<void> {
    this.started = false;
    for (const s of this.sessions.values()) s.destroy();
    await this.listener?.close();
    this.listener = undefined;
  }

  addNeighbor(n: NeighborConfig): void {
    const i = `neighbors[${n.address}]`;
    if (!parseIpAddr(n.address))
      throw new BgpConfigError(`${i}.address`, `${JSON.stringify(n.address)} is not an IP address`);
    if (!validAs(n.as)) throw new BgpConfigError(`${i}.as`, `${n.as} is not an AS number (1..4294967295)`);
    if (n.port !== undefined && (!Number.isInteger(n.port) || n.port < 1 || n.port > 65535)) {
      throw new BgpConfigError(`${i}.port`, `${n.port} is not a TCP port`);
    }
    if (this.sessions.has(n.address)) throw new BgpConfigError(`${i}`, 'neighbour configured twice');
    if (n.rrClient && !this.isRouteReflector) {
      throw new BgpConfigError(
        `${i}.rrClient`,
        'route-reflector clients need this speaker to be a route reflector',
      );
    }
    if (n.rrClient && n.as !== this.as)
      throw new BgpConfigError(`${i}.rrClient`, 'route-reflector clients must be iBGP');
    // Connect from the address we listen on, so the neighbour sees the address it has configured.
    const listen = this.options.listen;
    const specific = listen && listen.address !== '0.0.0.0' && listen.address !== '::';
    const cfg: NeighborConfig =
      n.localAddress === undefined && specific && parseIpAddr(listen.address)?.family === parseIpAddr(n.address)?.family
        ? { ...n, localAddress: listen.address }
        : n;
    const session = new Session(
      cfg,
      { routerId: this.routerId, as: this.as, families: this.families },
      {
        holdTime: this.options.holdTime ?? 90,
        keepaliveTime: this.options.keepaliveTime,
        connectRetryTime: this.options.connectRetryTime ?? 120,
      },
      this.transport,
      this.hooks,
    );
    this.sessions.set(n.address, session);
    this.ribs.set(session, {
      session,
      ibgp: session.isIbgp,
      received: 0,
      adjOut: new Map(),
      pending: new Set(),
    });
    if (this.started) session.start();
  }

  /** Removes a neighbour (Cease / Peer De-configured) and everything learned from it. */
  removeNeighbor(address: string): void {
    const s = this.sessions.get(address);
    if (!s) throw new BgpConfigError('neighbors', `no neighbour ${address}`);
    s.stop(CeaseSubcode.PeerDeconfigured);
    this.dropPeerRoutes(s);
    this.sessions.delete(address);
    this.ribs.delete(s);
  }

  /** Originates a route for `prefix` (e.g. a node's IPAM block). */
  advertise(prefix: string, opts: AdvertiseOptions = {}): void {
    const p = parsePrefix(prefix);
    if (!p)
      throw new BgpConfigError(
        'advertise',
        `${JSON.stringify(prefix)} is not a network in CIDR form such as 10.244.1.0/26`,
      );
    if (!this.families.includes(p.family))
      throw new BgpConfigError('advertise', `${prefix}: IPv${p.family} is not enabled`);
    const key = formatPrefix(p);
    const r: Route = {
      prefix: key,
      pfx: p,
      afi: p.family,
      nextHop:
        opts.nextHop ??
        this.options.localNextHop ??
        (this.options.listen ? this.options.listen.address : '0.0.0.0'),
      origin: 0,
      asPath: [],
      med: opts.med,
      localPref: opts.localPref,
      communities: opts.communities,
      source: this.localSource,
    };
    if (opts.nextHop) (r as Route & { fixedNextHop?: boolean }).fixedNextHop = true;
    this.setCandidate(key, r);
    this.decide(key);
  }

  /** Withdraws a route this speaker originated; false if it was not advertised. */
  withdraw(prefix: string): boolean {
    const p = parsePrefix(prefix);
    if (!p) throw new BgpConfigError('withdraw', `${JSON.stringify(prefix)} is not a network in CIDR form`);
    const key = formatPrefix(p);
    if (!this.candRemove(key, this.localSource)) return false;
    this.decide(key);
    return true;
  }

  /** Sends ROUTE-REFRESH to a neighbour for each negotiated family; false if it cannot. */
  refresh(address: string): boolean {
    const s = this.sessions.get(address);
    if (!s?.negotiated) return false;
    let ok = false;
    for (const f of s.negotiated.families) ok = s.requestRefresh(f) || ok;
    return ok;
  }

  /** The Loc-RIB, sorted by prefix. */
  locRib(): RibEntry[] {
    return [...this.locRibMap.values()]
      .map(toRibEntry)
      .sort((a, b) => (a.prefix < b.prefix ? -1 : a.prefix > b.prefix ? 1 : 0));
  }

  /** One Loc-RIB entry. */
  lookup(prefix: string): RibEntry | undefined {
    const p = parsePrefix(prefix);
    const r = p ? this.locRibMap.get(formatPrefix(p)) : undefined;
    return r ? toRibEntry(r) : undefined;
  }

  get locRibSize(): number {
    return this.locRibMap.size;
  }

  adjRibIn(address: string): RibEntry[] {
    const s = this.sessions.get(address);
    const src = s ? this.ribs.get(s)!.source : undefined;
    if (!src) return [];
    const out: RibEntry[] = [];
    for (const l of this.candidates.values()) for (const r of l) if (r.source === src) out.push(toRibEntry(r));
    return out;
  }

  /** What we last sent a neighbour: prefix, next hop and AS path as announced. */
  adjRibOut(
    address: string,
  ): { prefix: string; nextHop: string; asPath: number[]; originatorId?: string; clusterList?: string[] }[] {
    const s = this.sessions.get(address);
    if (!s) return [];
    return [...this.ribs.get(s)!.adjOut.values()].map((o) => ({
      prefix: formatPrefix(o.prefix),
      nextHop: o.nextHop,
      asPath: (o.attrs.asPath ?? []).flatMap((x) => x.asns),
      ...(o.attrs.originatorId ? { originatorId: o.attrs.originatorId } : {}),
      ...(o.attrs.clusterList ? { clusterList: o.attrs.clusterList } : {}),
    }));
  }

  peers(): PeerStatus[] {
    return [...this.sessions.values()].map((s) => {
      const n = s.negotiated;
      const rib = this.ribs.get(s)!;
      const st: PeerStatus = {
        address: s.config.address,
        port: s.config.port ?? 179,
        as: s.config.as,
        type: s.isIbgp ? 'ibgp' : 'ebgp',
        rrClient: s.config.rrClient ?? false,
        state: s.state,
        prefixesReceived: rib.received,
        prefixesAdvertised: rib.adjOut.size,
      };
      if (s.config.name) st.name = s.config.name;
      if (n) {
        st.routerId = n.remoteId;
        st.holdTime = n.holdTime;
        st.keepaliveTime = n.keepaliveTime;
        st.families = [...n.families];
        st.fourOctetAs = n.as4;
        st.routeRefresh = n.routeRefresh;
        st.uptimeSeconds = Math.round((Date.now() - (s.establishedAt ?? Date.now())) / 1000);
      }
      if (s.lastError) st.lastError = s.lastError;
      return st;
    });
  }

  peer(address: string): PeerStatus | undefined {
    return this.peers().find((p) => p.address === address);
  }

  /** Resolves once every sink operation queued so far has finished. */
  async settled(): Promise<void> {
    while (this.sinkBusy.size > 0) await new Promise((r) => setTimeout(r, 1));
  }

  // -------------------------------------------------------------------------------------------------------

  private readonly hooks: SessionHooks = {
    onEstablished: (s) => this.onEstablished(s),
    onDown: (s) => this.dropPeerRoutes(s),
    onUpdate: (s, m) => this.onUpdate(s, m),
    onRouteRefresh: (s, m) => this.onRouteRefresh(s, m),
    onStateChange: (s, from, to) => {
      this.log(`peer ${s.id}: ${from} -> ${to}`);
      this.emit('peer', { address: s.config.address, from, to });
    },
    log: (line) => this.log(line),
  };

  /** Adds or replaces the candidate from `r.source` (arrays: most prefixes have one or two candidates). */
  /** True when the source had no route for the prefix before. */
  private setCandidate(prefix: string, r: Route): boolean {
    const l = this.candidates.get(prefix);
    if (!l) {
      this.candidates.set(prefix, [r]);
      return true;
    }
    for (let i = 0; i < l.length; i++) {
      if (l[i]!.source === r.source) {
        l[i] = r;
        return false;
      }
    }
    l.push(r);
    return true;
  }

  private candRemove(prefix: string, source: RouteSource): boolean {
    const l = this.candidates.get(prefix);
    if (!l) return false;
    for (let i = 0; i < l.length; i++) {
      if (l[i]!.source !== source) continue;
      if (l.length === 1) this.candidates.delete(prefix);
      else {
        l[i] = l[l.length - 1]!;
        l.pop();
      }
      return true;
    }
    return false;
  }

  private onEstablished(s: Session): void {
    const rib = this.ribs.get(s);
    if (!rib) return;
    const n = s.negotiated!;
    rib.source = {
      address: s.config.address,
      name: s.config.name,
      ibgp: s.isIbgp,
      rrClient: s.config.rrClient ?? false,
      routerId: n.remoteId,
      as: n.remoteAs,
    };
    rib.adjOut.clear();
    this.up.add(rib);
    for (const p of this.locRibMap.keys()) rib.pending.add(p);
    this.dirty.add(s);
    this.scheduleFlush();
  }

  private dropPeerRoutes(s: Session): void {
    const rib = this.ribs.get(s);
    if (!rib) return;
    this.up.delete(rib);
    const affected: string[] = [];
    const src = rib.source;
    if (src && rib.received > 0) {
      for (const [p, l] of this.candidates) if (l.some((r) => r.source === src)) affected.push(p);
      for (const p of affected) this.candRemove(p, src);
    }
    rib.received = 0;
    rib.adjOut.clear();
    rib.pending.clear();
    for (const p of affected) this.decide(p);
  }

  private onUpdate(s: Session, m: UpdateMessage): void {
    const rib = this.ribs.get(s);
    const n = s.negotiated;
    if (!rib?.source || !n) return;
    const affected: string[] = [];
    if (n.families.has(4)) for (const p of m.withdrawn) this.withdrawIn(rib, p, affected);
    const un = m.attributes.mpUnreach;
    if (un && un.safi === SAFI_UNICAST) {
      const f: Afi | undefined = un.afi === AFI_IPV4 ? 4 : un.afi === AFI_IPV6 ? 6 : undefined;
      if (f && n.families.has(f)) for (const p of un.withdrawn) this.withdrawIn(rib, p, affected);
    }
    const a = m.attributes;
    const reach: { afi: Afi; nextHop: string; nlri: Prefix[] }[] = [];
    if (m.nlri.length > 0 && n.families.has(4)) reach.push({ afi: 4, nextHop: a.nextHop!, nlri: m.nlri });
    const mp = a.mpReach;
    if (mp && mp.safi === SAFI_UNICAST) {
      const f: Afi | undefined = mp.afi === AFI_IPV4 ? 4 : mp.afi === AFI_IPV6 ? 6 : undefined;
      if (f && n.families.has(f) && mp.nextHops[0])
        reach.push({ afi: f, nextHop: mp.nextHops[0], nlri: mp.nlri });
    }
    if (reach.length > 0) {
      const asPath: AsPathSegment[] = n.as4 ? a.asPath! : mergeAs4Path(a.asPath!, a.as4Path);
      // Loop prevention: our AS in the path (eBGP), our router ID as originator or our cluster in the
      // cluster list (RFC 4456 §8) make the route unusable, which is the same as a withdrawal.
      const looped =
        (!s.isIbgp && asPath.some((seg) => seg.asns.includes(this.as))) ||
        (s.isIbgp && a.originatorId === this.routerId) ||
        (this.clusterId !== undefined && (a.clusterList?.includes(this.clusterId) ?? false));
      for (const r of reach) {
        for (const p of r.nlri) {
          if (looped) {
            this.withdrawIn(rib, p, affected);
            continue;
          }
          const { key, pfx } = this.intern(p);
          const route: Route = {
            prefix: key,
            pfx,
            afi: r.afi,
            nextHop: r.nextHop,
            origin: a.origin!,
            asPath,
            med: a.med,
            localPref: s.isIbgp ? a.localPref : undefined,
            atomicAggregate: a.atomicAggregate,
            aggregator: a.aggregator,
            communities: a.communities,
            originatorId: s.isIbgp ? a.originatorId : undefined,
            clusterList: s.isIbgp ? a.clusterList : undefined,
            unknown: a.unknown,
            source: rib.source,
          };
          if (this.setCandidate(key, route)) rib.received++;
          affected.push(key);
        }
      }
    }
    for (const p of affected) this.decide(p);
  }

  private knownKey(p: Prefix): string | undefined {
    return this.prefixes.lookup(p)?.key;
  }

  private intern(p: Prefix): { key: string; pfx: Prefix } {
    return this.prefixes.intern(p);
  }

  private withdrawIn(rib: PeerRib, p: Prefix, affected: string[]): void {
    // Look up without interning: withdrawing something never announced must not grow any table.
    const key = this.knownKey(p);
    if (key === undefined) return;
    if (this.candRemove(key, rib.source!)) {
      rib.received--;
      affected.push(key);
    }
  }

  private onRouteRefresh(s: Session, m: RouteRefreshMessage): void {
    const f: Afi | undefined =
      m.safi !== SAFI_UNICAST ? undefined : m.afi === AFI_IPV4 ? 4 : m.afi === AFI_IPV6 ? 6 : undefined;
    const rib = this.ribs.get(s);
    // RFC 2918 §4: a refresh for a family we did not advertise is ignored.
    if (!f || !rib || !s.negotiated?.families.has(f)) return;
    this.log(`peer ${s.id}: route refresh for IPv${f}`);
    for (const [p, o] of rib.adjOut) if (o.afi === f) rib.adjOut.delete(p);
    for (const [p, r] of this.locRibMap) if (r.afi === f) rib.pending.add(p);
    this.dirty.add(s);
    this.scheduleFlush();
  }

  /** Runs the decision process for one prefix and propagates a change of best route. */
  private decide(prefix: string): void {
    const c = this.candidates.get(prefix);
    const best = c ? selectBest(c) : undefined;
    const old = this.locRibMap.get(prefix);
    if (best === old) return;
    if (best) this.locRibMap.set(prefix, best);
    else this.locRibMap.delete(prefix);
    // iBGP-learned routes go to iBGP neighbours only when reflecting; skip those that get neither.
    const ibgpSkip = !this.isRouteReflector && (!old || old.source.ibgp) && (!best || best.source.ibgp);
    if (this.up.size > 0) {
      this.changed.push(prefix);
      this.changedEbgpOnly.push(ibgpSkip);
      this.scheduleFlush();
    }
    this.toSink(prefix, old, best);
    if (this.listenerCount('route') > 0) {
      this.emit('route', { prefix, route: best ? toRibEntry(best) : undefined } satisfies RibChange);
    }
  }

  private toSink(prefix: string, old: Route | undefined, best: Route | undefined): void {
    const sink = this.options.routeSink;
    if (!sink) return;
    let next: { op: 'install' | 'remove'; route: InstalledRoute } | undefined;
    if (best?.source.address) {
      // Same forwarding entry when only attributes changed: nothing to program.
      if (!(old?.source.address && old.nextHop === best.nextHop))
        next = { op: 'install', route: installed(best) };
    } else if (old?.source.address) {
      next = { op: 'remove', route: installed(old) };
    }
    if (!next) return;
    if (this.sinkBusy.has(prefix)) {
      // An asynchronous operation on this prefix is in flight: only the latest wanted state follows it.
      this.sinkDesired.set(prefix, next);
      return;
    }
    this.applySink(sink, prefix, next);
  }

  /** One sink operation; synchronous sinks cost no bookkeeping, asynchronous ones are kept in order. */
  private applySink(
    sink: RouteSink,
    prefix: string,
    w: { op: 'install' | 'remove'; route: InstalledRoute },
  ): void {
    let r: Promise<void> | void;
    try {
      r = w.op === 'install' ? sink.install(w.route) : sink.remove(w.route);
    } catch (e) {
      this.log(`route ${prefix}: programming failed: ${(e as Error).message}`);
      return;
    }
    if (!r || typeof r.then !== 'function') return;
    this.sinkBusy.add(prefix);
    const next = () => {
      this.sinkBusy.delete(prefix);
      const want = this.sinkDesired.get(prefix);
      if (want) {
        this.sinkDesired.delete(prefix);
        this.applySink(sink, prefix, want);
      }
    };
    r.then(next, (e: Error) => {
      this.log(`route ${prefix}: programming failed: ${e.message}`);
      next();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  /** Sends every neighbour the difference between what it should have and its Adj-RIB-Out. */
  private flush(): void {
    const changed = this.changed;
    const ebgpOnly = this.changedEbgpOnly;
    this.changed = [];
    this.changedEbgpOnly = [];
    // Looked up once per flush, not once per neighbour.
    const bests: (Route | undefined)[] = new Array(changed.length);
    for (let i = 0; i < changed.length; i++) bests[i] = this.locRibMap.get(changed[i]!);
    const flushStamp = ++this.stamp;
    const reps = new Map<string, OutRoute>();
    const targets: Iterable<PeerRib> =
      changed.length > 0
        ? this.up
        : [...this.dirty].map((s) => this.ribs.get(s)).filter((r): r is PeerRib => r !== undefined);
    for (const rib of targets) {
      const s = rib.session;
      if (rib.pending.size === 0 && changed.length === 0) continue;
      if (s.state !== 'Established' || !rib.source) {
        rib.pending.clear();
        continue;
      }
      const ctx = s.codec;
      // Routes with equal attributes are packed together: each distinct attribute set has one
      // representative per flush (found through one map lookup per route, not per route and neighbour),
      // and the routes of this neighbour are collected on it, marked with this neighbour's stamp.
      const peerStamp = ++this.stamp;
      const groups: OutRoute[] = [];
      const withdrawals: Record<Afi, Prefix[]> = { 4: [], 6: [] };
      const one = (p: string, best: Route | undefined) => {
        const out = best ? this.exportFor(s, best) : undefined;
        const prev = rib.adjOut.get(p);
        if (out) {
          if (prev && (prev === out || prev.key === out.key)) return;
          rib.adjOut.set(p, out);
          if (out.repStamp !== flushStamp) {
            out.repStamp = flushStamp;
            let r = reps.get(out.key);
            if (!r) reps.set(out.key, (r = out));
            out.rep = r;
          }
          const r = out.rep!;
          if (r.peerStamp !== peerStamp) {
            r.peerStamp = peerStamp;
            r.peerFirst = out;
            r.peerMore = undefined;
            groups.push(r);
          } else (r.peerMore ??= [r.peerFirst!]).push(out);
        } else if (prev) {
          rib.adjOut.delete(p);
          withdrawals[prev.afi].push(prev.prefix);
        }
      };
      // A prefix both pending and changed is looked at twice; the second look finds it already sent.
      for (const p of rib.pending) one(p, this.locRibMap.get(p));
      rib.pending.clear();
      if (rib.ibgp) {
        for (let i = 0; i < changed.length; i++) if (!ebgpOnly[i]) one(changed[i]!, bests[i]);
      } else {
        for (let i = 0; i < changed.length; i++) one(changed[i]!, bests[i]);
      }
      const bufs: Buffer[] = [];
      for (const f of [4, 6] as Afi[])
        if (withdrawals[f].length) bufs.push(...encodeWithdrawals(f, withdrawals[f], ctx));
      for (const r of groups) {
        if (r.peerMore) bufs.push(...this.encodeGroup(r.peerMore, ctx));
        else bufs.push(...this.encodeGroup([r.peerFirst!], ctx));
      }
      if (bufs.length === 0) continue;
      s.stats.updatesOut += bufs.length;
      s.send(bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs));
    }
    this.dirty.clear();
  }

  private encodeGroup(g: OutRoute[], ctx: CodecContext): Buffer[] {
    const first = g[0]!;
    if (g.length === 1) {
      // A route sent to many neighbours is encoded once per AS-number width.
      first.bytes ??= new Map();
      let b = first.bytes.get(ctx.as4);
      if (!b) {
        b = encodeAnnouncements(
          first.afi,
          first.attrs,
          [first.prefix],
          ctx,
          first.afi === 6 ? [first.nextHop] : undefined,
        );
        first.bytes.set(ctx.as4, b);
      }
      return b;
    }
    return encodeAnnouncements(
      first.afi,
      first.attrs,
      g.map((o) => o.prefix),
      ctx,
      first.afi === 6 ? [first.nextHop] : undefined,
    );
  }

  private selfNextHop(afi: Afi, localAddress: string): string {
    const local = parseIpAddr(localAddress);
    if (afi === 4) return local?.family === 4 ? localAddress : (this.options.localNextHop ?? localAddress);
    if (local?.family === 6) return localAddress;
    return this.options.nextHop6 ?? `::ffff:${localAddress}`;
  }

  /** The route as `s` should receive it, or undefined if it must not be sent (RFC 4271 §9.2, RFC 4456 §6). */
  private exportFor(s: Session, best: Route): OutRoute | undefined {
    const n = s.negotiated!;
    if (!n.families.has(best.afi)) return undefined;
    const src = best.source;
    if (src.address === s.config.address) return undefined;
    const local = src.address === undefined;
    const fixedNh = local && (best as Route & { fixedNextHop?: boolean }).fixedNextHop;
    let cls: string;
    if (!s.isIbgp) cls = `e|${n.localAddress}`;
    else if (local) cls = `il|${n.localAddress}`;
    else if (!src.ibgp) cls = s.config.nextHopSelf ? `is|${n.localAddress}` : 'ie';
    else {
      if (!this.isRouteReflector) return undefined;
      if (!src.rrClient && !s.config.rrClient) return undefined;
      // The originator would drop its own route anyway (RFC 4456 §8); do not send it back.
      if ((best.originatorId ?? src.routerId) === n.remoteId) return undefined;
      cls = 'rr';
    }
    if (best.lastExportClass === cls) return best.lastExport as OutRoute;
    best.exportCache ??= new Map();
    const cached = best.exportCache.get(cls) as OutRoute | undefined;
    if (cached) {
      best.lastExportClass = cls;
      best.lastExport = cached;
      return cached;
    }
    const attrs = routeAttributes(best);
    let nextHop: string;
    if (cls.startsWith('e|')) {
      attrs.asPath = prependAs(best.asPath, this.as);
      nextHop = fixedNh ? best.nextHop : this.selfNextHop(best.afi, n.localAddress);
      if (local && best.med !== undefined) attrs.med = best.med;
    } else {
      nextHop =
        cls === 'ie' || cls === 'rr' || fixedNh ? best.nextHop : this.selfNextHop(best.afi, n.localAddress);
      attrs.localPref = best.localPref ?? 100;
      if (best.med !== undefined) attrs.med = best.med;
      if (cls === 'rr') {
        attrs.originatorId = best.originatorId ?? src.routerId;
        attrs.clusterList = [this.clusterId!, ...(best.clusterList ?? [])];
      } else if (best.originatorId) {
        attrs.originatorId = best.originatorId;
        if (best.clusterList) attrs.clusterList = best.clusterList;
      }
    }
    if (best.afi === 4) attrs.nextHop = nextHop;
    const out: OutRoute = {
      afi: best.afi,
      prefix: best.pfx,
      attrs,
      nextHop,
      key: attributeKey(best.afi, nextHop, attrs),
    };
    best.exportCache.set(cls, out);
    best.lastExportClass = cls;
    best.lastExport = out;
    return out;
  }
}

const NO_ASNS: number[] = [];

function installed(r: Route): InstalledRoute {
  const asPath: number[] = r.asPath.length === 0 ? NO_ASNS : [];
  for (const seg of r.asPath) for (const a of seg.asns) asPath.push(a);
  return { prefix: r.prefix, afi: r.afi, nextHop: r.nextHop, asPath, peer: r.source.address! };
}

function prependAs(path: AsPathSegment[], as: number): AsPathSegment[] {
  const first = path[0];
  if (first && first.type === AsPathSegmentType.AsSequence && first.asns.length < 255) {
    return [{ type: AsPathSegmentType.AsSequence, asns: [as, ...first.asns] }, ...path.slice(1)];
  }
  return [{ type: AsPathSegmentType.AsSequence, asns: [as] }, ...path];
}

function attributeKey(afi: Afi, nextHop: string, a: PathAttributes): string {
  return JSON.stringify([
    afi,
    nextHop,
    a.origin,
    a.asPath,
    a.med,
    a.localPref,
    a.atomicAggregate,
    a.aggregator,
    a.communities,
    a.originatorId,
    a.clusterList,
    a.unknown?.map((u) => [u.flags, u.type, Buffer.from(u.value).toString('hex')]),
  ]);
}
