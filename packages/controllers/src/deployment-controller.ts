// The Deployment controller: one ReplicaSet per pod template (named `<deployment>-<pod-template-hash>`),
// RollingUpdate within maxSurge/maxUnavailable and Recreate, revision annotations and history cleanup,
// pause/resume, the progress deadline with the Progressing and Available conditions, and every status
// counter `kubectl rollout status` reads. Rollback (`rollout undo`) is a client-side template change.
import { isDeepStrictEqual } from 'node:util';
import {
  Controller,
  type Deployment,
  isAlreadyExists,
  isNotFound,
  type KubeObject,
  type Pod,
  type ReplicaSet,
  rfc3339,
  selectorFromLabelSelector,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import {
  copiedAnnotations,
  computeHash,
  type DeploymentCondition,
  DESIRED_REPLICAS_ANNOTATION,
  equalIgnoreHash,
  getCondition,
  MAX_REPLICAS_ANNOTATION,
  maxRevision,
  maxSurge,
  maxUnavailable,
  newRSNewReplicas,
  POD_TEMPLATE_HASH,
  Reasons,
  REVISION_ANNOTATION,
  REVISION_HISTORY_ANNOTATION,
  revisionOf,
  setCondition,
} from './deployment-util.js';
import { CONTROLLER_UID_INDEX, NAMESPACE_INDEX, ORPHAN_INDEX, withOwnerIndexes } from './indexes.js';
import { controllerRef, controllerUid } from './pod-util.js';

const COMPONENT = 'deployment-controller';

export interface DeploymentControllerOptions {
  workers?: number;
}

const byCreation = (a: KubeObject, b: KubeObject) =>
  (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');

export class DeploymentController {
  readonly controller: Controller;
  private readonly deployments: SharedInformer<'Deployment'>;
  private readonly sets: SharedInformer<'ReplicaSet'>;
  private readonly pods: SharedInformer<'Pod'>;

  constructor(
    private readonly ctx: ControllerContext,
    opts: DeploymentControllerOptions = {},
  ) {
    this.deployments = withOwnerIndexes(ctx.informers.informer('Deployment'));
    this.sets = withOwnerIndexes(ctx.informers.informer('ReplicaSet'));
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.controller = new Controller({
      name: COMPONENT,
      workers: opts.workers ?? 5,
      informers: [this.deployments, this.sets, this.pods],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.deployments.addEventHandler(this.controller.handler());
    const owner = (rs: ReplicaSet) => {
      const ref = rs.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'Deployment');
      if (ref) this.controller.enqueue(`${rs.metadata.namespace}/${ref.name}`);
      else if (!rs.metadata.deletionTimestamp) {
        for (const d of this.deployments.indexer.byIndex(NAMESPACE_INDEX, rs.metadata.namespace ?? '')) {
          if (selectorFromLabelSelector(d.spec.selector).matches(rs.metadata.labels)) this.controller.enqueue(d);
        }
      }
    };
    this.sets.addEventHandler({ onAdd: owner, onUpdate: (_a, b) => owner(b), onDelete: owner });
    // Recreate waits for the old pods to be gone.
    this.pods.addEventHandler({
      onDelete: (p: Pod) => {
        const rsUid = controllerUid(p);
        if (!rsUid) return;
        const rs = (this.sets.indexer.byIndex(NAMESPACE_INDEX, p.metadata.namespace ?? '') as ReplicaSet[]).find((s) => s.metadata.uid === rsUid);
        if (rs) owner(rs);
      },
    });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** The ReplicaSets a Deployment owns, adopting matching orphans (upstream getReplicaSetsForDeployment). */
  private async claimReplicaSets(d: Deployment): Promise<ReplicaSet[]> {
    const sel = selectorFromLabelSelector(d.spec.selector);
    const out: ReplicaSet[] = [];
    const candidates = [
      ...(this.sets.indexer.byIndex(CONTROLLER_UID_INDEX, d.metadata.uid!) as ReplicaSet[]),
      ...(this.sets.indexer.byIndex(ORPHAN_INDEX, d.metadata.namespace ?? '') as ReplicaSet[]),
    ];
    for (const rs of candidates) {
      const owner = controllerUid(rs);
      if (owner === d.metadata.uid) out.push(rs);
      else if (!owner && !rs.metadata.deletionTimestamp && !d.metadata.deletionTimestamp && sel.matches(rs.metadata.labels)) {
        try {
          const adopted = await this.ctx.store.patch(
            'ReplicaSet',
            rs.metadata.namespace,
            rs.metadata.name!,
            { metadata: { ownerReferences: [...(rs.metadata.ownerReferences ?? []), controllerRef(d)], uid: rs.metadata.uid } },
            'merge',
          );
          out.push(adopted);
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
      }
    }
    return out.sort(byCreation);
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.deployments.lister.get(ns, name);
    if (!cached || cached.metadata.deletionTimestamp) return undefined;
    // The sync replaces d.metadata's annotations and resourceVersion and d.status as it writes them; the
    // rest is the cache's (frozen) object, read only.
    const d: Deployment = { ...cached, metadata: { ...cached.metadata } };
    const everything = d.spec.selector && Object.keys(d.spec.selector).length === 0;
    if (everything) {
      this.ctx.event(COMPONENT, d, 'Warning', 'SelectingAll', 'This deployment is selecting all pods. A non-empty selector is required.');
      return undefined;
    }
    const sets = await this.claimReplicaSets(d);
    // Paused, or the replica count changed: scale the existing sets (proportionally), no rollout.
    if (d.spec.paused || this.isScalingEvent(d, sets)) return this.syncScale(d, sets);
    if (d.spec.strategy?.type === 'Recreate') return this.rolloutRecreate(d, sets);
    return this.rolloutRolling(d, sets);
  }

  /** Find the new ReplicaSet (template equal ignoring the hash) and the old ones. */
  private split(d: Deployment, sets: ReplicaSet[]): { newRS?: ReplicaSet; old: ReplicaSet[] } {
    const matches = sets.filter((rs) => equalIgnoreHash(rs.spec.template, d.spec.template));
    // Several may match after a hash change: the oldest one wins, as upstream's FindNewReplicaSet.
    const newRS = matches.sort(byCreation)[0];
    return { newRS, old: sets.filter((rs) => rs !== newRS) };
  }

  /** Get the new ReplicaSet, creating it (or bumping its revision) when `create` is set. */
  private async getNewRS(d: Deployment, sets: ReplicaSet[], create: boolean): Promise<{ newRS?: ReplicaSet; old: ReplicaSet[]; created: boolean }> {
    const { newRS, old } = this.split(d, sets);
    const maxOld = maxRevision(old);
    const revision = String(maxOld + 1);
    if (newRS) {
      // An old template came back (rollback): it becomes the newest revision.
      const cur = revisionOf(newRS);
      const want: Record<string, string> = { ...(newRS.metadata.annotations ?? {}), ...copiedAnnotations(d) };
      if (cur <= maxOld) {
        want[REVISION_ANNOTATION] = revision;
        const hist = newRS.metadata.annotations?.[REVISION_HISTORY_ANNOTATION];
        want[REVISION_HISTORY_ANNOTATION] = hist ? `${hist},${cur}` : String(cur);
      }
      // desired-replicas and max-replicas move only when the set is scaled (they tell a scaling event).
      for (const k of [DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION]) {
        const v = newRS.metadata.annotations?.[k];
        if (v === undefined) delete want[k];
        else want[k] = v;
      }
      let rs = newRS;
      if (!isDeepStrictEqual(want, newRS.metadata.annotations ?? {}) || (newRS.spec.minReadySeconds ?? 0) !== (d.spec.minReadySeconds ?? 0)) {
        rs = await this.ctx.store.update({ ...newRS, metadata: { ...newRS.metadata, annotations: want }, spec: { ...newRS.spec, minReadySeconds: d.spec.minReadySeconds } });
      }
      await this.setDeploymentRevision(d, rs.metadata.annotations?.[REVISION_ANNOTATION] ?? revision);
      return { newRS: rs, old, created: false };
    }
    if (!create) return { old, created: false };
    const hash = computeHash(d.spec.template, d.status?.collisionCount);
    // The store copies what it is given: the new set's template and selector may share the Deployment's parts.
    const template = { ...d.spec.template, metadata: { ...d.spec.template.metadata, labels: { ...(d.spec.template.metadata?.labels ?? {}), [POD_TEMPLATE_HASH]: hash } } };
    const selector = { ...d.spec.selector, matchLabels: { ...(d.spec.selector.matchLabels ?? {}), [POD_TEMPLATE_HASH]: hash } };
    const rs: ReplicaSet = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        namespace: d.metadata.namespace,
        labels: template.metadata.labels,
        annotations: {
          ...copiedAnnotations(d),
          [REVISION_ANNOTATION]: revision,
          [DESIRED_REPLICAS_ANNOTATION]: String(d.spec.replicas ?? 1),
          [MAX_REPLICAS_ANNOTATION]: String((d.spec.replicas ?? 1) + maxSurge(d)),
        },
        ownerReferences: [controllerRef(d)],
      },
      spec: { replicas: 0, minReadySeconds: d.spec.minReadySeconds, selector, template },
    };
    rs.spec.replicas = newRSNewReplicas(d, [...old, rs], rs);
    try {
      const created = await this.ctx.store.create(rs);
      if ((rs.spec.replicas ?? 0) > 0) {
        this.ctx.event(COMPONENT, d, 'Normal', 'ScalingReplicaSet', `Scaled up replica set ${created.metadata.name} from 0 to ${rs.spec.replicas}`);
      }
      await this.setDeploymentRevision(d, revision);
      await this.patchStatusConditions(d, [
        { type: 'Progressing', status: 'True', reason: Reasons.NewReplicaSetCreated, message: `Created new replica set "${created.metadata.name}"` },
      ]);
      return { newRS: created, old, created: true };
    } catch (e) {
      if (isAlreadyExists(e)) {
        // A ReplicaSet of that name with another template: a hash collision. Bump collisionCount and retry.
        const existing = await this.ctx.store.get('ReplicaSet', d.metadata.namespace, rs.metadata.name!).catch(() => undefined);
        if (existing && controllerUid(existing) === d.metadata.uid && equalIgnoreHash(existing.spec.template, d.spec.template)) {
          return { newRS: existing, old, created: false };
        }
        await this.ctx.store.updateStatus({ ...d, status: { ...(d.status ?? {}), collisionCount: (d.status?.collisionCount ?? 0) + 1 } });
        throw e;
      }
      await this.patchStatusConditions(d, [
        { type: 'ReplicaFailure', status: 'True', reason: Reasons.FailedRSCreate, message: String((e as Error)?.message ?? e) },
      ]);
      throw e;
    }
  }

  private async setDeploymentRevision(d: Deployment, revision: string): Promise<void> {
    if (d.metadata.annotations?.[REVISION_ANNOTATION] === revision) return;
    // An update, as upstream's controller writes it (its role may update deployments, not patch them).
    const updated = await this.ctx.store.update({ ...d, metadata: { ...d.metadata, annotations: { ...(d.metadata.annotations ?? {}), [REVISION_ANNOTATION]: revision } } });
    d.metadata.annotations = updated.metadata.annotations;
    d.metadata.resourceVersion = updated.metadata.resourceVersion;
  }

  private async scale(d: Deployment, rs: ReplicaSet, to: number): Promise<ReplicaSet> {
    const from = rs.spec.replicas ?? 0;
    const desired = String(d.spec.replicas ?? 1);
    const maxR = String((d.spec.replicas ?? 1) + maxSurge(d));
    if (from === to && rs.metadata.annotations?.[DESIRED_REPLICAS_ANNOTATION] === desired && rs.metadata.annotations?.[MAX_REPLICAS_ANNOTATION] === maxR) return rs;
    const out = await this.ctx.store.update({
      ...rs,
      metadata: { ...rs.metadata, annotations: { ...(rs.metadata.annotations ?? {}), [DESIRED_REPLICAS_ANNOTATION]: desired, [MAX_REPLICAS_ANNOTATION]: maxR } },
      spec: { ...rs.spec, replicas: to },
    });
    if (from !== to) {
      this.ctx.event(COMPONENT, d, 'Normal', 'ScalingReplicaSet', `Scaled ${to > from ? 'up' : 'down'} replica set ${rs.metadata.name} from ${from} to ${to}`);
    }
    return out;
  }

  private async rolloutRolling(d: Deployment, sets: ReplicaSet[]) {
    const r = await this.getNewRS(d, sets, true);
    let newRS = r.newRS!;
    let old = r.old;
    // Scale up the new ReplicaSet within maxSurge.
    const want = (newRS.spec.replicas ?? 0) > (d.spec.replicas ?? 1) ? (d.spec.replicas ?? 1) : newRSNewReplicas(d, [...old, newRS], newRS);
    newRS = await this.scale(d, newRS, want);
    // Scale down old ReplicaSets within maxUnavailable.
    old = await this.reconcileOld(d, [...old, newRS], old, newRS);
    await this.cleanup(d, old);
    return this.syncStatus(d, newRS, [...old, newRS], old);
  }

  /** upstream reconcileOldReplicaSets: unhealthy old replicas first, then healthy ones down to minAvailable. */
  private async reconcileOld(d: Deployment, all: ReplicaSet[], old: ReplicaSet[], newRS: ReplicaSet): Promise<ReplicaSet[]> {
    const oldCount = old.reduce((n, rs) => n + (rs.spec.replicas ?? 0), 0);
    if (oldCount === 0) return old;
    const allCount = all.reduce((n, rs) => n + (rs.spec.replicas ?? 0), 0);
    const minAvailable = (d.spec.replicas ?? 1) - maxUnavailable(d);
    const newUnavailable = (newRS.spec.replicas ?? 0) - (newRS.status?.availableReplicas ?? 0);
    let maxScaledDown = allCount - minAvailable - newUnavailable;
    if (maxScaledDown <= 0) return old;
    const out = [...old].sort(byCreation);
    // Clean up unhealthy replicas of old sets first.
    for (let i = 0; i < out.length && maxScaledDown > 0; i++) {
      const rs = out[i];
      const replicas = rs.spec.replicas ?? 0;
      if (replicas === 0) continue;
      const unhealthy = replicas - (rs.status?.availableReplicas ?? 0);
      if (unhealthy <= 0) continue;
      const down = Math.min(maxScaledDown, unhealthy);
      out[i] = await this.scale(d, rs, replicas - down);
      maxScaledDown -= down;
    }
    // Then healthy ones, while availability stays at or above minAvailable.
    const available = [...out, newRS].reduce((n, rs) => n + (rs.status?.availableReplicas ?? 0), 0);
    let total = available - minAvailable;
    for (let i = 0; i < out.length && total > 0; i++) {
      const rs = out[i];
      const replicas = rs.spec.replicas ?? 0;
      if (replicas === 0) continue;
      const down = Math.min(replicas, total);
      out[i] = await this.scale(d, rs, replicas - down);
      total -= down;
    }
    return out;
  }

  private async rolloutRecreate(d: Deployment, sets: ReplicaSet[]) {
    const r = await this.getNewRS(d, sets, false);
    let old = r.old;
    // Scale every old ReplicaSet to zero and wait for its pods to go.
    let scaled = false;
    old = await Promise.all(
      old.map(async (rs) => {
        if ((rs.spec.replicas ?? 0) === 0) return rs;
        scaled = true;
        return this.scale(d, rs, 0);
      }),
    );
    if (scaled) return this.syncStatus(d, r.newRS, r.newRS ? [...old, r.newRS] : old, old);
    const oldPodsRunning = old.some((rs) =>
      (this.pods.indexer.byIndex(CONTROLLER_UID_INDEX, rs.metadata.uid!) as Pod[]).some((p) => p.status?.phase !== 'Failed' && p.status?.phase !== 'Succeeded'),
    );
    if (oldPodsRunning) return this.syncStatus(d, r.newRS, r.newRS ? [...old, r.newRS] : old, old);
    let newRS = r.newRS;
    if (!newRS) newRS = (await this.getNewRS(d, sets, true)).newRS!;
    newRS = await this.scale(d, newRS, d.spec.replicas ?? 1);
    await this.cleanup(d, old);
    return this.syncStatus(d, newRS, [...old, newRS], old);
  }

  /** Some active ReplicaSet was sized for another replica count (upstream isScalingEvent). */
  private isScalingEvent(d: Deployment, sets: ReplicaSet[]): boolean {
    const desired = String(d.spec.replicas ?? 1);
    return sets.some((rs) => (rs.spec.replicas ?? 0) > 0 && rs.metadata.annotations?.[DESIRED_REPLICAS_ANNOTATION] !== undefined && rs.metadata.annotations[DESIRED_REPLICAS_ANNOTATION] !== desired);
  }

  /** upstream sync(): scale without rolling out, then clean up and report status. */
  private async syncScale(d: Deployment, sets: ReplicaSet[]) {
    const r = await this.getNewRS(d, sets, false);
    const scaled = await this.scaleProportionally(d, r.newRS, r.old);
    const newRS = r.newRS ? scaled.find((x) => x.metadata.uid === r.newRS!.metadata.uid) : undefined;
    const old = scaled.filter((x) => x.metadata.uid !== r.newRS?.metadata.uid);
    await this.cleanup(d, old);
    return this.syncStatus(d, newRS, [...old, ...(newRS ? [newRS] : [])], old);
  }

  /**
   * upstream scale(): one active set takes the whole count; a saturated new set retires the old ones;
   * otherwise the difference to replicas + maxSurge is shared out in proportion to each set's size
   * (largest first), the leftover going to the largest.
   */
  private async scaleProportionally(d: Deployment, newRS: ReplicaSet | undefined, old: ReplicaSet[]): Promise<ReplicaSet[]> {
    const desired = d.spec.replicas ?? 1;
    const all = [...old, ...(newRS ? [newRS] : [])];
    const active = all.filter((rs) => (rs.spec.replicas ?? 0) > 0);
    const replace = (rs: ReplicaSet) => all.map((x) => (x.metadata.uid === rs.metadata.uid ? rs : x));
    let out = all;
    if (active.length <= 1) {
      const target = active[0] ?? newRS ?? [...old].sort((a, b) => revisionOf(b) - revisionOf(a))[0];
      if (target) out = replace(await this.scale(d, target, desired));
      return out;
    }
    if (newRS && (newRS.spec.replicas ?? 0) === desired && (newRS.status?.availableReplicas ?? 0) === desired) {
      for (const rs of old.filter((x) => (x.spec.replicas ?? 0) > 0)) out = replace(await this.scale(d, rs, 0)).map((x) => x);
      return out;
    }
    if (d.spec.strategy?.type !== 'RollingUpdate') return out;
    const allowed = desired > 0 ? desired + maxSurge(d) : 0;
    const toAdd = allowed - active.reduce((n, rs) => n + (rs.spec.replicas ?? 0), 0);
    const bySize = [...active].sort((a, b) =>
      toAdd > 0
        ? (b.spec.replicas ?? 0) - (a.spec.replicas ?? 0) || (b.metadata.creationTimestamp ?? '').localeCompare(a.metadata.creationTimestamp ?? '')
        : (b.spec.replicas ?? 0) - (a.spec.replicas ?? 0) || (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
    );
    const size = new Map<string, number>();
    let added = 0;
    for (const rs of bySize) {
      const cur = rs.spec.replicas ?? 0;
      let proportion = 0;
      if (toAdd !== 0 && cur !== 0 && toAdd !== added) {
        const deploymentReplicas = desired + maxSurge(d);
        const annotated = Number(rs.metadata.annotations?.[MAX_REPLICAS_ANNOTATION] ?? d.status?.replicas ?? 0) || 1;
        const fraction = desired === 0 ? -cur : Math.round((cur * deploymentReplicas) / annotated) - cur;
        proportion = toAdd > 0 ? Math.min(fraction, toAdd - added) : Math.max(fraction, toAdd - added);
      }
      size.set(rs.metadata.uid!, cur + proportion);
      added += proportion;
    }
    for (const [i, rs] of bySize.entries()) {
      let n = size.get(rs.metadata.uid!)!;
      if (i === 0 && toAdd !== 0) n = Math.max(0, n + toAdd - added);
      out = replace(await this.scale(d, rs, n));
    }
    return out;
  }

  /** Delete old, empty ReplicaSets beyond revisionHistoryLimit, oldest first. */
  private async cleanup(d: Deployment, old: ReplicaSet[]): Promise<void> {
    const limit = d.spec.revisionHistoryLimit ?? 10;
    const empty = old
      .filter((rs) => (rs.spec.replicas ?? 0) === 0 && (rs.status?.replicas ?? 0) === 0 && !rs.metadata.deletionTimestamp)
      .sort((a, b) => revisionOf(a) - revisionOf(b) || byCreation(a, b));
    const extra = empty.length - limit;
    for (let i = 0; i < extra; i++) {
      await this.ctx.store.delete('ReplicaSet', empty[i].metadata.namespace, empty[i].metadata.name!, { preconditions: { uid: empty[i].metadata.uid } }).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
  }

  private async patchStatusConditions(d: Deployment, conds: DeploymentCondition[]): Promise<void> {
    const now = rfc3339(this.ctx.clock.now());
    let list = (d.status?.conditions ?? []) as DeploymentCondition[];
    for (const c of conds) list = setCondition(list, { ...c, lastUpdateTime: now, lastTransitionTime: now });
    const fresh = await this.ctx.store.get('Deployment', d.metadata.namespace, d.metadata.name!).catch(() => undefined);
    if (!fresh) return;
    fresh.status = { ...(fresh.status ?? {}), conditions: list };
    d.status = (await this.ctx.store.updateStatus(fresh)).status;
  }

  /** Status and conditions (upstream syncRolloutStatus); returns a requeue for the progress deadline. */
  private async syncStatus(d: Deployment, newRS: ReplicaSet | undefined, all: ReplicaSet[], _old: ReplicaSet[]) {
    const now = this.ctx.clock.now();
    const nowStamp = rfc3339(now);
    const sum = (f: (rs: ReplicaSet) => number) => all.reduce((n, rs) => n + f(rs), 0);
    const desired = d.spec.replicas ?? 1;
    const replicas = sum((rs) => rs.status?.replicas ?? 0);
    const available = sum((rs) => rs.status?.availableReplicas ?? 0);
    const status: Deployment['status'] = {
      observedGeneration: d.metadata.generation,
      replicas,
      updatedReplicas: newRS?.status?.replicas ?? 0,
      readyReplicas: sum((rs) => rs.status?.readyReplicas ?? 0),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, Math.max(replicas, desired) - available),
      ...(d.status?.collisionCount !== undefined ? { collisionCount: d.status.collisionCount } : {}),
    };
    const cur = (d.status?.conditions ?? []) as DeploymentCondition[];
    let conds = cur;
    const minAvailable = desired - maxUnavailable(d);
    conds = setCondition(
      conds,
      available >= minAvailable
        ? { type: 'Available', status: 'True', reason: Reasons.MinimumReplicasAvailable, message: 'Deployment has minimum availability.', lastUpdateTime: nowStamp, lastTransitionTime: nowStamp }
        : { type: 'Available', status: 'False', reason: Reasons.MinimumReplicasUnavailable, message: 'Deployment does not have minimum availability.', lastUpdateTime: nowStamp, lastTransitionTime: nowStamp },
    );
    let requeueMs: number | undefined;
    const prog = getCondition(d, 'Progressing');
    const complete =
      !!newRS && status.updatedReplicas === desired && status.replicas === desired && available === desired && d.metadata.generation === status.observedGeneration;
    const deadline = d.spec.progressDeadlineSeconds;
    if (d.spec.paused) {
      conds = setCondition(conds, { type: 'Progressing', status: 'Unknown', reason: Reasons.DeploymentPaused, message: 'Deployment is paused', lastUpdateTime: nowStamp, lastTransitionTime: nowStamp });
    } else if (prog?.reason === Reasons.DeploymentPaused) {
      conds = setCondition(conds, { type: 'Progressing', status: 'Unknown', reason: Reasons.DeploymentResumed, message: 'Deployment is resumed', lastUpdateTime: nowStamp, lastTransitionTime: nowStamp });
    } else if (newRS && complete) {
      conds = setCondition(conds, {
        type: 'Progressing',
        status: 'True',
        reason: Reasons.NewReplicaSetAvailable,
        message: `ReplicaSet "${newRS.metadata.name}" has successfully progressed.`,
        lastUpdateTime: nowStamp,
        lastTransitionTime: nowStamp,
      });
    } else if (newRS) {
      const progressed =
        !prog ||
        (d.status?.updatedReplicas ?? 0) < status.updatedReplicas! ||
        (d.status?.availableReplicas ?? 0) < available ||
        (d.status?.readyReplicas ?? 0) < status.readyReplicas! ||
        prog.reason === Reasons.NewReplicaSetCreated ||
        prog.reason === Reasons.NewReplicaSetAvailable ||
        prog.reason === Reasons.DeploymentResumed;
      const since = prog?.lastUpdateTime ? Date.parse(prog.lastUpdateTime) : now.getTime();
      if (deadline !== undefined && deadline < 2147483647 && !progressed && prog?.status === 'True' && since + deadline * 1000 <= now.getTime()) {
        conds = setCondition(conds, {
          type: 'Progressing',
          status: 'False',
          reason: Reasons.ProgressDeadlineExceeded,
          message: `ReplicaSet "${newRS.metadata.name}" has timed out progressing.`,
          lastUpdateTime: nowStamp,
          lastTransitionTime: nowStamp,
        });
      } else if (progressed || prog?.reason !== Reasons.ProgressDeadlineExceeded) {
        const c: DeploymentCondition = {
          type: 'Progressing',
          status: 'True',
          reason: Reasons.ReplicaSetUpdated,
          message: `ReplicaSet "${newRS.metadata.name}" is progressing.`,
          lastUpdateTime: progressed ? nowStamp : (prog?.lastUpdateTime ?? nowStamp),
          lastTransitionTime: prog?.status === 'True' ? (prog.lastTransitionTime ?? nowStamp) : nowStamp,
        };
        conds = [...conds.filter((x) => x.type !== 'Progressing'), c];
        if (deadline !== undefined && deadline < 2147483647) {
          const at = (progressed ? now.getTime() : since) + deadline * 1000;
          requeueMs = this.ctx.clock.realDelay(Math.max(0, at - now.getTime())) + 10;
        }
      }
    }
    if (newRS && !d.spec.paused) conds = conds.filter((c) => c.type !== 'ReplicaFailure');
    // Keep upstream's order: Available before Progressing.
    conds = [...conds].sort((a, b) => ['Available', 'Progressing', 'ReplicaFailure'].indexOf(a.type) - ['Available', 'Progressing', 'ReplicaFailure'].indexOf(b.type));
    status.conditions = conds;
    // Compared as values (the stored status may list its members in another order than this one does).
    if (!isDeepStrictEqual({ ...d.status, conditions: undefined }, { ...status, conditions: undefined }) || !isDeepStrictEqual(d.status?.conditions ?? [], conds)) {
      try {
        await this.ctx.store.updateStatus({ ...d, status }, { readOnlyResult: true });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    return requeueMs !== undefined ? { requeueAfterMs: requeueMs } : undefined;
  }
}
