// Leader election on a coordination.k8s.io Lease, with client-go's rules: a lease held by someone else is
// respected until leaseDuration has passed since *we* last saw it change (local clock only, so clock skew
// between contenders does not matter); the leader renews every retryPeriod and steps down if it cannot
// renew within renewDeadline.
import type { Lease } from './api-misc.js';
import { microTime } from './api-meta.js';
import { isAlreadyExists, isConflict, isNotFound } from './errors.js';
import type { Store } from './store.js';

export interface LeaderCallbacks {
  /** Called when this contender becomes leader; `signal` aborts when leadership is lost. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** Called when leadership ends (lost or released). */
  onStoppedLeading?(): void;
  /** Called whenever the observed leader changes (including to ourselves). */
  onNewLeader?(identity: string): void;
}

export interface LeaderElectionConfig {
  store: Store;
  /** Lease namespace (default kube-system) and name. */
  namespace?: string;
  name: string;
  /** Unique identity of this contender (e.g. hostname + pid). */
  identity: string;
  /** How long a lease is valid after its last observed renewal (default 15 s). */
  leaseDurationMs?: number;
  /** A leader that cannot renew for this long steps down (default 10 s; must be < leaseDuration). */
  renewDeadlineMs?: number;
  /** Interval between acquire/renew attempts (default 2 s). */
  retryPeriodMs?: number;
  /** On stop(), clear the holder so another contender can take over at once (default true). */
  releaseOnCancel?: boolean;
  callbacks: LeaderCallbacks;
}

const JITTER = 1.2;

export class LeaderElector {
  private readonly ns: string;
  private readonly leaseMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private observed: { holder: string; renewTime: string; rv: string } | undefined;
  private observedAt = 0;
  private leading = false;
  private leader = '';
  private stopCtl = new AbortController();
  private leaderCtl: AbortController | undefined;

  constructor(readonly config: LeaderElectionConfig) {
    this.ns = config.namespace ?? 'kube-system';
    this.leaseMs = config.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = config.renewDeadlineMs ?? 10_000;
    this.retryMs = config.retryPeriodMs ?? 2_000;
    if (this.renewDeadlineMs >= this.leaseMs) throw new Error('leaseDuration must be greater than renewDeadline');
    if (this.retryMs * JITTER >= this.renewDeadlineMs) throw new Error('renewDeadline must be greater than retryPeriod*JitterFactor');
    if (!config.identity) throw new Error('leader election requires an identity');
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The identity holding the lease as last observed ('' if none). */
  getLeader(): string {
    return this.leader;
  }

  private sleep(ms: number): Promise<void> {
    const signal = this.stopCtl.signal;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private setLeader(id: string): void {
    if (id !== this.leader) {
      this.leader = id;
      if (id) this.config.callbacks.onNewLeader?.(id);
    }
  }

  /** One attempt to acquire or renew. True when we hold the lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { store, identity, name } = this.config;
    const now = new Date();
    const leaseSeconds = Math.max(1, Math.ceil(this.leaseMs / 1000));
    let cur: Lease;
    try {
      cur = (await store.get('Lease', this.ns, name)) as Lease;
    } catch (e) {
      if (!isNotFound(e)) return false;
      try {
        await store.create({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace: this.ns },
          spec: { holderIdentity: identity, leaseDurationSeconds: leaseSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
        });
        this.observedAt = performance.now();
        this.setLeader(identity);
        return true;
      } catch (e2) {
        if (!isAlreadyExists(e2)) return false;
        return false;
      }
    }
    const spec = cur.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const record = { holder, renewTime: spec.renewTime ?? '', rv: cur.metadata.resourceVersion ?? '' };
    if (!this.observed || this.observed.holder !== record.holder || this.observed.renewTime !== record.renewTime) {
      this.observed = record;
      this.observedAt = performance.now();
    }
    this.setLeader(holder);
    const validFor = (spec.leaseDurationSeconds ?? leaseSeconds) * 1000;
    if (holder && holder !== identity && this.observedAt + validFor > performance.now()) return false;
    const next: Lease = {
      ...cur,
      spec: {
        holderIdentity: identity,
        leaseDurationSeconds: leaseSeconds,
        acquireTime: holder === identity ? spec.acquireTime : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: holder === identity ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      const updated = (await store.update(next)) as Lease;
      this.observed = { holder: identity, renewTime: updated.spec?.renewTime ?? '', rv: updated.metadata.resourceVersion ?? '' };
      this.observedAt = performance.now();
      this.setLeader(identity);
      return true;
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) return false;
      return false;
    }
  }

  /**
   * Contend until elected, lead until the lease is lost or stop() is called, then return.
   * Like client-go, run() does not contend again afterwards: call it again to rejoin.
   */
  async run(): Promise<void> {
    // Acquire.
    while (!this.stopCtl.signal.aborted) {
      if (await this.tryAcquireOrRenew()) break;
      await this.sleep(this.retryMs * (1 + Math.random() * (JITTER - 1)));
    }
    if (this.stopCtl.signal.aborted) return;
    this.leading = true;
    this.leaderCtl = new AbortController();
    const leaderSignal = this.leaderCtl.signal;
    const work = Promise.resolve()
      .then(() => this.config.callbacks.onStartedLeading(leaderSignal))
      .catch(() => undefined);
    // Renew.
    let lastRenew = performance.now();
    while (!this.stopCtl.signal.aborted) {
      await this.sleep(this.retryMs);
      if (this.stopCtl.signal.aborted) break;
      if (await this.tryAcquireOrRenew()) lastRenew = performance.now();
      else if (performance.now() - lastRenew >= this.renewDeadlineMs || (this.leader && this.leader !== this.config.identity)) break;
    }
    this.leading = false;
    this.leaderCtl.abort();
    if (this.stopCtl.signal.aborted && this.config.releaseOnCancel !== false) await this.release();
    this.config.callbacks.onStoppedLeading?.();
    await work;
  }

  /** Give up the lease if we hold it, so others need not wait for expiry. */
  private async release(): Promise<void> {
    try {
      const cur = (await this.config.store.get('Lease', this.ns, this.config.name)) as Lease;
      if (cur.spec?.holderIdentity !== this.config.identity) return;
      const now = microTime();
      await this.config.store.update({
        ...cur,
        spec: { ...cur.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
      });
      this.setLeader('');
    } catch {
      // Best effort: the lease expires on its own.
    }
  }

  /** Stop contending or leading; run() returns after releasing the lease. */
  stop(): void {
    this.stopCtl.abort();
  }
}
