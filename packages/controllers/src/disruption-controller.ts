// The disruption controller: keeps each PodDisruptionBudget's status (expectedPods, desiredHealthy,
// currentHealthy, disruptionsAllowed and the DisruptionAllowed condition) from the pods it selects and, for
// percentages and maxUnavailable, from the scale of the controllers that own them.
import {
  Controller,
  deepCopy,
  isNotFound,
  type KubeObject,
  type Pod,
  type PodDisruptionBudget,
  rfc3339,
  selectorFromLabelSelector,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { scaledValue } from './deployment-util.js';
import { NAMESPACE_INDEX, withOwnerIndexes } from './indexes.js';
import { isPodReady, isPodTerminal } from './pod-util.js';

const COMPONENT = 'disruption-controller';

export class DisruptionController {
  readonly controller: Controller;
  private readonly pdbs: SharedInformer<'PodDisruptionBudget'>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly owners: Record<string, SharedInformer<string, KubeObject>>;

  constructor(private readonly ctx: ControllerContext) {
    this.pdbs = withOwnerIndexes(ctx.informers.informer('PodDisruptionBudget'));
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.owners = Object.fromEntries(
      ['Deployment', 'ReplicaSet', 'StatefulSet', 'ReplicationController'].map((k) => [k, withOwnerIndexes(ctx.informers.informer(k)) as unknown as SharedInformer<string, KubeObject>]),
    );
    this.controller = new Controller({
      name: COMPONENT,
      workers: 2,
      informers: [this.pdbs, this.pods, ...Object.values(this.owners)],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.pdbs.addEventHandler(this.controller.handler());
    const podChanged = (p: Pod) => {
      for (const b of this.pdbs.indexer.byIndex(NAMESPACE_INDEX, p.metadata.namespace ?? '') as PodDisruptionBudget[]) {
        if (b.spec.selector && selectorFromLabelSelector(b.spec.selector).matches(p.metadata.labels)) this.controller.enqueue(b);
      }
    };
    this.pods.addEventHandler({ onAdd: podChanged, onUpdate: (_a, b) => podChanged(b), onDelete: podChanged });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** The scale of the pod's controller (a ReplicaSet's Deployment counts for it), as upstream finds it. */
  private scaleOf(p: Pod): { uid: string; replicas: number } | undefined {
    const ref = p.metadata.ownerReferences?.find((r) => r.controller);
    if (!ref || !this.owners[ref.kind]) return undefined;
    let owner = this.owners[ref.kind].lister.get(p.metadata.namespace, ref.name);
    if (!owner || owner.metadata.uid !== ref.uid) return undefined;
    const up = owner.kind === 'ReplicaSet' ? owner.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'Deployment') : undefined;
    if (up) {
      const d = this.owners.Deployment.lister.get(p.metadata.namespace, up.name);
      if (d && d.metadata.uid === up.uid) owner = d;
    }
    return { uid: owner.metadata.uid!, replicas: owner.spec?.replicas ?? 1 };
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.pdbs.lister.get(ns, name) as PodDisruptionBudget | undefined;
    if (!cached || cached.metadata.deletionTimestamp) return undefined;
    const pdb = deepCopy(cached);
    const sel = pdb.spec.selector ? selectorFromLabelSelector(pdb.spec.selector) : undefined;
    const pods = sel ? (this.pods.indexer.byIndex(NAMESPACE_INDEX, ns) as Pod[]).filter((p) => sel.matches(p.metadata.labels) && !isPodTerminal(p)) : [];
    const healthy = pods.filter((p) => isPodReady(p) && !p.metadata.deletionTimestamp).length;
    let expected = pods.length;
    let desired = 0;
    const { minAvailable, maxUnavailable } = pdb.spec;
    if (typeof minAvailable === 'number') desired = minAvailable;
    else {
      // Percentages and maxUnavailable are of the controllers' scale.
      const scales = new Map<string, number>();
      for (const p of pods) {
        const s = this.scaleOf(p);
        if (s) scales.set(s.uid, s.replicas);
      }
      if (scales.size) expected = [...scales.values()].reduce((a, b) => a + b, 0);
      if (minAvailable !== undefined) desired = scaledValue(minAvailable, expected, true);
      else if (maxUnavailable !== undefined) desired = Math.max(0, expected - scaledValue(maxUnavailable, expected, true));
    }
    const allowed = Math.max(0, healthy - desired);
    const now = rfc3339(this.ctx.clock.now());
    const prev = pdb.status?.conditions?.find((c) => c.type === 'DisruptionAllowed');
    const status = allowed > 0 ? 'True' : 'False';
    const cond = {
      type: 'DisruptionAllowed',
      status: status as 'True' | 'False',
      reason: allowed > 0 ? 'SufficientPods' : 'InsufficientPods',
      message: '',
      observedGeneration: pdb.metadata.generation,
      lastTransitionTime: prev?.status === status ? (prev.lastTransitionTime ?? now) : now,
    };
    const st: PodDisruptionBudget['status'] = {
      observedGeneration: pdb.metadata.generation,
      disruptionsAllowed: allowed,
      currentHealthy: healthy,
      desiredHealthy: desired,
      expectedPods: expected,
      ...(pdb.status?.disruptedPods ? { disruptedPods: pdb.status.disruptedPods } : {}),
      conditions: [cond],
    };
    if (JSON.stringify(cached.status ?? {}) !== JSON.stringify(st)) {
      pdb.status = st;
      await this.ctx.store.updateStatus(pdb).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    return undefined;
  }
}
