// One node's kube-proxy: watches Services and EndpointSlices and keeps the node's rules in step, with
// changes batched (a sync at most every minSyncPeriod, as --iptables-min-sync-period) and a periodic
// full sync (skipped on a sink that can tell nobody changed its tables and no object changed since the last
// sync: thousands of emulated nodes would otherwise each rewrite the same rules every period). Both modes
// track which Services changed (change-tracker.ts) and rebuild only their rules: iptables mode then writes
// the shared chains and the changed Services' own chains (upstream's partial sync; the first and each
// periodic sync write everything), nftables mode only the service ports whose rules changed.
import { InformerFactory, type Store } from '@kemu/core';
import { PER_SERVICE_CHAIN } from './chain-names.js';
import { ChangeTracker } from './change-tracker.js';
import { assembleRules, type NodeContext, partialRestoreInput, restoreInput, type ServiceRules, serviceRules, sharedChains } from './iptables-rules.js';
import {
  listedObjects,
  NFT_TABLE,
  nftBase,
  type NftNodeContext,
  type NftRules,
  type NftServiceRules,
  nftablesScript,
  nftServiceRules,
} from './nftables-rules.js';
import type { RuleSink } from './rule-sink.js';
import type { ServicePortInfo } from './service-ports.js';

export type ProxyMode = 'iptables' | 'nftables';

export interface ProxierOptions extends NodeContext, NftNodeContext {
  store: Store;
  sink: RuleSink;
  /** Upstream's --proxy-mode: iptables (default) or nftables. */
  mode?: ProxyMode;
  /** Shortest time between two syncs (default 1 s, upstream's --iptables-min-sync-period). */
  minSyncPeriodMs?: number;
  /** A full sync at least this often (default 30 s, upstream's --iptables-sync-period). */
  syncPeriodMs?: number;
  onError?: (err: unknown) => void;
}

export interface SyncStats {
  /** When the sync finished (ms since epoch) and how long it took. */
  at: number;
  durationMs: number;
  servicePorts: number;
  rules: number;
}

export class Proxier {
  private readonly factory: InformerFactory;
  private readonly services;
  private readonly slices;
  private timer?: NodeJS.Timeout;
  private periodic?: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private dirty = false;
  private lastRun = 0;
  private stopped = false;
  last?: SyncStats;
  /** UDP service ports as of the last sync: cluster IP and endpoint addresses, for conntrack cleanup. */
  private udp = new Map<string, { clusterIP: string; endpoints: Set<string> }>();
  /** nftables mode: the rules the last successful sync wrote (null: the next sync is a full one). */
  private nftWritten: NftRules | null = null;
  /** Which Services changed since the last sync, and every Service's service ports. */
  private readonly tracker: ChangeTracker;
  /** Each Service's rules per service port (iptables or nftables mode), rebuilt only when it changes. */
  private readonly iptParts = new Map<string, ServiceRules[]>();
  private readonly nftParts = new Map<string, [string, NftServiceRules][]>();
  /** iptables mode: the per-service chains the last sync left in the tables (null: the next sync is a full one). */
  private iptChains: Set<string> | null = null;
  /** iptables mode: the shared chains' rules as the last sync left them (see partialRestoreInput). */
  private iptShared = new Map<string, string>();
  /** Services or EndpointSlices changed since the last successful sync began. */
  private changed = true;
  /** The sink's generation right after the last successful sync (see RuleSink.generation). */
  private written: number | undefined;

  constructor(private readonly o: ProxierOptions) {
    this.factory = new InformerFactory(o.store);
    const onError = (e: unknown) => o.onError?.(e);
    this.services = this.factory.informer('Service', { onError });
    this.slices = this.factory.informer('EndpointSlice', { onError });
    this.tracker = new ChangeTracker(this.services, this.slices);
    const onChange = () => {
      this.changed = true;
      this.schedule();
    };
    const changed = { onAdd: onChange, onUpdate: onChange, onDelete: onChange };
    this.services.addEventHandler(changed);
    this.slices.addEventHandler(changed);
  }

  async start(): Promise<void> {
    this.factory.start();
    await this.factory.waitForCacheSync();
    await this.syncNow();
    this.periodic = setInterval(() => {
      // Nothing to repair when neither the objects nor the tables changed since the last sync wrote them.
      if (!this.changed && this.written !== undefined && this.o.sink.generation?.() === this.written) return;
      this.nftWritten = null;
      this.iptChains = null;
      this.schedule();
    }, this.o.syncPeriodMs ?? 30_000);
    this.periodic.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.periodic);
    await this.factory.stop();
    await this.running;
  }

  /** Asks for a sync; several changes within minSyncPeriod are one sync. */
  schedule(): void {
    if (this.stopped || !this.services.hasSynced() || !this.slices.hasSynced()) return;
    this.dirty = true;
    if (this.timer || this.running) return;
    const wait = Math.max(0, this.lastRun + (this.o.minSyncPeriodMs ?? 1000) - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.syncNow();
    }, wait);
    this.timer.unref?.();
  }

  /**
   * UDP has no connection end: a flow DNATed to an endpoint that went (or to a Service that went) would
   * keep its stale mapping until it idles out, so kube-proxy deletes those conntrack entries after a sync.
   */
  private async clearStaleUdp(ports: ServicePortInfo[]): Promise<void> {
    const now = new Map<string, { clusterIP: string; endpoints: Set<string> }>();
    for (const p of ports) if (p.protocol === 'udp') now.set(p.name, { clusterIP: p.clusterIP, endpoints: new Set(p.endpoints.map((e) => e.ip)) });
    const clear = this.o.sink.clearUdpConntrack?.bind(this.o.sink);
    if (clear) {
      for (const [name, before] of this.udp) {
        const after = now.get(name);
        if (!after || after.clusterIP !== before.clusterIP) await clear({ origDst: before.clusterIP });
        else for (const ip of before.endpoints) if (!after.endpoints.has(ip)) await clear({ replySrc: ip });
      }
    }
    this.udp = now;
  }

  /**
   * iptables mode. A full sync (the first, each period, after a failure) writes every chain and deletes the
   * per-service chains the tables hold that no rule names; a partial one (upstream's, on changes) rewrites
   * the shared chains and only the changed Services' own chains, and deletes the ones they no longer have.
   */
  private async syncIptables(changed: Set<string>): Promise<number> {
    for (const key of changed) {
      const ports = this.tracker.portsOf(key);
      if (ports.length) this.iptParts.set(key, ports.map((sp) => serviceRules(sp, this.o)));
      else this.iptParts.delete(key);
    }
    const parts: ServiceRules[] = [];
    for (const ps of this.iptParts.values()) for (const r of ps) parts.push(r);
    const known = this.iptChains;
    this.iptChains = null;
    let rules;
    if (!known) {
      rules = assembleRules(parts, this.o);
      await this.o.sink.restore(restoreInput(rules, await this.o.sink.save()));
      this.iptShared = sharedChains(rules);
      this.iptChains = new Set(rules.chains.nat.filter((c) => PER_SERVICE_CHAIN.test(c)));
    } else {
      const only: ServiceRules[] = [];
      for (const key of changed) for (const r of this.iptParts.get(key) ?? []) only.push(r);
      rules = assembleRules(parts, this.o, only);
      const now = new Set<string>();
      for (const r of parts) for (const c of r.chains) now.add(c);
      const stale: string[] = [];
      for (const c of known) if (!now.has(c)) stale.push(c);
      const text = partialRestoreInput(rules, stale, this.iptShared);
      if (text) await this.o.sink.restore(text);
      this.iptChains = now;
    }
    return rules.filter.length + rules.nat.length;
  }

  /** nftables mode: every Service's rules from its cached parts; the script touches only what changed. */
  private async syncNftables(changed: Set<string>): Promise<number> {
    const nft = this.o.sink.nft;
    if (!nft) throw new Error('nftables mode: this node\'s rule sink cannot run nft');
    for (const key of changed) {
      const ports = this.tracker.portsOf(key);
      if (ports.length) this.nftParts.set(key, ports.map((sp) => [`${sp.name}/${sp.protocol}`, nftServiceRules(sp, this.o)]));
      else this.nftParts.delete(key);
    }
    const services = new Map<string, NftServiceRules>();
    for (const ps of this.nftParts.values()) for (const [k, r] of ps) services.set(k, r);
    this.nftBaseText ??= nftBase(this.o);
    const rules: NftRules = { family: 4, base: this.nftBaseText, services };
    const previous = this.nftWritten;
    const existing = previous ? undefined : listedObjects(await nft.list('ip', NFT_TABLE));
    this.nftWritten = null;
    const script = nftablesScript(rules, previous, existing);
    if (script) await nft.apply(script);
    this.nftWritten = rules;
    let n = 0;
    for (const s of rules.services.values()) {
      n += s.elements.length;
      for (const r of s.chains.values()) n += r.length;
    }
    return n;
  }

  private nftBaseText: string | undefined;

  /** Writes the node's rules now from the informers' caches. */
  async syncNow(): Promise<void> {
    if (this.running) {
      this.dirty = true;
      return this.running;
    }
    this.dirty = false;
    this.running = (async () => {
      const start = performance.now();
      this.changed = false;
      this.written = undefined;
      try {
        const { changed } = this.tracker.update();
        const count = this.o.mode === 'nftables' ? await this.syncNftables(changed) : await this.syncIptables(changed);
        const ports: ServicePortInfo[] = [];
        for (const [, ps] of this.tracker.entries()) for (const sp of ps) ports.push(sp);
        await this.clearStaleUdp(ports);
        this.last = { at: Date.now(), durationMs: performance.now() - start, servicePorts: ports.length, rules: count };
        this.written = this.o.sink.generation?.();
      } catch (err) {
        this.changed = true;
        this.tracker.invalidate();
        this.o.onError?.(err);
      } finally {
        this.lastRun = Date.now();
        this.running = null;
      }
    })();
    await this.running;
    if (this.dirty) this.schedule();
  }
}
