// One node's policy agent: watches NetworkPolicies, Pods and Namespaces and keeps the node's policy
// chains in step (batched like kube-proxy's syncs), writing through the same rule sinks.
import { InformerFactory, type Namespace, type NetworkPolicy, type Pod, type Store } from '@kemu/core';
import type { RuleSink } from '@kemu/kube-proxy';
import { buildPolicyRules, holdsPolicyRules, policyRestoreInput } from './policy-rules.js';

export interface PolicyAgentOptions {
  store: Store;
  nodeName: string;
  sink: RuleSink;
  /**
   * Where the IPv6 rules go (ip6tables' filter table: save and a --noflush restore). Without it the
   * node's IPv6 traffic is not policed, as on a single-stack node.
   */
  sink6?: FilterSink;
  /** Shortest time between two syncs (default 1 s). */
  minSyncPeriodMs?: number;
  /**
   * Informers shared with the other agents of this process (one cache of every Pod for all nodes rather
   * than one per node); their owner starts and stops them. Default: informers of the agent's own.
   */
  informers?: InformerFactory;
  onError?: (err: unknown) => void;
}

/** A filter table that reads back (iptables-save) and takes iptables-restore --noflush input. */
export type FilterSink = Pick<RuleSink, 'save' | 'restore'>;

export class PolicyAgent {
  private readonly factory: InformerFactory;
  private readonly informers;
  private timer?: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private dirty = false;
  private lastRun = 0;
  private stopped = false;
  private readonly registrations: Array<{ remove(): void }> = [];
  private podHandler?: { remove(): void };

  constructor(private readonly o: PolicyAgentOptions) {
    this.factory = o.informers ?? new InformerFactory(o.store);
    const onError = (e: unknown) => o.onError?.(e);
    this.informers = {
      policies: this.factory.informer('NetworkPolicy', { onError }),
      pods: this.factory.informer('Pod', { onError }),
      namespaces: this.factory.informer('Namespace', { onError }),
    };
    const changed = { onAdd: () => this.schedule(), onUpdate: () => this.schedule(), onDelete: () => this.schedule() };
    const policyChanged = () => {
      this.followPods();
      this.schedule();
    };
    this.registrations.push(
      this.informers.policies.addEventHandler({ onAdd: policyChanged, onUpdate: policyChanged, onDelete: policyChanged }),
      this.informers.namespaces.addEventHandler(changed),
    );
  }

  /**
   * Pods only shape the rules through the policies selecting them, so the agent listens to Pod changes only
   * while a NetworkPolicy exists (the first policy's own event syncs with every pod then). With a cache
   * shared by every node, a handler per node would otherwise run for each Pod event on each node.
   */
  private followPods(): void {
    const want = !this.stopped && this.informers.policies.indexer.size > 0;
    if (want && !this.podHandler) this.podHandler = this.informers.pods.addEventHandler({ onAdd: () => this.schedule(), onUpdate: () => this.schedule(), onDelete: () => this.schedule() });
    else if (!want && this.podHandler) {
      this.podHandler.remove();
      this.podHandler = undefined;
    }
  }

  async start(): Promise<void> {
    this.factory.start();
    await this.factory.waitForCacheSync();
    await this.syncNow();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const r of this.registrations.splice(0)) r.remove();
    this.followPods();
    if (!this.o.informers) await this.factory.stop();
    await this.running;
  }

  schedule(): void {
    if (this.stopped || !Object.values(this.informers).every((i) => i.hasSynced())) return;
    this.dirty = true;
    if (this.timer || this.running) return;
    const wait = Math.max(0, this.lastRun + (this.o.minSyncPeriodMs ?? 1000) - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.syncNow();
    }, wait);
    this.timer.unref?.();
  }

  async syncNow(): Promise<void> {
    if (this.running) {
      this.dirty = true;
      return this.running;
    }
    this.dirty = false;
    this.running = (async () => {
      try {
        const input = {
          policies: this.informers.policies.indexer.list() as NetworkPolicy[],
          pods: this.informers.pods.indexer.list() as Pod[],
          namespaces: (this.informers.namespaces.indexer.list() as Namespace[]).map((n) => ({ name: n.metadata.name ?? '', labels: n.metadata.labels ?? {} })),
          nodeName: this.o.nodeName,
        };
        for (const [sink, family] of [[this.o.sink, 4], [this.o.sink6, 6]] as const) {
          if (!sink) continue;
          const current = await sink.save();
          // Until the first NetworkPolicy the tables stay as they are: every node's first sync would
          // otherwise be a write that each other writer of the tables (kube-proxy's resync) sees as a change.
          if (input.policies.length === 0 && !holdsPolicyRules(current)) continue;
          await sink.restore(policyRestoreInput(buildPolicyRules(input, family), current));
        }
      } catch (err) {
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
