// The control-plane half of node heartbeats (kube-controller-manager's node lifecycle controller): a
// node whose Lease has not been renewed within the grace period gets its conditions set to Unknown
// ("Kubelet stopped posting node status.") and the unreachable taints; they go when the kubelet is back.
import { type Condition, isConflict, isNotFound, type Lease, type Node, rfc3339, type Store, type Taint, TimeSlice } from '@kemu/core';
import { NODE_LEASE_NAMESPACE } from './node-status.js';

export const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';

/** NoSchedule taints for node conditions (upstream TaintNodesByCondition). */
export const CONDITION_TAINTS: Readonly<Record<string, string>> = {
  MemoryPressure: 'node.kubernetes.io/memory-pressure',
  DiskPressure: 'node.kubernetes.io/disk-pressure',
  PIDPressure: 'node.kubernetes.io/pid-pressure',
};
const CONDITION_TAINT_KEYS: ReadonlySet<string> = new Set(Object.values(CONDITION_TAINTS));

export interface NodeLifecycleOptions {
  store: Store;
  /** How long a lease may go unrenewed (upstream node-monitor-grace-period 40 s). */
  gracePeriodMs?: number;
  /** How often to look (upstream node-monitor-period 5 s). */
  monitorPeriodMs?: number;
  now?: () => number;
}

export class NodeLifecycleController {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private readonly grace: number;
  private readonly period: number;
  private readonly now: () => number;

  constructor(private readonly o: NodeLifecycleOptions) {
    this.grace = o.gracePeriodMs ?? 40_000;
    this.period = o.monitorPeriodMs ?? 5_000;
    this.now = o.now ?? Date.now;
  }

  start() {
    this.timer = setInterval(() => {
      if (!this.running) this.running = this.monitor().finally(() => (this.running = undefined));
    }, this.period);
    this.timer.unref?.();
  }

  async stop() {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /**
   * One pass over all nodes. Exposed for tests. It reads the listed (shared, read-only) objects and copies
   * only a node it changes; at 5,000 nodes a pass yields to the event loop between 10 ms slices.
   */
  async monitor(): Promise<void> {
    const nodes = (await this.o.store.list('Node')).items as Node[];
    const leases = new Map(
      ((await this.o.store.list('Lease', { namespace: NODE_LEASE_NAMESPACE })).items as Lease[]).map((l) => [l.metadata.name, l]),
    );
    const slice = new TimeSlice();
    for (const node of nodes) {
      await slice.maybeYield();
      const renew = leases.get(node.metadata.name)?.spec?.renewTime;
      const last = renew ? Date.parse(renew) : Date.parse(node.metadata.creationTimestamp ?? '') || 0;
      const stale = this.now() - last > this.grace;
      try {
        if (stale) await this.markUnknown(node);
        else {
          await this.clearUnreachable(node);
          await this.syncConditionTaints(node);
        }
      } catch (err) {
        // Gone, or changed since the list (the kubelet posted status): the next pass looks again.
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
    }
  }

  private async markUnknown(node: Node) {
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status === 'Unknown') return;
    const now = rfc3339(new Date(this.now()));
    const conditions: Condition[] = (node.status?.conditions ?? []).map((c) => ({
      ...c,
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
      lastTransitionTime: now,
    }));
    if (!conditions.some((c) => c.type === 'Ready')) {
      conditions.push({ type: 'Ready', status: 'Unknown', reason: 'NodeStatusNeverUpdated', message: 'Kubelet never posted node status.', lastTransitionTime: now });
    }
    const { resourceVersion: _rv, ...metadata } = node.metadata;
    await this.o.store.updateStatus({ ...node, metadata, status: { ...(node.status ?? {}), conditions } });
    const taints: Taint[] = (node.spec?.taints ?? []).filter((t) => t.key !== UNREACHABLE_TAINT);
    taints.push({ key: UNREACHABLE_TAINT, effect: 'NoSchedule', timeAdded: now }, { key: UNREACHABLE_TAINT, effect: 'NoExecute', timeAdded: now });
    const fresh = await this.o.store.get('Node', '', node.metadata.name ?? '');
    await this.o.store.update({ ...fresh, spec: { ...(fresh.spec ?? {}), taints } });
  }

  /** A pressure condition that is True puts its NoSchedule taint on the node; False takes it off. */
  private async syncConditionTaints(node: Node) {
    const conditions = node.status?.conditions ?? [];
    const cur = node.spec?.taints ?? [];
    // Every pass looks at every node: the usual one, under no pressure and without these taints, allocates nothing.
    if (!conditions.some((c) => c.status === 'True' && Object.hasOwn(CONDITION_TAINTS, c.type)) && !cur.some((t) => CONDITION_TAINT_KEYS.has(t.key))) return;
    const want = new Set(Object.entries(CONDITION_TAINTS).filter(([type]) => conditions.some((c) => c.type === type && c.status === 'True')).map(([, key]) => key));
    const kept = cur.filter((t) => !CONDITION_TAINT_KEYS.has(t.key) || (want.has(t.key) && t.effect === 'NoSchedule'));
    const now = rfc3339(new Date(this.now()));
    for (const key of want) if (!kept.some((t) => t.key === key)) kept.push({ key, effect: 'NoSchedule', timeAdded: now });
    if (kept.length === cur.length && kept.every((t, i) => t === cur[i])) return;
    await this.o.store.update({ ...node, spec: { ...(node.spec ?? {}), taints: kept } });
  }

  private async clearUnreachable(node: Node) {
    if (!node.spec?.taints?.some((t) => t.key === UNREACHABLE_TAINT)) return;
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    if (ready?.status !== 'True') return;
    const fresh = await this.o.store.get('Node', '', node.metadata.name ?? '');
    await this.o.store.update({ ...fresh, spec: { ...(fresh.spec ?? {}), taints: (fresh.spec?.taints ?? []).filter((t) => t.key !== UNREACHABLE_TAINT) } });
  }
}
