// The DaemonSet controller: one pod per eligible node (the template's nodeSelector and required node
// affinity match, and every NoSchedule/NoExecute taint is tolerated, counting the tolerations the controller
// adds), placed through the scheduler by a required node affinity on the node's name as upstream does; new
// nodes get a pod, nodes that stop qualifying lose theirs; RollingUpdate replaces old pods within
// maxUnavailable, or with maxSurge starts the new pod beside the old one and deletes the old once the new is
// available (OnDelete waits for a manual delete). Status carries the counters `kubectl rollout status` and
// `kubectl get ds` read.
import {
  Controller,
  type ControllerRevision,
  type DaemonSet,
  deepCopy,
  isNotFound,
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
export function shouldRunOn(ds: DaemonSet, node: Node): { run: boolean; continueRunning: boolean } {
  const spec = ds.spec.template.spec;
  const req = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!mapMatches(spec.nodeSelector, node.metadata.labels) || (req && !nodeSelectorMatches(req, node.metadata.labels, node.metadata.name!))) {
    return { run: false, continueRunning: false };
  }
  const tolerations = tolerationsFor(ds);
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

export class DaemonSetController {
  readonly controller: Controller;
  private readonly sets: SharedInformer<'DaemonSet'>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly nodes: SharedInformer<'Node'>;
  private readonly revisions: SharedInformer<'ControllerRevision'>;

  constructor(private readonly ctx: ControllerContext) {
    this.sets = withOwnerIndexes(ctx.informers.informer('DaemonSet'));
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
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
    const owner = (p: Pod) => {
      const ref = p.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'DaemonSet');
      if (ref) this.controller.enqueue(`${p.metadata.namespace}/${ref.name}`);
    };
    this.pods.addEventHandler({ onAdd: owner, onUpdate: (_a, b) => owner(b), onDelete: owner });
    const all = () => {
      for (const ds of this.sets.indexer.list()) this.controller.enqueue(ds);
    };
    this.nodes.addEventHandler({
      onAdd: all,
      onDelete: all,
      onUpdate: (a, b) => {
        if (JSON.stringify([a.metadata.labels, a.spec?.taints]) !== JSON.stringify([b.metadata.labels, b.spec?.taints])) all();
      },
    });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private newPod(ds: DaemonSet, node: string, hash: string): Pod {
    const pod = podFromTemplate(ds.spec.template, ds, podNamePrefix(ds.metadata.name!));
    pod.metadata.labels = { ...(pod.metadata.labels ?? {}), [REVISION_LABEL]: hash, 'pod-template-generation': String(ds.metadata.generation ?? 1) };
    pod.spec.tolerations = tolerationsFor(ds);
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

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.sets.lister.get(ns, name) as DaemonSet | undefined;
    if (!cached || cached.metadata.deletionTimestamp) return undefined;
    const ds = deepCopy(cached);
    const sel = selectorFromLabelSelector(ds.spec.selector);
    const { update, all, hash } = await ensureRevision(this.ctx, ds, this.revisions.indexer.byIndex(CONTROLLER_UID_INDEX, ds.metadata.uid!) as ControllerRevision[]);
    const now = this.ctx.clock.now();
    const mrs = ds.spec.minReadySeconds ?? 0;
    const pods = (this.pods.indexer.byIndex(CONTROLLER_UID_INDEX, ds.metadata.uid!) as Pod[]).filter((p) => sel.matches(p.metadata.labels));
    const byNode = new Map<string, Pod[]>();
    for (const p of pods) {
      const n = targetNode(p);
      if (n) byNode.set(n, [...(byNode.get(n) ?? []), p]);
    }
    const nodes = this.nodes.indexer.list() as Node[];
    const plan = nodes.map((node) => ({ node, ...shouldRunOn(ds, node) }));
    const desired = plan.filter((x) => x.run).length;
    const rolling = ds.spec.updateStrategy?.type !== 'OnDelete';
    const ru = ds.spec.updateStrategy?.rollingUpdate;
    // Upstream updatedDesiredNodeCounts: both budgets from the nodes that should run a pod; both 0 means 1 unavailable.
    const maxSurge = rolling ? scaledValue(ru?.maxSurge ?? 0, desired, true) : 0;
    const maxUnavailable = rolling ? scaledValue(ru?.maxUnavailable ?? 1, desired, true) || (maxSurge ? 0 : 1) : 0;
    const isUpdated = (p: Pod) => p.metadata.labels?.[REVISION_LABEL] === hash;
    const creates: string[] = [];
    let current = 0;
    let misscheduled = 0;
    let ready = 0;
    let available = 0;
    let updated = 0;
    const oldOnNodes: Pod[] = [];
    /** With surge: each node's oldest old pod and oldest updated pod. */
    const surgeNodes: Array<{ nodeName: string; oldPod?: Pod; newPod?: Pod }> = [];
    let unavailable = 0;
    for (const { node, run: should, continueRunning } of plan) {
      const nodeName = node.metadata.name!;
      const live = (byNode.get(nodeName) ?? []).filter((p) => !p.metadata.deletionTimestamp);
      if (should) {
        const failed = live.filter(isPodTerminal);
        for (const f of failed) await this.del(ds, f);
        const running = live.filter((p) => !isPodTerminal(p));
        if (running.length === 0) {
          if (!(byNode.get(nodeName) ?? []).some((p) => p.metadata.deletionTimestamp)) creates.push(nodeName);
          unavailable++;
          continue;
        }
        current++;
        running.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''));
        // Keep the oldest; extra daemon pods on one node go. With surge a node may hold two during a
        // rollout: its oldest old pod and its oldest updated one (upstream podsShouldBeOnNode).
        const oldPod = running.find((p) => !isUpdated(p));
        const newPod = running.find(isUpdated);
        const keep = maxSurge > 0 ? [oldPod, newPod] : [running[0]];
        for (const extra of running) if (!keep.includes(extra)) await this.del(ds, extra);
        // Status reads the oldest pod, as upstream's updateDaemonSetStatus does.
        const p = running[0];
        if (isPodReady(p)) ready++;
        if (isPodAvailable(p, mrs, now)) available++;
        else if (!running.some((x) => keep.includes(x) && isPodAvailable(x, mrs, now))) unavailable++;
        if (isUpdated(p)) updated++;
        if (maxSurge > 0) surgeNodes.push({ nodeName, oldPod, newPod });
        else if (!isUpdated(p)) oldOnNodes.push(p);
      } else if (live.length) {
        misscheduled++;
        if (!continueRunning) for (const p of live) await this.del(ds, p);
      }
    }
    if (rolling && maxSurge > 0) {
      // Surge (upstream rollingUpdate with maxSurge): an updated pod starts beside the old one, and the old
      // one goes once the new one is available; at most maxSurge nodes wait on a new pod at a time. A node
      // whose old pod is unavailable anyway gets its new pod at once, outside the budget.
      let inProgress = 0;
      const candidates: string[] = [];
      for (const { nodeName, oldPod, newPod } of surgeNodes) {
        if (!oldPod) continue;
        if (!newPod) {
          if (!isPodAvailable(oldPod, mrs, now)) creates.push(nodeName);
          else candidates.push(nodeName);
        } else if (!isPodAvailable(newPod, mrs, now)) inProgress++;
        else await this.del(ds, oldPod);
      }
      creates.push(...candidates.slice(0, Math.max(0, maxSurge - inProgress)));
    }
    for (const n of creates) {
      try {
        const created = await this.ctx.store.create(this.newPod(ds, n, hash));
        this.ctx.event(COMPONENT, ds, 'Normal', 'SuccessfulCreate', `Created pod: ${created.metadata.name}`);
      } catch (e) {
        this.ctx.event(COMPONENT, ds, 'Warning', 'FailedCreate', `Error creating: ${(e as Error)?.message ?? e}`);
        throw e;
      }
    }
    if (rolling && maxSurge === 0 && oldOnNodes.length) {
      // Not-ready old pods go first, then as many as the budget allows.
      const order = [...oldOnNodes].sort((a, b) => Number(isPodAvailable(a, mrs, now)) - Number(isPodAvailable(b, mrs, now)));
      let budget = maxUnavailable - unavailable;
      for (const p of order) {
        if (isPodAvailable(p, mrs, now) && budget <= 0) break;
        await this.del(ds, p);
        if (isPodAvailable(p, mrs, now)) budget--;
      }
    }
    const st: DaemonSet['status'] = {
      currentNumberScheduled: current,
      numberMisscheduled: misscheduled,
      desiredNumberScheduled: desired,
      numberReady: ready,
      observedGeneration: ds.metadata.generation,
      updatedNumberScheduled: updated,
      numberAvailable: available,
      numberUnavailable: Math.max(0, desired - available),
    };
    await truncateHistory(this.ctx, ds, all, new Set([update.metadata.name]));
    if (JSON.stringify(cached.status ?? {}) !== JSON.stringify(st)) {
      ds.status = st;
      await this.ctx.store.updateStatus(ds).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    return mrs > 0 && ready > available ? { requeueAfterMs: this.ctx.clock.realDelay(mrs * 1000) + 5 } : undefined;
  }
}
