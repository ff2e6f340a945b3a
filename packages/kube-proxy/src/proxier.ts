// One node's kube-proxy: watches Services and EndpointSlices and keeps the node's rules in step, with
// changes batched (a sync at most every minSyncPeriod, as --iptables-min-sync-period) and a periodic
// full sync (skipped on a sink that can tell nobody changed its tables and no object changed since the last
// sync: thousands of emulated nodes would otherwise each rewrite the same rules every period). iptables mode writes the whole rule set each sync and deletes chains of Services that went;
// nftables mode (--proxy-mode=nftables) rewrites only the service ports whose rules changed since the
// last sync, and everything on the first and each periodic sync.
import { type EndpointSlice, InformerFactory, type Service, type Store } from '@kemu/core';
import { buildRules, type NodeContext, restoreInput } from './iptables-rules.js';
import { buildNftables, listedObjects, NFT_TABLE, type NftNodeContext, type NftRules, nftablesScript } from './nftables-rules.js';
import type { RuleSink } from './rule-sink.js';
import { type ServicePortInfo, servicePorts } from './service-ports.js';

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
  /** Services or EndpointSlices changed since the last successful sync began. */
  private changed = true;
  /** The sink's generation right after the last successful sync (see RuleSink.generation). */
  private written: number | undefined;

  constructor(private readonly o: ProxierOptions) {
    this.factory = new InformerFactory(o.store);
    const onError = (e: unknown) => o.onError?.(e);
    this.services = this.factory.informer('Service', { onError });
    this.slices = this.factory.informer('EndpointSlice', { onError });
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

  private async syncIptables(ports: ServicePortInfo[]): Promise<number> {
    const rules = buildRules(ports, this.o);
    await this.o.sink.restore(restoreInput(rules, await this.o.sink.save()));
    return rules.filter.length + rules.nat.length;
  }

  private async syncNftables(ports: ServicePortInfo[]): Promise<number> {
    const nft = this.o.sink.nft;
    if (!nft) throw new Error('nftables mode: this node\'s rule sink cannot run nft');
    const rules = buildNftables(ports, this.o);
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
        const ports = servicePorts(this.services.indexer.list() as Service[], this.slices.indexer.list() as EndpointSlice[]);
        const count = this.o.mode === 'nftables' ? await this.syncNftables(ports) : await this.syncIptables(ports);
        await this.clearStaleUdp(ports);
        this.last = { at: Date.now(), durationMs: performance.now() - start, servicePorts: ports.length, rules: count };
        this.written = this.o.sink.generation?.();
      } catch (err) {
        this.changed = true;
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
