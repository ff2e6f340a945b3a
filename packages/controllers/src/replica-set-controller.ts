// The ReplicaSet controller (and, with kind ReplicationController, the replication manager): keeps
// `spec.replicas` active pods, adopting orphans that match the selector and releasing pods that no longer
// match, creating in slow-start batches (1, 2, 4, ...) and deleting the lowest-ranked pods first, with
// expectations so a lagging cache never doubles a create. Status carries replicas, fullyLabeledReplicas,
// readyReplicas, availableReplicas and observedGeneration.
import { isDeepStrictEqual } from 'node:util';
import {
  Controller,
  isNotFound,
  type KubeObject,
  objectKey,
  type Pod,
  type ReplicaSet,
  type Selector,
  selectorFromLabelSelector,
  selectorFromSet,
  type SharedInformer,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { Expectations } from './expectations.js';
import { CONTROLLER_UID_INDEX, NAMESPACE_INDEX, ORPHAN_INDEX, withOwnerIndexes } from './indexes.js';
import { podsToDelete } from './pod-ranking.js';
import { controllerUid, isPodActive, isPodAvailable, isPodReady, podFromTemplate, podNamePrefix } from './pod-util.js';

export type ReplicatedKind = 'ReplicaSet' | 'ReplicationController';

export interface ReplicaSetControllerOptions {
  kind?: ReplicatedKind;
  workers?: number;
  /** Most creates or deletes in one sync (upstream burstReplicas, 500). */
  burstReplicas?: number;
}

const SLOW_START_INITIAL_BATCH = 1;

export class ReplicaSetController {
  readonly kind: ReplicatedKind;
  readonly component: string;
  readonly controller: Controller;
  readonly expectations = new Expectations();
  private readonly owners: SharedInformer<string, KubeObject>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly burst: number;

  constructor(
    private readonly ctx: ControllerContext,
    opts: ReplicaSetControllerOptions = {},
  ) {
    this.kind = opts.kind ?? 'ReplicaSet';
    this.component = this.kind === 'ReplicaSet' ? 'replicaset-controller' : 'replication-controller';
    this.burst = opts.burstReplicas ?? 500;
    this.owners = withOwnerIndexes(ctx.informers.informer(this.kind)) as unknown as SharedInformer<string, KubeObject>;
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.controller = new Controller({
      name: this.component,
      workers: opts.workers ?? 5,
      informers: [this.owners, this.pods],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(this.component, e),
    });
    this.owners.addEventHandler({
      onAdd: (o) => this.controller.enqueue(o),
      onUpdate: (_a, b) => this.controller.enqueue(b),
      onDelete: (o) => {
        this.expectations.delete(objectKey(o));
        this.controller.enqueue(o);
      },
    });
    this.pods.addEventHandler({
      onAdd: (p) => {
        const owner = this.ownerKeyOf(p);
        if (owner) {
          this.expectations.creationObserved(owner);
          this.controller.enqueue(owner);
        } else this.enqueueMatching(p);
      },
      onUpdate: (a, b) => {
        const oa = this.ownerKeyOf(a);
        const ob = this.ownerKeyOf(b);
        if (oa && oa !== ob) this.controller.enqueue(oa);
        if (ob) {
          this.controller.enqueue(ob);
          // A pod that just became ready becomes available minReadySeconds later.
          const rs = this.owners.lister.get(b.metadata.namespace, ob.split('/')[1]);
          const mrs = rs?.spec?.minReadySeconds ?? 0;
          if (mrs > 0 && !isPodReady(a) && isPodReady(b)) this.controller.enqueueAfter(ob, this.ctx.clock.realDelay(mrs * 1000) + 1);
        } else this.enqueueMatching(b);
        if (b.metadata.deletionTimestamp && !a.metadata.deletionTimestamp && ob) this.expectations.deletionObserved(ob);
      },
      onDelete: (p) => {
        const owner = this.ownerKeyOf(p);
        if (owner) {
          if (!p.metadata.deletionTimestamp) this.expectations.deletionObserved(owner);
          this.controller.enqueue(owner);
        }
      },
    });
  }

  private selectorOf(o: KubeObject): Selector {
    return this.kind === 'ReplicaSet' ? selectorFromLabelSelector(o.spec?.selector) : selectorFromSet(o.spec?.selector ?? {});
  }

  private ownerKeyOf(p: Pod): string | undefined {
    const ref = p.metadata.ownerReferences?.find((r) => r.controller);
    if (!ref || ref.kind !== this.kind) return undefined;
    const o = this.owners.lister.get(p.metadata.namespace, ref.name);
    return o && o.metadata.uid === ref.uid ? objectKey(o) : undefined;
  }

  private enqueueMatching(p: Pod): void {
    if (controllerUid(p) || !isPodActive(p)) return;
    for (const o of this.owners.indexer.byIndex(NAMESPACE_INDEX, p.metadata.namespace ?? '')) {
      if (this.selectorOf(o).matches(p.metadata.labels)) this.controller.enqueue(o);
    }
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  /** The pods a ReplicaSet controls after adoption and release (upstream ClaimPods). */
  private async claimPods(rs: KubeObject, selector: Selector): Promise<Pod[]> {
    const uid = rs.metadata.uid!;
    const out: Pod[] = [];
    const store = this.ctx.store;
    // Owned pods and orphans only: a sync costs what the ReplicaSet owns, not what its namespace holds.
    const candidates = [
      ...(this.pods.indexer.byIndex(CONTROLLER_UID_INDEX, uid) as Pod[]),
      ...(this.pods.indexer.byIndex(ORPHAN_INDEX, rs.metadata.namespace ?? '') as Pod[]),
    ];
    for (const p of candidates) {
      const owner = controllerUid(p);
      const matches = selector.matches(p.metadata.labels);
      if (owner === uid) {
        if (matches || rs.metadata.deletionTimestamp) out.push(p);
        else if (!p.metadata.deletionTimestamp) {
          // Release: the pod no longer matches.
          const refs = (p.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
          await store
            .patch('Pod', p.metadata.namespace, p.metadata.name!, { metadata: { ownerReferences: refs.length ? refs : null, uid: p.metadata.uid } }, 'merge')
            .catch((e) => {
              if (!isNotFound(e)) throw e;
            });
        }
      } else if (!owner && matches && !p.metadata.deletionTimestamp && !rs.metadata.deletionTimestamp && isPodActive(p)) {
        // Adopt an orphan.
        const refs = [...(p.metadata.ownerReferences ?? []), { apiVersion: rs.apiVersion, kind: rs.kind, name: rs.metadata.name!, uid, controller: true, blockOwnerDeletion: true }];
        try {
          const adopted = await store.patch('Pod', p.metadata.namespace, p.metadata.name!, { metadata: { ownerReferences: refs, uid: p.metadata.uid } }, 'merge');
          out.push(adopted as Pod);
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
      }
    }
    return out;
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const rs = this.owners.lister.get(ns, name);
    if (!rs) {
      this.expectations.delete(key);
      return undefined;
    }
    const selector = this.selectorOf(rs);
    const needsSync = this.expectations.satisfied(key);
    const pods = await this.claimPods(rs, selector);
    const active = pods.filter(isPodActive);
    let manageErr: unknown;
    if (needsSync && !rs.metadata.deletionTimestamp) {
      try {
        await this.manageReplicas(key, rs, active);
      } catch (e) {
        manageErr = e;
      }
    }
    const requeueAfter = await this.updateStatus(rs, active, manageErr);
    if (manageErr) throw manageErr;
    return requeueAfter ? { requeueAfterMs: requeueAfter } : undefined;
  }

  private async manageReplicas(key: string, rs: KubeObject, active: Pod[]): Promise<void> {
    const want = rs.spec?.replicas ?? 1;
    const diff = active.length - want;
    if (diff < 0) {
      const n = Math.min(-diff, this.burst);
      this.expectations.expect(key, n, 0);
      const template = rs.spec.template;
      let created = 0;
      let failure: unknown;
      // Slow start: batches of 1, 2, 4, ... stop at the first failure (quota, admission).
      for (let batch = Math.min(n, SLOW_START_INITIAL_BATCH); created < n && !failure; batch = Math.min(2 * batch, n - created)) {
        const results = await Promise.allSettled(
          Array.from({ length: batch }, () => this.ctx.store.create(podFromTemplate(template, rs, podNamePrefix(rs.metadata.name!)), { readOnlyResult: true })),
        );
        for (const r of results) {
          if (r.status === 'fulfilled') {
            created++;
            this.ctx.event(this.component, rs, 'Normal', 'SuccessfulCreate', `Created pod: ${r.value.metadata.name}`);
          } else {
            failure ??= r.reason;
            this.ctx.event(this.component, rs, 'Warning', 'FailedCreate', `Error creating: ${(r.reason as Error)?.message ?? r.reason}`);
          }
        }
        if (failure) break;
      }
      const notSent = n - created - (failure ? 0 : 0);
      if (notSent > 0) this.expectations.lower(key, notSent, 0);
      if (failure) throw failure;
    } else if (diff > 0) {
      const n = Math.min(diff, this.burst);
      // Rank against every active pod the sibling ReplicaSets of one owner run, as upstream does.
      const related = this.relatedPods(rs);
      const victims = podsToDelete(active, related, n);
      this.expectations.expect(key, 0, victims.length);
      let failure: unknown;
      await Promise.all(
        victims.map(async (p) => {
          try {
            await this.ctx.store.delete('Pod', p.metadata.namespace, p.metadata.name!, { preconditions: { uid: p.metadata.uid } });
            this.ctx.event(this.component, rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata.name}`);
          } catch (e) {
            this.expectations.lower(key, 0, 1);
            if (isNotFound(e)) return;
            failure ??= e;
            this.ctx.event(this.component, rs, 'Warning', 'FailedDelete', `Error deleting: ${(e as Error)?.message ?? e}`);
          }
        }),
      );
      if (failure) throw failure;
    }
  }

  /** Active pods of this ReplicaSet and of the other ReplicaSets of its owner (a Deployment's history). */
  private relatedPods(rs: KubeObject): Pod[] {
    const ownerUid = controllerUid(rs);
    const sets = ownerUid ? this.owners.indexer.byIndex(CONTROLLER_UID_INDEX, ownerUid) : [rs];
    const out: Pod[] = [];
    for (const s of sets) for (const p of this.pods.indexer.byIndex(CONTROLLER_UID_INDEX, s.metadata.uid!) as Pod[]) if (isPodActive(p)) out.push(p);
    return out;
  }

  private async updateStatus(rs: KubeObject, active: Pod[], manageErr: unknown): Promise<number | undefined> {
    const now = this.ctx.clock.now();
    const mrs = rs.spec?.minReadySeconds ?? 0;
    const templateLabels = rs.spec?.template?.metadata?.labels ?? {};
    const fully = selectorFromSet(templateLabels);
    let ready = 0;
    let available = 0;
    let nextAvailable: number | undefined;
    for (const p of active) {
      if (!isPodReady(p)) continue;
      ready++;
      if (isPodAvailable(p, mrs, now)) available++;
      else {
        const since = Date.parse(p.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime ?? '') || now.getTime();
        const wait = since + mrs * 1000 - now.getTime();
        nextAvailable = Math.min(nextAvailable ?? wait, wait);
      }
    }
    const status: ReplicaSet['status'] = {
      replicas: active.length,
      fullyLabeledReplicas: active.filter((p) => fully.matches(p.metadata.labels)).length,
      readyReplicas: ready,
      availableReplicas: available,
      observedGeneration: rs.metadata.generation,
    };
    const conds = (rs.status?.conditions ?? []).filter((c: { type: string }) => c.type !== 'ReplicaFailure');
    if (manageErr && (rs.spec?.replicas ?? 1) > active.length) {
      conds.push({ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: String((manageErr as Error)?.message ?? manageErr), lastTransitionTime: now.toISOString().slice(0, 19) + 'Z' });
    }
    if (conds.length) status.conditions = conds;
    const cur = rs.status ?? {};
    const same =
      cur.replicas === status.replicas &&
      (cur.fullyLabeledReplicas ?? 0) === status.fullyLabeledReplicas &&
      (cur.readyReplicas ?? 0) === status.readyReplicas &&
      (cur.availableReplicas ?? 0) === status.availableReplicas &&
      cur.observedGeneration === status.observedGeneration &&
      isDeepStrictEqual(cur.conditions ?? [], status.conditions ?? []);
    if (!same) {
      try {
        await this.ctx.store.updateStatus({ ...rs, status }, { readOnlyResult: true });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    return nextAvailable !== undefined ? this.ctx.clock.realDelay(Math.max(0, nextAvailable)) + 1 : undefined;
  }
}
