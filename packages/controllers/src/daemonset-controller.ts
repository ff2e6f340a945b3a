// The DaemonSet controller: one pod per eligible node (the template's nodeSelector and required node
// affinity match, and every NoSchedule/NoExecute taint is tolerated, counting the tolerations the controller
// adds), placed through the scheduler by a required node affinity on the node's name as upstream does; new
// nodes get a pod, nodes that stop qualifying lose theirs; RollingUpdate replaces old pods within
// maxUnavailable, or with maxSurge starts the new pod beside the old one and deletes the old once the new is
// available (OnDelete waits for a manual delete). Status carries the counters `kubectl rollout status` and
// `kubectl get ds` read.
//
// Syncs are incremental, so one DaemonSet over thousands of nodes stays cheap while its pods and the nodes
// change: the controller keeps, per DaemonSet, each node's eligibility and its share of the status counters,
// and a sync looks again only at the nodes whose pods or labels/taints changed since the last one (events
// arriving meanwhile coalesce into that set). A change to the DaemonSet itself (generation, template hash,
// update strategy, minReadySeconds) or a failed sync makes the next one look at every node; with
// minReadySeconds every sync does, since availability then moves with the clock. Per node, a create waits
// until the informer has seen the pod before another may be sent (upstream's expectations), and at most
// 250 creates are in flight per DaemonSet, sent in slow-start batches (upstream's burstReplicas).
import {
  Controller,
  type ControllerRevision,
  type DaemonSet,
  deepCopy,
  type IndexFunc,
  isNotFound,
  type KubeObject,
  type Node,
  type Pod,
  selectorFromLabelSelector,
  type SharedInformer,
  type Toleration,
} from '@kemu/core';
import { mapMatches, nodeSelectorMatches, untoleratedTaint } from '@kemu/scheduler';
import type { ControllerContext } from './controller-context.js';
import { ensureRevision, REVISION_LABEL, truncateHistory } from './controller-history.js';
import { scaledValue } from './deployment-util.js';
import { CONTROLLER_UID_INDEX, withOwnerIndexes } from './indexes.js';
import { isPodAvailable, isPodReady, isPodTerminal, podFromTemplate, podNamePrefix } from './pod-util.js';

const COMPONENT = 'daemonset-controller';

/** Tolerations every daemon pod gets (upstream AddOrUpdateDaemonPodTolerations). */
export const DAEMON_TOLERATIONS: Toleration[] = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];

/** Creates one sync may have in flight (upstream's BurstReplicas for the DaemonSet controller). */
export const BURST_REPLICAS = 250;

/** How long a sent create waits to be seen before another may be sent for the node (upstream ExpectationsTimeout). */
const CREATE_EXPECTATION_TTL_MS = 5 * 60 * 1000;

function tolerationsFor(ds: DaemonSet): Toleration[] {
  const t = [...(ds.spec.template.spec.tolerations ?? [])];
  const extra = [...DAEMON_TOLERATIONS];
  if (ds.spec.template.spec.hostNetwork) extra.push({ key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' });
  for (const x of extra) if (!t.some((y) => y.key === x.key && y.effect === x.effect)) t.push(x);
  return t;
}

/**
 * Whether a daemon pod should run on the node, and whether one already there may continue (upstream
 * NodeShouldRunDaemonPod): a NoSchedule taint keeps new pods away but does not evict; NoExecute does both.
 */
export function shouldRunOn(ds: DaemonSet, node: Node, tolerations = tolerationsFor(ds)): { run: boolean; continueRunning: boolean } {
  const spec = ds.spec.template.spec;
  const req = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!mapMatches(spec.nodeSelector, node.metadata.labels) || (req && !nodeSelectorMatches(req, node.metadata.labels, node.metadata.name!))) {
    return { run: false, continueRunning: false };
  }
  const continueRunning = !untoleratedTaint(node.spec?.taints, tolerations, ['NoExecute']);
  return { run: continueRunning && !untoleratedTaint(node.spec?.taints, tolerations, ['NoSchedule']), continueRunning };
}

/** The node a daemon pod is for: its nodeName, else the name its node affinity pins. */
export function targetNode(p: Pod): string | undefined {
  if (p.spec.nodeName) return p.spec.nodeName;
  for (const t of p.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []) {
    const f = t.matchFields?.find((x) => x.key === 'metadata.name' && x.operator === 'In');
    if (f?.values?.length === 1) return f.values[0];
  }
  return undefined;
}

/** Daemon pods by `<DaemonSet uid>/<node>`: a sync reads one node's pods without grouping the whole set. */
const DAEMON_POD_NODE_INDEX = 'daemon-pods-by-node';
const daemonPodNodeIndexFunc: IndexFunc<KubeObject> = (o) => {
  const ref = o.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'DaemonSet');
  const node = ref && targetNode(o as Pod);
  return node ? [`${ref.uid}/${node}`] : [];
};

/** One node's share of a DaemonSet's status, and what a rollout needs of it. */
interface NodeTally {
  desired: number;
  current: number;
  misscheduled: number;
  ready: number;
  available: number;
  updated: number;
  /** Counted against maxUnavailable: no pod yet, or none of the kept ones available. */
  unavailable: number;
  /** Without surge: the node's pod, when it is not of the current revision. */
  old?: Pod;
  /** With surge: the node's oldest old pod and oldest updated pod. */
  oldPod?: Pod;
  newPod?: Pod;
}

const COUNTERS = ['desired', 'current', 'misscheduled', 'ready', 'available', 'updated', 'unavailable'] as const;
const emptyTally = (): NodeTally => ({ desired: 0, current: 0, misscheduled: 0, ready: 0, available: 0, updated: 0, unavailable: 0 });

/** What the controller remembers of one DaemonSet between syncs. */
interface DaemonState {
  /** The inputs every node's result depends on; when they change, every node is looked at again. */
  specKey: string;
  tolerations: Toleration[];
  eligible: Map<string, { run: boolean; continueRunning: boolean }>;
  tallies: Map<string, NodeTally>;
  totals: NodeTally;
  /** Nodes holding a pod of an older revision (a rollout is in progress while this is above 0). */
  withOld: number;
  /** Nodes to look at again; `all` when every node must be. */
  dirty: Set<string>;
  all: boolean;
}

export class DaemonSetController {
  readonly controller: Controller;
  /** Nodes looked at by syncs (each sync visits only the nodes that changed), for tests and benchmarks. */
  readonly stats = { syncs: 0, nodesVisited: 0, largestBurst: 0 };
  private readonly sets: SharedInformer<'DaemonSet'>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly nodes: SharedInformer<'Node'>;
  private readonly revisions: SharedInformer<'ControllerRevision'>;
  private readonly states = new Map<string, DaemonState>();
  /** Creates sent and not yet seen by the informer, by DaemonSet key and node (with when they were sent). */
  private readonly pendingCreates = new Map<string, Map<string, number>>();

  constructor(private readonly ctx: ControllerContext) {
    this.sets = withOwnerIndexes(ctx.informers.informer('DaemonSet'));
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.pods.addIndexers({ [DAEMON_POD_NODE_INDEX]: daemonPodNodeIndexFunc });
    this.nodes = ctx.informers.informer('Node');
    this.revisions = withOwnerIndexes(ctx.informers.informer('ControllerRevision'));
    this.controller = new Controller({
      name: COMPONENT,
      workers: 5,
      informers: [this.sets, this.pods, this.nodes, this.revisions],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.sets.addEventHandler(this.controller.handler());
    const podChanged = (p: Pod, added: boolean) => {
      const ref = p.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'DaemonSet');
      if (!ref) return;
      const key = `${p.metadata.namespace}/${ref.name}`;
      const node = targetNode(p);
      if (node) {
        this.states.get(key)?.dirty.add(node);
        if (added) this.pendingCreates.get(key)?.delete(node);
      }
      this.controller.enqueue(key);
    };
    this.pods.addEventHandler({
      onAdd: (p) => podChanged(p, true),
      onUpdate: (a, b) => {
        if (targetNode(a) !== targetNode(b)) podChanged(a, false);
        podChanged(b, false);
      },
      onDelete: (p) => podChanged(p, false),
    });
    const nodeChanged = (n: Node) => {
      for (const st of this.states.values()) {
        st.eligible.delete(n.metadata.name!);
        st.dirty.add(n.metadata.name!);
      }
      for (const ds of this.sets.indexer.list()) this.controller.enqueue(ds);
    };
    this.nodes.addEventHandler({
      onAdd: nodeChanged,
      onDelete: nodeChanged,
      onUpdate: (a, b) => {
        if (JSON.stringify([a.metadata.labels, a.spec?.taints]) !== JSON.stringify([b.metadata.labels, b.spec?.taints])) nodeChanged(b);
      },
    });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private newPod(ds: DaemonSet, node: string, hash: string, tolerations: Toleration[]): Pod {
    const pod = podFromTemplate(ds.spec.template, ds, podNamePrefix(ds.metadata.name!));
    pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [REVISION_LABEL]: hash, 'pod-template-generation': String(ds.metadata.generation ?? 1) };
    pod.spec.tolerations = [...tolerations];
    // Placed by the scheduler: a required node affinity on the node's name (upstream ReplaceDaemonSetPodNodeNameNodeAffinity).
    pod.spec.affinity = {
      ...(pod.spec.affinity ?? {}),
      nodeAffinity: {
        ...(pod.spec.affinity?.nodeAffinity ?? {}),
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }] },
      },
    };
    return pod;
  }

  private async del(ds: DaemonSet, p: Pod): Promise<void> {
    await this.ctx.store.delete('Pod', p.metadata.namespace, p.metadata.name!, { preconditions: { uid: p.metadata.uid } }).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
    this.ctx.event(COMPONENT, ds, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata.name}`);
  }

  /** Whether a create for the node was sent and the informer has not shown its pod yet. */
  private createPending(key: string, node: string): boolean {
    const at = this.pendingCreates.get(key)?.get(node);
    return at !== undefined && Date.now() - at < CREATE_EXPECTATION_TTL_MS;
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.sets.lister.get(ns, name) as DaemonSet | undefined;
    if (!cached || cached.metadata.deletionTimestamp) {
      this.states.delete(key);
      this.pendingCreates.delete(key);
      return undefined;
    }
    this.stats.syncs++;
    const ds = deepCopy(cached);
    const { update, all, hash } = await ensureRevision(this.ctx, ds, this.revisions.indexer.byIndex(CONTROLLER_UID_INDEX, ds.metadata.uid!) as ControllerRevision[]);
    const mrs = ds.spec.minReadySeconds ?? 0;
    const rolling = ds.spec.updateStrategy?.type !== 'OnDelete';
    const ru = ds.spec.updateStrategy?.rollingUpdate;
    // Surge keeps two pods on a node during a rollout; any non-zero maxSurge surges once a node qualifies.
    const surge = rolling && scaledValue(ru?.maxSurge ?? 0, 100, true) > 0;
    const specKey = JSON.stringify([ds.metadata.uid, ds.metadata.generation, hash, rolling, surge, ds.spec.selector]);
    let st = this.states.get(key);
    if (!st || st.specKey !== specKey) {
      st = { specKey, tolerations: tolerationsFor(ds), eligible: new Map(), tallies: new Map(), totals: emptyTally(), withOld: 0, dirty: new Set(), all: true };
      this.states.set(key, st);
    }
    if (mrs > 0) st.all = true;
    let visit: Iterable<string>;
    if (st.all) {
      st.tallies = new Map();
      st.totals = emptyTally();
      st.withOld = 0;
      visit = (this.nodes.indexer.list() as Node[]).map((n) => n.metadata.name!);
    } else visit = st.dirty;
    st.all = false;
    st.dirty = new Set();
    try {
      return await this.reconcile(key, ds, st, visit, { update, all, hash, mrs, rolling, surge });
    } catch (e) {
      // Tallies may be half updated: the retry looks at every node.
      st.all = true;
      throw e;
    }
  }

  private async reconcile(
    key: string,
    ds: DaemonSet,
    st: DaemonState,
    visit: Iterable<string>,
    o: { update: ControllerRevision; all: ControllerRevision[]; hash: string; mrs: number; rolling: boolean; surge: boolean },
  ) {
    const { hash, mrs, rolling, surge } = o;
    const uid = ds.metadata.uid!;
    const sel = selectorFromLabelSelector(ds.spec.selector);
    const now = this.ctx.clock.now();
    const isUpdated = (p: Pod) => p.metadata.labels?.[REVISION_LABEL] === hash;
    const creates: string[] = [];
    const account = (t: NodeTally, sign: 1 | -1) => {
      for (const c of COUNTERS) st.totals[c] += sign * t[c];
      if (t.old || t.oldPod) st.withOld += sign;
    };
    for (const nodeName of visit) {
      this.stats.nodesVisited++;
      const prev = st.tallies.get(nodeName);
      if (prev) {
        account(prev, -1);
        st.tallies.delete(nodeName);
      }
      const node = this.nodes.indexer.get(undefined, nodeName) as Node | undefined;
      if (!node) {
        st.eligible.delete(nodeName);
        continue;
      }
      let el = st.eligible.get(nodeName);
      if (!el) st.eligible.set(nodeName, (el = shouldRunOn(ds, node, st.tolerations)));
      const onNode = (this.pods.indexer.byIndex(DAEMON_POD_NODE_INDEX, `${uid}/${nodeName}`) as Pod[]).filter((p) => sel.matches(p.metadata.labels));
      const live = onNode.filter((p) => !p.metadata.deletionTimestamp);
      const t = emptyTally();
      if (el.run) {
        t.desired = 1;
        for (const f of live.filter(isPodTerminal)) await this.del(ds, f);
        const running = live.filter((p) => !isPodTerminal(p));
        if (running.length === 0) {
          if (!onNode.some((p) => p.metadata.deletionTimestamp) && !this.createPending(key, nodeName)) creates.push(nodeName);
          t.unavailable = 1;
        } else {
          t.current = 1;
          running.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''));
          // Keep the oldest; extra daemon pods on one node go. With surge a node may hold two during a
          // rollout: its oldest old pod and its oldest updated one (upstream podsShouldBeOnNode).
          const oldPod = running.find((p) => !isUpdated(p));
          const newPod = running.find(isUpdated);
          const keep = surge ? [oldPod, newPod] : [running[0]];
          for (const extra of running) if (!keep.includes(extra)) await this.del(ds, extra);
          // Status reads the oldest pod, as upstream's updateDaemonSetStatus does.
          const p = running[0];
          if (isPodReady(p)) t.ready = 1;
          if (isPodAvailable(p, mrs, now)) t.available = 1;
          else if (!running.some((x) => keep.includes(x) && isPodAvailable(x, mrs, now))) t.unavailable = 1;
          if (isUpdated(p)) t.updated = 1;
          if (surge) {
            if (oldPod) Object.assign(t, { oldPod, newPod });
          } else if (!isUpdated(p)) t.old = p;
        }
      } else if (live.length) {
        t.misscheduled = 1;
        if (!el.continueRunning) for (const p of live) await this.del(ds, p);
      }
      st.tallies.set(nodeName, t);
      account(t, 1);
    }
    const desired = st.totals.desired;
    // Upstream updatedDesiredNodeCounts: both budgets from the nodes that should run a pod; both 0 means 1 unavailable.
    const maxSurge = rolling ? scaledValue(ds.spec.updateStrategy?.rollingUpdate?.maxSurge ?? 0, desired, true) : 0;
    const maxUnavailable = rolling ? scaledValue(ds.spec.updateStrategy?.rollingUpdate?.maxUnavailable ?? 1, desired, true) || (maxSurge ? 0 : 1) : 0;
    // A rollout looks at every node's tally, but only while some node still runs an old pod.
    if (rolling && surge && st.withOld > 0) {
      // Surge (upstream rollingUpdate with maxSurge): an updated pod starts beside the old one, and the old
      // one goes once the new one is available; at most maxSurge nodes wait on a new pod at a time. A node
      // whose old pod is unavailable anyway gets its new pod at once, outside the budget.
      let inProgress = 0;
      const candidates: string[] = [];
      for (const [nodeName, { oldPod, newPod }] of st.tallies) {
        if (!oldPod) continue;
        if (!newPod) {
          if (this.createPending(key, nodeName)) inProgress++;
          else if (!isPodAvailable(oldPod, mrs, now)) creates.push(nodeName);
          else candidates.push(nodeName);
        } else if (!isPodAvailable(newPod, mrs, now)) inProgress++;
        else await this.del(ds, oldPod);
      }
      creates.push(...candidates.slice(0, Math.max(0, maxSurge - inProgress)));
    }
    let pending = this.pendingCreates.get(key);
    if (creates.length && !pending) this.pendingCreates.set(key, (pending = new Map()));
    // At most BURST_REPLICAS creates in flight (sent, not yet seen); the rest wait for a later sync, their
    // nodes kept for it to look at again (upstream burstReplicas with expectations).
    let inFlight = 0;
    for (const n of pending?.keys() ?? []) if (this.createPending(key, n)) inFlight++;
    const sending = creates.slice(0, Math.max(0, BURST_REPLICAS - inFlight));
    for (const n of creates.slice(sending.length)) st.dirty.add(n);
    this.stats.largestBurst = Math.max(this.stats.largestBurst, sending.length);
    // Slow start (upstream slowStartBatch): batches of 1, 2, 4, ... sent together; a failed batch stops the rest.
    for (let i = 0, size = 1; i < sending.length; i += size, size *= 2) {
      const batch = sending.slice(i, i + size);
      for (const n of batch) pending!.set(n, Date.now());
      const results = await Promise.allSettled(batch.map((n) => this.ctx.store.create(this.newPod(ds, n, hash, st.tolerations))));
      let failed: unknown;
      results.forEach((r, j) => {
        if (r.status === 'fulfilled') this.ctx.event(COMPONENT, ds, 'Normal', 'SuccessfulCreate', `Created pod: ${r.value.metadata.name}`);
        else {
          pending!.delete(batch[j]);
          failed ??= r.reason;
          this.ctx.event(COMPONENT, ds, 'Warning', 'FailedCreate', `Error creating: ${(r.reason as Error)?.message ?? r.reason}`);
        }
      });
      if (failed !== undefined) throw failed;
    }
    if (rolling && !surge && st.withOld > 0) {
      // Not-ready old pods go first, then as many as the budget allows.
      const oldOnNodes: Pod[] = [];
      for (const t of st.tallies.values()) if (t.old) oldOnNodes.push(t.old);
      const order = oldOnNodes.sort((a, b) => Number(isPodAvailable(a, mrs, now)) - Number(isPodAvailable(b, mrs, now)));
      let budget = maxUnavailable - st.totals.unavailable;
      for (const p of order) {
        if (isPodAvailable(p, mrs, now) && budget <= 0) break;
        await this.del(ds, p);
        if (isPodAvailable(p, mrs, now)) budget--;
      }
    }
    const { totals } = st;
    const status: DaemonSet['status'] = {
      currentNumberScheduled: totals.current,
      numberMisscheduled: totals.misscheduled,
      desiredNumberScheduled: desired,
      numberReady: totals.ready,
      observedGeneration: ds.metadata.generation,
      updatedNumberScheduled: totals.updated,
      numberAvailable: totals.available,
      numberUnavailable: Math.max(0, desired - totals.available),
    };
    await truncateHistory(this.ctx, ds, o.all, new Set([o.update.metadata.name]));
    const cached = this.sets.lister.get(ds.metadata.namespace, ds.metadata.name!) as DaemonSet | undefined;
    if (JSON.stringify(cached?.status ?? {}) !== JSON.stringify(status)) {
      ds.status = status;
      await this.ctx.store.updateStatus(ds).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    return mrs > 0 && totals.ready > totals.available ? { requeueAfterMs: this.ctx.clock.realDelay(mrs * 1000) + 5 } : undefined;
  }
}
