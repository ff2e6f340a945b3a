// The scheduling queue: activeQ (a heap in QueueSort order), backoffQ (pods waiting out an exponential
// backoff after a failed attempt) and the unschedulable map (pods waiting for a cluster event that may
// help, or for the periodic flush). Also tracks nominated pods per node.
import type { ClusterEvent, Nominator, QueuedPodInfo } from './framework.js';
import { Heap } from './heap.js';
import { newPodInfo, type PodInfo, podKey } from './pod-info.js';
import type { MaybeStatus } from './status.js';
import type { Pod } from './types.js';

export interface QueueOptions {
  less: (a: QueuedPodInfo, b: QueuedPodInfo) => boolean;
  preEnqueue: (pod: Pod, pi: PodInfo) => MaybeStatus;
  /** Does any of these plugins care about the event? */
  interested: (plugins: Set<string>, event: ClusterEvent) => boolean;
  initialBackoffMs: number;
  maxBackoffMs: number;
  maxInUnschedulableMs: number;
  now: () => number;
  /**
   * pop() takes the pod closest to finishing its backoff when the active queue is empty instead of
   * idling until the backoff flush (kube-scheduler's SchedulerPopFromBackoffQ, on by default there since
   * v1.33). Pods backing off after an error still wait. Default true; tryPop() never does this.
   */
  popFromBackoffQ?: boolean;
  /** A node's nominated pods changed (the list is replaced, never mutated after the call). */
  onNominatedChange?: (nodeName: string, pods: readonly PodInfo[]) => void;
}

interface Entry {
  qpi: QueuedPodInfo;
  live: boolean;
}

const NO_PODS: PodInfo[] = [];

type Where = 'active' | 'backoff' | 'unschedulable' | 'inflight';

export class SchedulingQueue implements Nominator {
  private active: Heap<Entry>;
  /** Pods rejected as unschedulable, waiting out their backoff. */
  private backoff: Heap<Entry>;
  /** Pods whose attempt ended in an error: they always wait out the backoff. */
  private errorBackoff: Heap<Entry>;
  private unschedulable = new Map<string, QueuedPodInfo>();
  private index = new Map<string, { where: Where; entry?: Entry; qpi: QueuedPodInfo }>();
  private waiters: ((q: QueuedPodInfo | null) => void)[] = [];
  private closed = false;
  private timers: ReturnType<typeof setInterval>[] = [];
  schedulingCycle = 0;
  private moveRequestCycle = -1;
  private nominated = new Map<string, PodInfo[]>();
  private nominatedOf = new Map<string, string>();

  constructor(private readonly o: QueueOptions) {
    this.active = new Heap((a, b) => o.less(a.qpi, b.qpi));
    this.backoff = new Heap((a, b) => this.backoffExpiry(a.qpi) < this.backoffExpiry(b.qpi));
    this.errorBackoff = new Heap((a, b) => this.backoffExpiry(a.qpi) < this.backoffExpiry(b.qpi));
  }

  /** Start the periodic flushes (backoffQ every second, unschedulable leftovers every 30 s); they keep a
   * running scheduler's process alive until close(). */
  run(): void {
    this.timers.push(setInterval(() => this.flushBackoffCompleted(), 1000));
    this.timers.push(setInterval(() => this.flushUnschedulableLeftover(), 30_000));
  }

  close(): void {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const w of this.waiters.splice(0)) w(null);
  }

  backoffDuration(qpi: QueuedPodInfo): number {
    let d = this.o.initialBackoffMs;
    for (let i = 1; i < qpi.attempts; i++) {
      d *= 2;
      if (d > this.o.maxBackoffMs) return this.o.maxBackoffMs;
    }
    return Math.min(d, this.o.maxBackoffMs);
  }

  private backoffExpiry(qpi: QueuedPodInfo): number {
    return qpi.timestamp + this.backoffDuration(qpi);
  }

  private isBackingOff(qpi: QueuedPodInfo): boolean {
    return qpi.attempts > 0 && this.backoffExpiry(qpi) > this.o.now();
  }

  private pushActive(qpi: QueuedPodInfo): void {
    const entry = { qpi, live: true };
    this.index.set(qpi.pi.key, { where: 'active', entry, qpi });
    const w = this.waiters.shift();
    if (w) {
      entry.live = false;
      this.index.set(qpi.pi.key, { where: 'inflight', qpi });
      this.schedulingCycle++;
      qpi.attempts++;
      w(qpi);
      return;
    }
    this.active.push(entry);
  }

  private pushBackoff(qpi: QueuedPodInfo, error = false): void {
    const entry = { qpi, live: true };
    this.index.set(qpi.pi.key, { where: 'backoff', entry, qpi });
    if (error) {
      this.errorBackoff.push(entry);
      return;
    }
    this.backoff.push(entry);
    // A pop() waiting on an empty active queue takes it now.
    if (this.waiters.length > 0 && this.o.popFromBackoffQ !== false) {
      const q = this.popBackoff();
      if (q) this.waiters.shift()!(q);
    }
  }

  /** The unschedulable pod whose backoff ends first, ahead of time. */
  private popBackoff(): QueuedPodInfo | null {
    return this.take(this.backoff);
  }

  /** Pops the first live entry of `heap` (entries of pods moved elsewhere stay behind, dead) into flight. */
  private take(heap: Heap<Entry>): QueuedPodInfo | null {
    for (;;) {
      const e = heap.pop();
      if (!e) return null;
      if (!e.live) continue;
      e.live = false;
      this.index.set(e.qpi.pi.key, { where: 'inflight', qpi: e.qpi });
      this.schedulingCycle++;
      e.qpi.attempts++;
      return e.qpi;
    }
  }

  private pushUnschedulable(qpi: QueuedPodInfo): void {
    this.unschedulable.set(qpi.pi.key, qpi);
    this.index.set(qpi.pi.key, { where: 'unschedulable', qpi });
  }

  /** A new pending pod. PreEnqueue rejections park it in the unschedulable map as gated. */
  add(pod: Pod): void {
    const key = podKey(pod);
    if (this.index.has(key)) {
      this.update(pod);
      return;
    }
    const now = this.o.now();
    const pi = newPodInfo(pod);
    const qpi: QueuedPodInfo = {
      pi,
      timestamp: now,
      initialAttemptTimestamp: now,
      attempts: 0,
      unschedulablePlugins: new Set(),
      gated: false,
    };
    this.enqueueChecked(qpi);
    if (pod.status?.nominatedNodeName) this.addNominatedPod(pi, pod.status.nominatedNodeName);
  }

  private enqueueChecked(qpi: QueuedPodInfo): void {
    const s = this.o.preEnqueue(qpi.pi.pod, qpi.pi);
    if (s) {
      qpi.gated = true;
      qpi.gatedMessage = s.message;
      qpi.unschedulablePlugins = new Set([s.plugin]);
      this.pushUnschedulable(qpi);
      return;
    }
    qpi.gated = false;
    this.pushActive(qpi);
  }

  /** Message of a pod held back by PreEnqueue, if it is. */
  gatedMessage(pod: Pod): { plugin: string; message: string } | undefined {
    const at = this.index.get(podKey(pod));
    if (!at?.qpi.gated) return undefined;
    return { plugin: [...at.qpi.unschedulablePlugins][0] ?? '', message: at.qpi.gatedMessage ?? '' };
  }

  update(pod: Pod): void {
    const key = podKey(pod);
    const at = this.index.get(key);
    if (!at) {
      this.add(pod);
      return;
    }
    const pi = newPodInfo(pod);
    const old = at.qpi.pi.pod;
    at.qpi.pi = pi;
    if (at.entry) at.entry.qpi = at.qpi;
    if (this.nominatedOf.has(pi.uid)) {
      const n = this.nominatedOf.get(pi.uid)!;
      this.deleteNominatedPod(pi);
      this.addNominatedPod(pi, pod.status?.nominatedNodeName || n);
    }
    if (at.where !== 'unschedulable') return;
    if (at.qpi.gated) {
      this.unschedulable.delete(key);
      this.enqueueChecked(at.qpi);
      return;
    }
    // A spec or label change may make the pod schedulable: retry it now.
    if (
      JSON.stringify(old.spec) !== JSON.stringify(pod.spec) ||
      JSON.stringify(old.metadata.labels) !== JSON.stringify(pod.metadata.labels)
    ) {
      this.unschedulable.delete(key);
      if (this.isBackingOff(at.qpi)) this.pushBackoff(at.qpi);
      else this.pushActive(at.qpi);
    }
  }

  delete(pod: Pod | string): void {
    const key = typeof pod === 'string' ? pod : podKey(pod);
    const at = this.index.get(key);
    if (!at) return;
    if (at.entry) at.entry.live = false;
    this.unschedulable.delete(key);
    this.index.delete(key);
    this.deleteNominatedPod(at.qpi.pi);
  }

  /** Next pod in QueueSort order, waiting when the active queue is empty; null once closed. */
  pop(): Promise<QueuedPodInfo | null> {
    let q = this.tryPop();
    if (!q && !this.closed && this.o.popFromBackoffQ !== false) q = this.popBackoff();
    if (q || this.closed) return Promise.resolve(q);
    return new Promise((r) => this.waiters.push(r));
  }

  tryPop(): QueuedPodInfo | null {
    return this.take(this.active);
  }

  /** The cycle a popped pod was scheduled in; a move request since then sends it to backoff, not limbo. */
  requeueUnschedulable(qpi: QueuedPodInfo, podCycle: number): void {
    const at = this.index.get(qpi.pi.key);
    if (at?.where !== 'inflight') return; // deleted meanwhile
    qpi.timestamp = this.o.now();
    if (this.moveRequestCycle >= podCycle) this.pushBackoff(qpi);
    else this.pushUnschedulable(qpi);
  }

  /** After an error: retry after backoff regardless of events. */
  requeueBackoff(qpi: QueuedPodInfo): void {
    const at = this.index.get(qpi.pi.key);
    if (at?.where !== 'inflight') return;
    qpi.timestamp = this.o.now();
    this.pushBackoff(qpi, true);
  }

  /** The pod left the scheduler (bound). */
  done(key: string): void {
    const at = this.index.get(key);
    if (at?.where === 'inflight') this.index.delete(key);
  }

  moveAllToActiveOrBackoffQueue(event: ClusterEvent): void {
    for (const [key, qpi] of this.unschedulable) {
      if (qpi.gated) continue;
      if (qpi.unschedulablePlugins.size > 0 && !this.o.interested(qpi.unschedulablePlugins, event)) continue;
      this.unschedulable.delete(key);
      if (this.isBackingOff(qpi)) this.pushBackoff(qpi);
      else this.pushActive(qpi);
    }
    this.moveRequestCycle = this.schedulingCycle;
  }

  flushBackoffCompleted(): void {
    const now = this.o.now();
    for (const heap of [this.backoff, this.errorBackoff]) {
      for (;;) {
        const e = heap.peek();
        if (!e) break;
        if (e.live && this.backoffExpiry(e.qpi) > now) break;
        heap.pop();
        if (!e.live) continue;
        e.live = false;
        this.pushActive(e.qpi);
      }
    }
  }

  /** Re-run PreEnqueue for gated pods (e.g. after the PriorityClass they name appeared). */
  retryGated(): void {
    const gated = [...this.unschedulable].filter(([, q]) => q.gated);
    for (const [key, qpi] of gated) {
      this.unschedulable.delete(key);
      this.enqueueChecked(qpi);
    }
  }

  flushUnschedulableLeftover(): void {
    const now = this.o.now();
    for (const [key, qpi] of this.unschedulable) {
      if (qpi.gated || now - qpi.timestamp <= this.o.maxInUnschedulableMs) continue;
      this.unschedulable.delete(key);
      if (this.isBackingOff(qpi)) this.pushBackoff(qpi);
      else this.pushActive(qpi);
    }
  }

  /** Pods in activeQ, counting any entry still to be dropped (an upper bound, at no cost). */
  get activeUpperBound(): number {
    return this.active.size;
  }

  /** Counts per sub-queue (for metrics and tests). */
  stats(): { active: number; backoff: number; unschedulable: number } {
    let active = 0;
    let backoff = 0;
    for (const v of this.index.values()) {
      if (v.where === 'active') active++;
      else if (v.where === 'backoff') backoff++;
    }
    return { active, backoff, unschedulable: this.unschedulable.size };
  }

  where(pod: Pod | string): Where | undefined {
    return this.index.get(typeof pod === 'string' ? pod : podKey(pod))?.where;
  }

  hasNominatedPods(): boolean {
    return this.nominated.size > 0;
  }

  nominatedPodsForNode(nodeName: string): PodInfo[] {
    return this.nominated.get(nodeName) ?? NO_PODS;
  }

  addNominatedPod(pi: PodInfo, nodeName: string): void {
    this.deleteNominatedPod(pi);
    if (!nodeName) return;
    // Copy on write: filters and dry runs may hold the previous list.
    const l = [...(this.nominated.get(nodeName) ?? NO_PODS), pi];
    this.nominated.set(nodeName, l);
    this.nominatedOf.set(pi.uid, nodeName);
    this.o.onNominatedChange?.(nodeName, l);
  }

  deleteNominatedPod(pi: PodInfo): void {
    const n = this.nominatedOf.get(pi.uid);
    if (n === undefined) return;
    this.nominatedOf.delete(pi.uid);
    const l = (this.nominated.get(n) ?? NO_PODS).filter((p) => p.uid !== pi.uid);
    if (l.length === 0) this.nominated.delete(n);
    else this.nominated.set(n, l);
    this.o.onNominatedChange?.(n, l.length === 0 ? NO_PODS : l);
  }
}
