/**
 * One BGP session with one configured neighbour: the RFC 4271 §8 finite state machine with its
 * ConnectRetry, Hold and Keepalive timers, hold-time negotiation, capability negotiation and connection
 * collision resolution (§6.8). A session may briefly own two TCP connections (ours and the peer's); only
 * one survives to Established. Route handling is left to the owner through {@link SessionHooks}.
 */
import { BgpError, CeaseSubcode, describeError, ErrorCode, FsmSubcode, OpenSubcode } from './errors.js';
import { type Afi, routerIdToNumber } from './router-id.js';
import {
  AFI_IPV4,
  AFI_IPV6,
  AS_TRANS,
  BGP_VERSION,
  type Capability,
  type CodecContext,
  decodeMessage,
  encodeKeepalive,
  encodeNotification,
  encodeOpen,
  encodeRouteRefresh,
  MessageReader,
  type OpenMessage,
  type RouteRefreshMessage,
  SAFI_UNICAST,
  type UpdateMessage,
} from './message.js';
import type { BgpSocket, Transport } from './transport.js';

export type SessionState = 'Idle' | 'Connect' | 'Active' | 'OpenSent' | 'OpenConfirm' | 'Established';

export interface NeighborConfig {
  /** The neighbour's address; incoming connections are matched on it. */
  address: string;
  /** The neighbour's BGP port (default 179). */
  port?: number;
  /** The neighbour's AS; equal to ours makes it an iBGP session. */
  as: number;
  /** Route-reflector client (RFC 4456); only meaningful when this speaker is a route reflector. */
  rrClient?: boolean;
  /** Never initiate the TCP connection; wait for the neighbour. */
  passive?: boolean;
  /** Source address for our outgoing connection. */
  localAddress?: string;
  /** Advertise ourselves as next hop even on iBGP (only changes routes learned over eBGP). */
  nextHopSelf?: boolean;
  /** Free-form name for logs and the Loc-RIB dump. */
  name?: string;
}

export interface SessionTimers {
  /** Proposed hold time in seconds (0 or ≥ 3; RFC 4271 suggests 90). */
  holdTime: number;
  /** Keepalive interval; default a third of the negotiated hold time. */
  keepaliveTime?: number;
  /** Seconds between connection attempts (RFC 4271 suggests 120). */
  connectRetryTime: number;
  /** Hold timer while waiting for the peer's OPEN (RFC 4271 suggests 4 minutes). */
  openHoldTime?: number;
}

export interface LocalIdentity {
  routerId: string;
  as: number;
  families: Afi[];
}

export interface Negotiated {
  holdTime: number;
  keepaliveTime: number;
  as4: boolean;
  routeRefresh: boolean;
  families: Set<Afi>;
  remoteId: string;
  remoteAs: number;
  localAddress: string;
  remoteAddress: string;
}

export interface SessionHooks {
  onEstablished(s: Session): void;
  /** The Established session went down (not called for sessions that never got there). */
  onDown(s: Session, reason: string): void;
  onUpdate(s: Session, m: UpdateMessage): void;
  onRouteRefresh(s: Session, m: RouteRefreshMessage): void;
  onStateChange?(s: Session, from: SessionState, to: SessionState): void;
  log?(line: string): void;
}

const stateRank: Record<string, number> = { OpenSent: 1, OpenConfirm: 2, Established: 3 };

class Connection {
  state: 'OpenSent' | 'OpenConfirm' | 'Established' | 'Closed' = 'OpenSent';
  readonly reader = new MessageReader();
  ctx: CodecContext = { as4: false };
  negotiated?: Negotiated;
  holdTimer?: NodeJS.Timeout;
  /** Hold time the running timer enforces, and when a message last restarted it (ms since epoch). */
  holdSeconds = 0;
  lastRx = 0;
  keepaliveTimer?: NodeJS.Timeout;
  constructor(
    readonly socket: BgpSocket,
    readonly outgoing: boolean,
  ) {}
}

export interface SessionError {
  direction: 'sent' | 'received' | 'local';
  code?: number;
  subcode?: number;
  message: string;
  at: string;
}

export class Session {
  state: SessionState = 'Idle';
  private conns = new Set<Connection>();
  private established?: Connection;
  private connectRetryTimer?: NodeJS.Timeout;
  private connecting = false;
  private running = false;
  lastError?: SessionError;
  establishedAt?: number;
  /** Counters for status output. */
  readonly stats = { updatesIn: 0, updatesOut: 0, messagesIn: 0, messagesOut: 0 };

  constructor(
    readonly config: NeighborConfig,
    private readonly local: LocalIdentity,
    private readonly timers: SessionTimers,
    private readonly transport: Transport,
    private readonly hooks: SessionHooks,
  ) {}

  get isIbgp(): boolean {
    return this.config.as === this.local.as;
  }

  get negotiated(): Negotiated | undefined {
    return this.established?.negotiated;
  }

  get codec(): CodecContext {
    return this.established?.ctx ?? { as4: false };
  }

  get id(): string {
    return this.config.name ?? this.config.address;
  }

  /** ManualStart: begin connecting (unless passive) and accept the neighbour's connections. */
  start(): void {
    if (this.running) return;
    this.running = true;
    if (this.config.passive) this.setState('Active');
    else this.connect();
  }

  /** ManualStop: Cease to every connection, then Idle; no automatic restart. */
  stop(subcode: number = CeaseSubcode.AdministrativeShutdown): void {
    this.running = false;
    clearTimeout(this.connectRetryTimer);
    for (const c of [...this.conns]) {
      this.sendNotification(c, new BgpError(ErrorCode.Cease, subcode));
    }
    this.setState('Idle');
  }

  /** Sends a message on the Established connection (the caller encodes with {@link codec}). */
  send(bytes: Uint8Array): boolean {
    const c = this.established;
    if (c?.state !== 'Established') return false;
    c.socket.write(bytes);
    this.stats.messagesOut++;
    return true;
  }

  /** Asks the neighbour to re-send its routes (RFC 2918); false when it did not offer route refresh. */
  requestRefresh(afi: Afi): boolean {
    const n = this.negotiated;
    if (!n?.routeRefresh || !n.families.has(afi)) return false;
    return this.send(encodeRouteRefresh(afi === 4 ? AFI_IPV4 : AFI_IPV6, SAFI_UNICAST));
  }

  /** An incoming TCP connection from this neighbour's address. */
  accept(socket: BgpSocket): void {
    if (!this.running) {
      socket.write(encodeNotification(ErrorCode.Cease, CeaseSubcode.ConnectionRejected));
      socket.end();
      return;
    }
    this.attach(socket, false);
  }

  private log(line: string): void {
    this.hooks.log?.(`peer ${this.id}: ${line}`);
  }

  private setState(to: SessionState): void {
    const from = this.state;
    if (from === to) return;
    this.state = to;
    this.hooks.onStateChange?.(this, from, to);
  }

  private refreshState(): void {
    let best = 0;
    for (const c of this.conns) best = Math.max(best, stateRank[c.state] ?? 0);
    if (this.established) this.setState('Established');
    else if (best === 2) this.setState('OpenConfirm');
    else if (best === 1) this.setState('OpenSent');
    else if (!this.running) this.setState('Idle');
    else this.setState(this.connecting ? 'Connect' : 'Active');
  }

  private connect(): void {
    if (!this.running || this.connecting || this.config.passive) return;
    clearTimeout(this.connectRetryTimer);
    this.connecting = true;
    this.refreshState();
    this.transport
      .connect({
        address: this.config.address,
        port: this.config.port ?? 179,
        localAddress: this.config.localAddress,
      })
      .then(
        (socket) => {
          this.connecting = false;
          if (!this.running || this.established) {
            socket.destroy();
            this.refreshState();
            return;
          }
          this.attach(socket, true);
        },
        (e: Error) => {
          this.connecting = false;
          this.log(`connect failed: ${e.message}`);
          this.refreshState();
          this.scheduleRetry();
        },
      );
  }

  private scheduleRetry(): void {
    if (!this.running || this.config.passive) return;
    clearTimeout(this.connectRetryTimer);
    this.connectRetryTimer = setTimeout(() => {
      if (this.running && !this.established && this.conns.size === 0) this.connect();
      else this.scheduleRetry();
    }, this.timers.connectRetryTime * 1000);
  }

  private attach(socket: BgpSocket, outgoing: boolean): void {
    const c = new Connection(socket, outgoing);
    this.conns.add(c);
    socket.onData((chunk) => this.onData(c, chunk));
    socket.onClose((err) => this.onClosed(c, err ? `connection error: ${err.message}` : 'connection closed'));
    socket.write(this.openMessage());
    this.stats.messagesOut++;
    this.armHold(c, this.timers.openHoldTime ?? 240);
    this.refreshState();
  }

  private openMessage(): Buffer {
    const caps: Capability[] = [];
    for (const f of this.local.families)
      caps.push({ kind: 'multiprotocol', afi: f === 4 ? AFI_IPV4 : AFI_IPV6, safi: SAFI_UNICAST });
    caps.push({ kind: 'route-refresh' });
    caps.push({ kind: 'as4', as: this.local.as });
    return encodeOpen({
      version: BGP_VERSION,
      myAs: this.local.as > 0xffff ? AS_TRANS : this.local.as,
      holdTime: this.timers.holdTime,
      bgpId: this.local.routerId,
      capabilities: caps,
    });
  }

  /**
   * (Re)starts the hold timer. Restarting it for every UPDATE of a table dump would cost a timer-list
   * operation per message; instead the time of the last message is noted and the timer, when it fires,
   * re-arms itself for whatever is left.
   */
  private armHold(c: Connection, seconds: number): void {
    c.lastRx = Date.now();
    if (c.holdTimer && c.holdSeconds === seconds) return;
    clearTimeout(c.holdTimer);
    c.holdTimer = undefined;
    c.holdSeconds = seconds;
    if (seconds <= 0) return;
    const fire = () => {
      const left = seconds * 1000 - (Date.now() - c.lastRx);
      if (left > 0) {
        c.holdTimer = setTimeout(fire, left);
        return;
      }
      this.sendNotification(
        c,
        new BgpError(ErrorCode.HoldTimerExpired, 0, undefined, `no message for ${seconds} s`),
      );
    };
    c.holdTimer = setTimeout(fire, seconds * 1000);
  }

  private onData(c: Connection, chunk: Buffer): void {
    if (c.state === 'Closed') return;
    c.reader.push(chunk);
    try {
      for (;;) {
        if ((c.state as string) === 'Closed') return;
        const raw = c.reader.next();
        if (!raw) return;
        this.stats.messagesIn++;
        const m = decodeMessage(raw.type, raw.body, c.ctx);
        this.onMessage(c, m);
      }
    } catch (e) {
      if (e instanceof BgpError) this.sendNotification(c, e);
      else {
        this.log(`internal error: ${(e as Error).stack ?? e}`);
        this.sendNotification(c, new BgpError(ErrorCode.Cease, CeaseSubcode.OutOfResources));
      }
    }
  }

  private onMessage(c: Connection, m: ReturnType<typeof decodeMessage>): void {
    if (m.type === 'notification') {
      const text = describeError(m.code, m.subcode);
      this.lastError = {
        direction: 'received',
        code: m.code,
        subcode: m.subcode,
        message: text,
        at: new Date().toISOString(),
      };
      this.log(`received NOTIFICATION ${m.code}/${m.subcode} (${text})`);
      this.close(c, `received NOTIFICATION: ${text}`);
      return;
    }
    switch (c.state) {
      case 'OpenSent':
        if (m.type !== 'open')
          throw new BgpError(
            ErrorCode.FsmError,
            FsmSubcode.UnexpectedInOpenSent,
            undefined,
            `${m.type} before OPEN`,
          );
        this.onOpen(c, m);
        return;
      case 'OpenConfirm':
        if (m.type !== 'keepalive') {
          throw new BgpError(
            ErrorCode.FsmError,
            FsmSubcode.UnexpectedInOpenConfirm,
            undefined,
            `${m.type} in OpenConfirm`,
          );
        }
        this.armHold(c, c.negotiated!.holdTime);
        this.onEstablished(c);
        return;
      case 'Established':
        switch (m.type) {
          case 'keepalive':
            this.armHold(c, c.negotiated!.holdTime);
            return;
          case 'update':
            this.armHold(c, c.negotiated!.holdTime);
            this.stats.updatesIn++;
            this.hooks.onUpdate(this, m);
            return;
          case 'route-refresh':
            this.hooks.onRouteRefresh(this, m);
            return;
          default:
            throw new BgpError(
              ErrorCode.FsmError,
              FsmSubcode.UnexpectedInEstablished,
              undefined,
              `${m.type} in Established`,
            );
        }
    }
  }

  private onOpen(c: Connection, m: OpenMessage): void {
    const as4cap = m.capabilities.find((x) => x.kind === 'as4');
    const remoteAs = as4cap?.kind === 'as4' ? as4cap.as : m.myAs;
    if (remoteAs !== this.config.as) {
      throw new BgpError(
        ErrorCode.OpenMessage,
        OpenSubcode.BadPeerAs,
        Uint8Array.of(m.myAs >> 8, m.myAs & 0xff),
        `peer says AS ${remoteAs}, configured AS ${this.config.as}`,
      );
    }
    if (m.holdTime === 1 || m.holdTime === 2) {
      throw new BgpError(
        ErrorCode.OpenMessage,
        OpenSubcode.UnacceptableHoldTime,
        undefined,
        `hold time ${m.holdTime}`,
      );
    }
    const rid = routerIdToNumber(m.bgpId)!;
    if (rid === 0 || (this.isIbgp && m.bgpId === this.local.routerId)) {
      throw new BgpError(
        ErrorCode.OpenMessage,
        OpenSubcode.BadBgpIdentifier,
        undefined,
        `BGP identifier ${m.bgpId}`,
      );
    }
    // Connection collision (RFC 4271 §6.8): the connection opened by the higher BGP identifier survives.
    for (const other of this.conns) {
      if (other === c || other.state === 'Closed') continue;
      if (other.state === 'Established') {
        this.sendNotification(c, new BgpError(ErrorCode.Cease, CeaseSubcode.ConnectionCollisionResolution));
        return;
      }
      if (other.state === 'OpenConfirm') {
        const localWins = routerIdToNumber(this.local.routerId)! > rid;
        // Keep the connection initiated by the side with the higher identifier.
        const loser = localWins ? (c.outgoing ? other : c) : c.outgoing ? c : other;
        this.sendNotification(
          loser,
          new BgpError(ErrorCode.Cease, CeaseSubcode.ConnectionCollisionResolution),
        );
        if (loser === c) return;
      }
    }
    const theirFamilies = new Set<Afi>();
    let sawMp = false;
    for (const cap of m.capabilities) {
      if (cap.kind !== 'multiprotocol') continue;
      sawMp = true;
      if (cap.safi !== SAFI_UNICAST) continue;
      if (cap.afi === AFI_IPV4) theirFamilies.add(4);
      if (cap.afi === AFI_IPV6) theirFamilies.add(6);
    }
    // Without any multiprotocol capability, a peer speaks IPv4 unicast only (RFC 4760 §8).
    if (!sawMp) theirFamilies.add(4);
    const families = new Set<Afi>(this.local.families.filter((f) => theirFamilies.has(f)));
    const holdTime = Math.min(this.timers.holdTime, m.holdTime);
    const keepaliveTime =
      holdTime === 0
        ? 0
        : Math.max(
            1,
            Math.min(this.timers.keepaliveTime ?? Math.floor(holdTime / 3), Math.floor(holdTime / 3)),
          );
    c.ctx = { as4: as4cap !== undefined };
    c.negotiated = {
      holdTime,
      keepaliveTime,
      as4: as4cap !== undefined,
      routeRefresh: m.capabilities.some((x) => x.kind === 'route-refresh'),
      families,
      remoteId: m.bgpId,
      remoteAs,
      localAddress: c.socket.localAddress,
      remoteAddress: c.socket.remoteAddress,
    };
    c.state = 'OpenConfirm';
    c.socket.write(encodeKeepalive());
    this.stats.messagesOut++;
    this.armHold(c, holdTime);
    this.startKeepalives(c);
    this.refreshState();
  }

  private startKeepalives(c: Connection): void {
    clearInterval(c.keepaliveTimer);
    const k = c.negotiated?.keepaliveTime ?? 0;
    if (k <= 0) return;
    c.keepaliveTimer = setInterval(() => {
      if (c.state === 'OpenConfirm' || c.state === 'Established') {
        c.socket.write(encodeKeepalive());
        this.stats.messagesOut++;
      }
    }, k * 1000);
  }

  private onEstablished(c: Connection): void {
    c.state = 'Established';
    this.established = c;
    this.establishedAt = Date.now();
    clearTimeout(this.connectRetryTimer);
    this.log(
      `Established (hold ${c.negotiated!.holdTime} s, remote id ${c.negotiated!.remoteId}, ${c.outgoing ? 'outgoing' : 'incoming'})`,
    );
    this.setState('Established');
    this.hooks.onEstablished(this);
  }

  /** Sends the NOTIFICATION for `err` on `c` and closes that connection only. */
  private sendNotification(c: Connection, err: BgpError): void {
    if (c.state === 'Closed') return;
    const text = describeError(err.code, err.subcode);
    if (err.code !== ErrorCode.Cease || err.subcode !== CeaseSubcode.ConnectionCollisionResolution) {
      this.lastError = {
        direction: 'sent',
        code: err.code,
        subcode: err.subcode,
        message: err.message,
        at: new Date().toISOString(),
      };
    }
    this.log(`sending NOTIFICATION ${err.code}/${err.subcode} (${err.message})`);
    c.socket.write(encodeNotification(err.code, err.subcode, err.data));
    this.close(c, `sent NOTIFICATION: ${text}`, true);
  }

  private close(c: Connection, reason: string, graceful = false): void {
    if (c.state === 'Closed') return;
    const wasEstablished = c.state === 'Established';
    c.state = 'Closed';
    clearTimeout(c.holdTimer);
    clearInterval(c.keepaliveTimer);
    this.conns.delete(c);
    if (graceful) c.socket.end();
    else c.socket.destroy();
    if (wasEstablished && this.established === c) {
      this.established = undefined;
      this.establishedAt = undefined;
      this.log(`session down: ${reason}`);
      this.refreshState();
      this.hooks.onDown(this, reason);
    } else {
      this.refreshState();
    }
    if (this.running && !this.established && this.conns.size === 0) this.scheduleRetry();
  }

  private onClosed(c: Connection, reason: string): void {
    if (c.state !== 'Closed' && !this.lastError) {
      this.lastError = { direction: 'local', message: reason, at: new Date().toISOString() };
    }
    this.close(c, reason);
  }

  /** Drops every connection without a NOTIFICATION (process exit, tests). */
  destroy(): void {
    this.running = false;
    clearTimeout(this.connectRetryTimer);
    for (const c of [...this.conns]) this.close(c, 'destroyed');
    this.setState('Idle');
  }
}
