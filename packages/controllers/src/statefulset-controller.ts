// The StatefulSet controller: pods with stable ordinal names (`<set>-<i>`), hostname and subdomain for the
// headless Service, one PersistentVolumeClaim per volumeClaimTemplate and ordinal (`<template>-<pod>`)
// created before its pod and left to the storage loop, OrderedReady (one at a time, in order, each after its
// predecessor is Running and Ready; scale-down from the highest ordinal) and Parallel management,
// RollingUpdate from the highest ordinal down to the partition within maxUnavailable (or OnDelete), ControllerRevisions for each
// template, and persistentVolumeClaimRetentionPolicy through owner references on the claims.
import {
  Controller,
  type ControllerRevision,
  deepCopy,
  isAlreadyExists,
  isNotFound,
  type PersistentVolumeClaim,
  type Pod,
  selectorFromLabelSelector,
  type SharedInformer,
  type StatefulSet,
} from '@kemu/core';
import type { ControllerContext } from './controller-context.js';
import { ensureRevision, REVISION_LABEL, revisionTemplate, truncateHistory } from './controller-history.js';
import { CONTROLLER_UID_INDEX, NAMESPACE_INDEX, withOwnerIndexes } from './indexes.js';
import { scaledValue } from './deployment-util.js';
import { controllerRef, isPodAvailable, isPodReady, isPodTerminal } from './pod-util.js';

const COMPONENT = 'statefulset-controller';
export const POD_NAME_LABEL = 'statefulset.kubernetes.io/pod-name';
export const POD_INDEX_LABEL = 'apps.kubernetes.io/pod-index';

export function ordinalOf(set: StatefulSet, pod: Pod): number | undefined {
  const name = pod.metadata.name ?? '';
  const prefix = `${set.metadata.name}-`;
  if (!name.startsWith(prefix)) return undefined;
  const rest = name.slice(prefix.length);
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : undefined;
}

export function claimName(template: PersistentVolumeClaim, podName: string): string {
  return `${template.metadata.name}-${podName}`;
}

export class StatefulSetController {
  readonly controller: Controller;
  private readonly sets: SharedInformer<'StatefulSet'>;
  private readonly pods: SharedInformer<'Pod'>;
  private readonly revisions: SharedInformer<'ControllerRevision'>;
  private readonly claims: SharedInformer<'PersistentVolumeClaim'>;

  constructor(private readonly ctx: ControllerContext) {
    this.sets = withOwnerIndexes(ctx.informers.informer('StatefulSet'));
    this.pods = withOwnerIndexes(ctx.informers.informer('Pod'));
    this.revisions = withOwnerIndexes(ctx.informers.informer('ControllerRevision'));
    this.claims = withOwnerIndexes(ctx.informers.informer('PersistentVolumeClaim'));
    this.controller = new Controller({
      name: COMPONENT,
      workers: 5,
      informers: [this.sets, this.pods, this.revisions, this.claims],
      reconcile: (key) => this.sync(key),
      onError: (_k, e) => ctx.error(COMPONENT, e),
    });
    this.sets.addEventHandler(this.controller.handler());
    const owner = (p: Pod) => {
      const ref = p.metadata.ownerReferences?.find((r) => r.controller && r.kind === 'StatefulSet');
      if (ref) this.controller.enqueue(`${p.metadata.namespace}/${ref.name}`);
    };
    this.pods.addEventHandler({ onAdd: owner, onUpdate: (_a, b) => owner(b), onDelete: owner });
  }

  async start(): Promise<void> {
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
  }

  private async revisionFor(set: StatefulSet): Promise<{ update: ControllerRevision; all: ControllerRevision[] }> {
    return ensureRevision(this.ctx, set, this.revisions.indexer.byIndex(CONTROLLER_UID_INDEX, set.metadata.uid!) as ControllerRevision[]);
  }

  private newPod(set: StatefulSet, ordinal: number, revision: ControllerRevision, template: StatefulSet['spec']['template']): Pod {
    const name = `${set.metadata.name}-${ordinal}`;
    const t = deepCopy(template);
    const volumes = (t.spec.volumes ?? []).filter((v) => !(set.spec.volumeClaimTemplates ?? []).some((c) => c.metadata.name === v.name));
    for (const c of set.spec.volumeClaimTemplates ?? []) volumes.push({ name: c.metadata.name!, persistentVolumeClaim: { claimName: claimName(c, name) } });
    t.spec.volumes = volumes.length ? volumes : undefined;
    if (!t.spec.volumes) delete t.spec.volumes;
    t.spec.hostname = name;
    if (set.spec.serviceName) t.spec.subdomain = set.spec.serviceName;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: set.metadata.namespace,
        labels: { ...(t.metadata?.labels ?? {}), [POD_NAME_LABEL]: name, [POD_INDEX_LABEL]: String(ordinal), [REVISION_LABEL]: revision.metadata.name! },
        ...(t.metadata?.annotations ? { annotations: t.metadata.annotations } : {}),
        ownerReferences: [controllerRef(set)],
      },
      spec: t.spec,
    } as Pod;
  }

  /** Create the pod's claims that do not exist yet, owned per the retention policy. */
  private async ensureClaims(set: StatefulSet, podName: string): Promise<void> {
    for (const tmpl of set.spec.volumeClaimTemplates ?? []) {
      const name = claimName(tmpl, podName);
      if (this.claims.lister.get(set.metadata.namespace, name)) continue;
      const pvc: PersistentVolumeClaim = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: {
          name,
          namespace: set.metadata.namespace,
          labels: { ...(tmpl.metadata.labels ?? {}), ...(set.spec.selector.matchLabels ?? {}) },
          ...(tmpl.metadata.annotations ? { annotations: tmpl.metadata.annotations } : {}),
          ...(set.spec.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete'
            ? { ownerReferences: [{ ...controllerRef(set), controller: false, blockOwnerDeletion: true }] }
            : {}),
        },
        spec: deepCopy(tmpl.spec),
      } as PersistentVolumeClaim;
      await this.ctx.store.create(pvc).catch((e) => {
        if (!isAlreadyExists(e)) throw e;
      });
      this.ctx.event(COMPONENT, set, 'Normal', 'SuccessfulCreate', `create Claim ${name} Pod ${podName} in StatefulSet ${set.metadata.name} success`);
    }
  }

  /** whenScaled: Delete — the claims of a condemned ordinal are owned by its pod, so they go with it. */
  private async condemnClaims(set: StatefulSet, pod: Pod): Promise<void> {
    if (set.spec.persistentVolumeClaimRetentionPolicy?.whenScaled !== 'Delete') return;
    for (const tmpl of set.spec.volumeClaimTemplates ?? []) {
      const name = claimName(tmpl, pod.metadata.name!);
      const pvc = this.claims.lister.get(set.metadata.namespace, name);
      if (!pvc || pvc.metadata.ownerReferences?.some((r) => r.uid === pod.metadata.uid)) continue;
      const refs = [...(pvc.metadata.ownerReferences ?? []), { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name!, uid: pod.metadata.uid!, blockOwnerDeletion: true }];
      await this.ctx.store.patch('PersistentVolumeClaim', pvc.metadata.namespace, name, { metadata: { ownerReferences: refs } }, 'merge').catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
  }

  private async deletePod(set: StatefulSet, pod: Pod, why: string): Promise<void> {
    await this.ctx.store.delete('Pod', pod.metadata.namespace, pod.metadata.name!, { preconditions: { uid: pod.metadata.uid } }).catch((e) => {
      if (!isNotFound(e)) throw e;
    });
    this.ctx.event(COMPONENT, set, 'Normal', 'SuccessfulDelete', `delete Pod ${pod.metadata.name} in StatefulSet ${set.metadata.name} successful${why}`);
  }

  private async sync(key: string) {
    const [ns, name] = key.split('/');
    const cached = this.sets.lister.get(ns, name) as StatefulSet | undefined;
    if (!cached || cached.metadata.deletionTimestamp) return undefined;
    const set = deepCopy(cached);
    const sel = selectorFromLabelSelector(set.spec.selector);
    const { update, all } = await this.revisionFor(set);
    const start = set.spec.ordinals?.start ?? 0;
    const replicas = set.spec.replicas ?? 1;
    const pods = (this.pods.indexer.byIndex(NAMESPACE_INDEX, ns) as Pod[]).filter(
      (p) => p.metadata.ownerReferences?.some((r) => r.controller && r.uid === set.metadata.uid) && sel.matches(p.metadata.labels),
    );
    const byOrdinal = new Map<number, Pod>();
    const condemned: Pod[] = [];
    for (const p of pods) {
      const o = ordinalOf(set, p);
      if (o === undefined) continue;
      if (o >= start && o < start + replicas) byOrdinal.set(o, p);
      else condemned.push(p);
    }
    const parallel = set.spec.podManagementPolicy === 'Parallel';
    const now = this.ctx.clock.now();
    const mrs = set.spec.minReadySeconds ?? 0;
    const healthy = (p: Pod) => p.status?.phase === 'Running' && isPodReady(p) && !p.metadata.deletionTimestamp;
    let blocked = false;
    // Create missing and replace failed pods, in ordinal order.
    for (let o = start; o < start + replicas; o++) {
      const p = byOrdinal.get(o);
      if (p && isPodTerminal(p) && !p.metadata.deletionTimestamp) {
        await this.deletePod(set, p, '');
        if (!parallel) blocked = true;
        continue;
      }
      if (!p) {
        if (blocked) break;
        const podName = `${set.metadata.name}-${o}`;
        await this.ensureClaims(set, podName);
        const currentTemplate = set.spec.updateStrategy?.type === 'OnDelete' || o < start + (set.spec.updateStrategy?.rollingUpdate?.partition ?? 0) ? this.currentTemplate(set, all) : undefined;
        const rev = currentTemplate ? (all.find((r) => r.metadata.name === set.status?.currentRevision) ?? update) : update;
        try {
          await this.ctx.store.create(this.newPod(set, o, rev, currentTemplate ?? set.spec.template));
          this.ctx.event(COMPONENT, set, 'Normal', 'SuccessfulCreate', `create Pod ${podName} in StatefulSet ${set.metadata.name} successful`);
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
        }
        if (!parallel) blocked = true;
        continue;
      }
      if (!parallel && !healthy(p)) blocked = true;
    }
    // Scale down: highest ordinal first; OrderedReady one at a time once the rest are healthy.
    if (!blocked || parallel) {
      const down = condemned.filter((p) => !p.metadata.deletionTimestamp).sort((a, b) => (ordinalOf(set, b) ?? 0) - (ordinalOf(set, a) ?? 0));
      const terminating = condemned.some((p) => p.metadata.deletionTimestamp);
      for (const p of parallel ? down : terminating ? [] : down.slice(0, 1)) {
        await this.condemnClaims(set, p);
        await this.deletePod(set, p, '');
      }
      if (!parallel && (down.length || terminating)) blocked = true;
    }
    // Rolling update: highest ordinal first, down to the partition, at most maxUnavailable (default 1) of
    // the set unavailable at a time, a missing pod counting as one (upstream MaxUnavailableStatefulSet).
    if (!blocked && set.spec.updateStrategy?.type !== 'OnDelete') {
      const ru = set.spec.updateStrategy?.rollingUpdate;
      const partition = ru?.partition ?? 0;
      const maxUnavailable = Math.max(1, scaledValue(ru?.maxUnavailable ?? 1, replicas, true));
      let unavailable = 0;
      for (let o = start; o < start + replicas; o++) {
        const p = byOrdinal.get(o);
        if (!p || !healthy(p) || !isPodAvailable(p, mrs, now)) unavailable++;
      }
      let budget = maxUnavailable - unavailable;
      for (let o = start + replicas - 1; o >= start + partition && budget > 0; o--) {
        const p = byOrdinal.get(o);
        if (p && !p.metadata.deletionTimestamp && p.metadata.labels?.[REVISION_LABEL] !== update.metadata.name) {
          await this.deletePod(set, p, '');
          budget--;
        }
      }
    }
    // Status.
    const live = [...byOrdinal.values()];
    const st: StatefulSet['status'] = {
      observedGeneration: set.metadata.generation,
      replicas: pods.filter((p) => !isPodTerminal(p)).length,
      readyReplicas: pods.filter((p) => isPodReady(p)).length,
      availableReplicas: pods.filter((p) => isPodAvailable(p, mrs, now)).length,
      updatedReplicas: live.filter((p) => p.metadata.labels?.[REVISION_LABEL] === update.metadata.name).length,
      currentRevision: set.status?.currentRevision || update.metadata.name,
      updateRevision: update.metadata.name,
      ...(set.status?.collisionCount !== undefined ? { collisionCount: set.status.collisionCount } : {}),
    };
    st.currentReplicas = live.filter((p) => p.metadata.labels?.[REVISION_LABEL] === st.currentRevision).length;
    if (st.updatedReplicas === replicas && live.length === replicas) {
      st.currentRevision = update.metadata.name;
      st.currentReplicas = st.updatedReplicas;
    }
    await truncateHistory(this.ctx, set, all, new Set([st.currentRevision, st.updateRevision]));
    if (JSON.stringify(cached.status ?? {}) !== JSON.stringify(st)) {
      set.status = st;
      await this.ctx.store.updateStatus(set).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    return undefined;
  }

  private currentTemplate(set: StatefulSet, all: ControllerRevision[]): StatefulSet['spec']['template'] | undefined {
    return revisionTemplate(all.find((r) => r.metadata.name === set.status?.currentRevision));
  }
}
