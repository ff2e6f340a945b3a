// The PersistentVolume controller's binder: binds claims to volumes (static and dynamically provisioned),
// keeps the phases of both (PVC Pending/Bound/Lost, PV Available/Bound/Released/Failed), asks external
// provisioners for volumes by annotating claims, leaves WaitForFirstConsumer claims to the scheduler,
// and applies the reclaim policy to released volumes. Two work queues, claims and volumes, as upstream.
import type { PersistentVolume, PersistentVolumeClaim } from '../api-core.js';
import { deepCopy, type KubeObject, rfc3339, splitObjectKey } from '../api-meta.js';
import type { StorageClass } from '../api-storage.js';
import { Controller } from '../controller.js';
import { isConflict, isNotFound } from '../errors.js';
import { InformerFactory, type SharedInformer } from '../informer.js';
import { ItemExponentialFailureRateLimiter } from '../rate-limiter.js';
import type { Store } from '../store.js';
import { RateLimitingQueue } from '../workqueue.js';
import {
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
  Reasons,
} from './annotations.js';
import { EventRecorder } from './events.js';
import {
  checkVolumeSatisfyClaim,
  claimClass,
  findBestMatchForClaim,
  isVolumeBoundToClaim,
  volumeClass,
} from './pv-matching.js';

export interface PVBinderOptions {
  store: Store;
  /** Share informers with other controllers (default: a factory of its own). */
  informers?: InformerFactory;
  /** Workers per queue (default 4). */
  workers?: number;
  /** Re-sync every object this often (default 15 s, as kube-controller-manager's pvclaimbinder-sync-period). */
  resyncPeriodMs?: number;
  /** Events (default: written to the store as component persistentvolume-controller). */
  recorder?: EventRecorder;
  /** First retry delay and cap after a failed sync (default 5 ms and 30 s). */
  retryBaseMs?: number;
  retryMaxMs?: number;
}

const YES = 'yes';
const CLAIM_REF_INDEX = 'spec.claimRef';
const UNCLAIMED_CLASS_INDEX = 'unclaimed-class';

function ann(o: KubeObject, k: string): string | undefined {
  return o.metadata.annotations?.[k];
}

function setAnn(o: KubeObject, k: string, v: string): void {
  o.metadata.annotations = { ...(o.metadata.annotations ?? {}), [k]: v };
}

/** The claim's class is WaitForFirstConsumer (IsDelayBindingMode). */
export function isDelayBindingMode(
  claim: PersistentVolumeClaim,
  classes: { get(name: string): StorageClass | undefined },
): boolean {
  const cls = claimClass(claim);
  if (!cls) return false;
  return classes.get(cls)?.volumeBindingMode === 'WaitForFirstConsumer';
}

export class PersistentVolumeBinder {
  readonly claims: Controller;
  readonly volumes: Controller;
  readonly recorder: EventRecorder;
  private readonly factory: InformerFactory;
  private readonly ownFactory: boolean;
  readonly pvcInformer: SharedInformer<'PersistentVolumeClaim'>;
  readonly pvInformer: SharedInformer<'PersistentVolume'>;
  readonly classInformer: SharedInformer<'StorageClass'>;
  private readonly store: Store;
  /** Our own latest writes, newer than the informer cache until it catches up (upstream's local cache). */
  private readonly newerPV = new Map<string, PersistentVolume>();
  private readonly newerPVC = new Map<string, PersistentVolumeClaim>();
  /** Volumes a worker is binding right now, so concurrent claims do not all race for the same one. */
  private readonly reserved = new Set<string>();

  constructor(opts: PVBinderOptions) {
    this.store = opts.store;
    this.ownFactory = !opts.informers;
    this.factory = opts.informers ?? new InformerFactory(opts.store);
    this.recorder =
      opts.recorder ?? new EventRecorder(opts.store, { component: 'persistentvolume-controller' });
    this.pvcInformer = this.factory.informer('PersistentVolumeClaim');
    this.pvInformer = this.factory.informer('PersistentVolume');
    this.classInformer = this.factory.informer('StorageClass');
    // Candidates for a claim are the volumes pre-bound to it and the unclaimed volumes of its class.
    this.pvInformer.addIndexers({
      [CLAIM_REF_INDEX]: (pv: PersistentVolume) =>
        pv.spec.claimRef?.name ? [`${pv.spec.claimRef.namespace ?? ''}/${pv.spec.claimRef.name}`] : [],
      [UNCLAIMED_CLASS_INDEX]: (pv: PersistentVolume) => (pv.spec.claimRef ? [] : [volumeClass(pv)]),
    });
    const queue = () =>
      new RateLimitingQueue<string>(
        new ItemExponentialFailureRateLimiter(opts.retryBaseMs ?? 5, opts.retryMaxMs ?? 30_000),
      );
    const informers = [this.pvcInformer, this.pvInformer, this.classInformer];
    const workers = opts.workers ?? 4;
    this.claims = new Controller({
      name: 'pv-binder-claims',
      workers,
      informers,
      queue: queue(),
      reconcile: (k) => this.syncClaimKey(k),
    });
    this.volumes = new Controller({
      name: 'pv-binder-volumes',
      workers,
      informers,
      queue: queue(),
      reconcile: (k) => this.syncVolumeKey(k),
    });
    const resync = opts.resyncPeriodMs ?? 15_000;
    this.pvcInformer.addEventHandler({
      onAdd: (c) => this.claims.enqueue(c),
      onUpdate: (_o, c) => this.claims.enqueue(c),
      onDelete: (c) => {
        this.newerPVC.delete(`${c.metadata.namespace}/${c.metadata.name}`);
        // The volume it was bound to is released now.
        if (c.spec.volumeName) this.volumes.enqueue(c.spec.volumeName);
        for (const pv of this.pvInformer.lister.list())
          if (isVolumeBoundToClaim(pv, c)) this.volumes.enqueue(pv);
      },
    });
    this.pvInformer.addEventHandler({
      onAdd: (v) => this.onVolume(v),
      onUpdate: (_o, v) => this.onVolume(v),
      onDelete: (v) => {
        this.newerPV.delete(v.metadata.name!);
        const ref = v.spec.claimRef;
        if (ref?.name) this.claims.enqueue(`${ref.namespace}/${ref.name}`);
      },
    });
    // A new class (or a changed default) can unblock pending claims.
    this.classInformer.addEventHandler({
      onAdd: (_c, initial) => {
        if (!initial)
          for (const c of this.pvcInformer.lister.list()) if (!c.spec.volumeName) this.claims.enqueue(c);
      },
    });
    if (resync > 0) {
      this.resyncTimer = setInterval(() => {
        for (const c of this.pvcInformer.lister.list()) this.claims.enqueue(c);
        for (const v of this.pvInformer.lister.list()) this.volumes.enqueue(v);
      }, resync);
      this.resyncTimer.unref();
    }
  }

  private resyncTimer: NodeJS.Timeout | undefined;

  private onVolume(v: PersistentVolume): void {
    this.volumes.enqueue(v);
    const ref = v.spec.claimRef;
    if (ref?.name) this.claims.enqueue(`${ref.namespace}/${ref.name}`);
    else if ((v.status?.phase ?? '') !== 'Bound') {
      // A volume became available: pending claims may fit it now.
      for (const c of this.pvcInformer.lister.list())
        if (!c.spec.volumeName && c.status?.phase !== 'Bound') this.claims.enqueue(c);
    }
  }

  async start(): Promise<void> {
    if (this.ownFactory) this.factory.start();
    await Promise.all([this.claims.start(), this.volumes.start()]);
  }

  async stop(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await Promise.all([this.claims.stop(), this.volumes.stop()]);
    if (this.ownFactory) await this.factory.stop();
  }

  // ------------------------------------------------------------------ cache

  private rvNum(o: KubeObject | undefined): number {
    return Number(o?.metadata.resourceVersion ?? 0);
  }

  private getPV(name: string): PersistentVolume | undefined {
    const cached = this.pvInformer.lister.get(undefined, name);
    const mine = this.newerPV.get(name);
    if (mine && (!cached || this.rvNum(mine) > this.rvNum(cached))) return mine;
    if (mine) this.newerPV.delete(name);
    return cached;
  }

  private getPVC(namespace: string, name: string): PersistentVolumeClaim | undefined {
    const key = `${namespace}/${name}`;
    const cached = this.pvcInformer.lister.get(namespace, name);
    const mine = this.newerPVC.get(key);
    if (!cached) return undefined;
    if (mine && mine.metadata.uid === cached.metadata.uid && this.rvNum(mine) > this.rvNum(cached))
      return mine;
    if (mine) this.newerPVC.delete(key);
    return cached;
  }

  /** Volumes that could serve the claim, at their newest known state. */
  private candidateVolumes(claim: PersistentVolumeClaim): PersistentVolume[] {
    const seen = new Set<string>();
    const out: PersistentVolume[] = [];
    const add = (v: PersistentVolume) => {
      if (seen.has(v.metadata.name!)) return;
      seen.add(v.metadata.name!);
      out.push(this.getPV(v.metadata.name!) ?? v);
    };
    for (const v of this.pvInformer.lister.byIndex(
      CLAIM_REF_INDEX,
      `${claim.metadata.namespace}/${claim.metadata.name}`,
    ))
      add(v);
    for (const v of this.pvInformer.lister.byIndex(UNCLAIMED_CLASS_INDEX, claimClass(claim))) add(v);
    // Our own writes the cache has not caught up with yet.
    for (const [name, v] of this.newerPV) {
      const cached = this.pvInformer.lister.get(undefined, name);
      if (cached && this.rvNum(cached) >= this.rvNum(v)) {
        this.newerPV.delete(name);
        continue;
      }
      if (!v.spec.claimRef || isVolumeBoundToClaim(v, claim)) add(v);
    }
    return out;
  }

  private async writePV(pv: PersistentVolume, status: boolean): Promise<PersistentVolume> {
    const out = (
      status ? await this.store.updateStatus(pv) : await this.store.update(pv)
    ) as PersistentVolume;
    this.newerPV.set(out.metadata.name!, out);
    return out;
  }

  private async writePVC(pvc: PersistentVolumeClaim, status: boolean): Promise<PersistentVolumeClaim> {
    const out = (
      status ? await this.store.updateStatus(pvc) : await this.store.update(pvc)
    ) as PersistentVolumeClaim;
    this.newerPVC.set(`${out.metadata.namespace}/${out.metadata.name}`, out);
    return out;
  }

  private event(o: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.recorder.event(o, type, reason, message);
  }

  // ------------------------------------------------------------------ phases

  private async claimPhase(
    claim: PersistentVolumeClaim,
    phase: 'Pending' | 'Bound' | 'Lost',
    volume?: PersistentVolume,
  ): Promise<PersistentVolumeClaim> {
    const st = claim.status ?? {};
    let changed = st.phase !== phase;
    const next = deepCopy(claim);
    next.status = { ...(next.status ?? {}), phase };
    if (volume) {
      const modes = volume.spec.accessModes ?? [];
      if (JSON.stringify(st.accessModes ?? []) !== JSON.stringify(modes)) {
        next.status.accessModes = modes;
        changed = true;
      }
      // Capacity is set once at binding; afterwards the resizer owns it.
      if (!st.capacity?.storage && volume.spec.capacity?.storage) {
        next.status.capacity = { ...(st.capacity ?? {}), storage: volume.spec.capacity.storage };
        changed = true;
      }
    } else if (phase === 'Pending' && (st.capacity || st.accessModes)) {
      delete next.status.capacity;
      delete next.status.accessModes;
      changed = true;
    }
    if (!changed) return claim;
    return this.writePVC(next, true);
  }

  private async volumePhase(
    volume: PersistentVolume,
    phase: 'Available' | 'Bound' | 'Released' | 'Failed',
    message?: string,
  ): Promise<PersistentVolume> {
    if (volume.status?.phase === phase && (message === undefined || volume.status?.message === message))
      return volume;
    const next = deepCopy(volume);
    next.status = { phase, lastPhaseTransitionTime: rfc3339(), ...(message ? { message } : {}) };
    return this.writePV(next, true);
  }

  // ------------------------------------------------------------------ claims

  private async syncClaimKey(key: string): Promise<undefined> {
    const { namespace, name } = splitObjectKey(key);
    const claim = this.getPVC(namespace, name);
    if (!claim) return undefined;
    try {
      if (ann(claim, ANN_BIND_COMPLETED) === undefined) await this.syncUnboundClaim(claim);
      else await this.syncBoundClaim(claim);
    } catch (e) {
      // A stale cache: forget our copy and retry from the store's state.
      if (isConflict(e)) this.newerPVC.delete(key);
      throw e;
    }
    return undefined;
  }

  private async syncUnboundClaim(claim: PersistentVolumeClaim): Promise<void> {
    if (!claim.spec.volumeName) {
      const delayBinding = isDelayBindingMode(claim, {
        get: (n) => this.classInformer.lister.get(undefined, n),
      });
      const volume = findBestMatchForClaim(claim, this.candidateVolumes(claim), {
        delayBinding,
        excluded: this.reserved,
      });
      if (!volume) {
        const selectedNode = ann(claim, ANN_SELECTED_NODE);
        if (delayBinding && !selectedNode) {
          this.event(
            claim,
            'Normal',
            Reasons.WaitForFirstConsumer,
            'waiting for first consumer to be created before binding',
          );
        } else if (claimClass(claim) !== '') {
          claim = await this.provisionClaim(claim);
        } else {
          this.event(
            claim,
            'Normal',
            Reasons.FailedBinding,
            'no persistent volumes available for this claim and no storage class is set',
          );
        }
        await this.claimPhase(claim, 'Pending');
        return;
      }
      this.reserved.add(volume.metadata.name!);
      try {
        await this.bind(volume, claim);
      } finally {
        this.reserved.delete(volume.metadata.name!);
      }
      return;
    }
    // The user asked for a particular volume.
    const volume = this.getPV(claim.spec.volumeName);
    if (!volume) {
      await this.claimPhase(claim, 'Pending');
      return;
    }
    if (!volume.spec.claimRef) {
      const why = checkVolumeSatisfyClaim(volume, claim);
      if (why) {
        this.event(
          claim,
          'Warning',
          Reasons.VolumeMismatch,
          `Cannot bind to requested volume "${volume.metadata.name}": ${why}`,
        );
        await this.claimPhase(claim, 'Pending');
        return;
      }
      await this.bind(volume, claim);
    } else if (isVolumeBoundToClaim(volume, claim)) {
      await this.bind(volume, claim);
    } else {
      if (ann(claim, ANN_BOUND_BY_CONTROLLER) === undefined) {
        this.event(
          claim,
          'Warning',
          Reasons.FailedBinding,
          `volume "${volume.metadata.name}" already bound to a different claim.`,
        );
      }
      await this.claimPhase(claim, 'Pending');
    }
  }

  /** Hand the claim to its class's provisioner by annotating it (the external provisioner protocol). */
  private async provisionClaim(claim: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
    const clsName = claimClass(claim);
    const cls = this.classInformer.lister.get(undefined, clsName);
    if (!cls) {
      this.event(
        claim,
        'Warning',
        Reasons.ProvisioningFailed,
        `storageclass.storage.k8s.io "${clsName}" not found`,
      );
      return claim;
    }
    const prov = cls.provisioner;
    if (ann(claim, ANN_STORAGE_PROVISIONER) === prov && ann(claim, ANN_BETA_STORAGE_PROVISIONER) === prov)
      return claim;
    this.event(
      claim,
      'Normal',
      Reasons.ExternalProvisioning,
      `Waiting for a volume to be created either by the external provisioner '${prov}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`,
    );
    const next = deepCopy(claim);
    setAnn(next, ANN_STORAGE_PROVISIONER, prov);
    setAnn(next, ANN_BETA_STORAGE_PROVISIONER, prov);
    return this.writePVC(next, false);
  }

  private async syncBoundClaim(claim: PersistentVolumeClaim): Promise<void> {
    if (!claim.spec.volumeName) {
      if (claim.status?.phase !== 'Lost') {
        this.event(
          claim,
          'Warning',
          Reasons.ClaimLost,
          'Bound claim has lost reference to PersistentVolume. Data on the volume is lost!',
        );
      }
      await this.claimPhase(claim, 'Lost');
      return;
    }
    const volume = this.getPV(claim.spec.volumeName);
    if (!volume) {
      if (claim.status?.phase !== 'Lost') {
        this.event(
          claim,
          'Warning',
          Reasons.ClaimLost,
          'Bound claim has lost its PersistentVolume. Data on the volume is lost!',
        );
      }
      await this.claimPhase(claim, 'Lost');
      return;
    }
    if (
      !volume.spec.claimRef ||
      volume.spec.claimRef.uid === claim.metadata.uid ||
      isVolumeBoundToClaim(volume, claim)
    ) {
      await this.bind(volume, claim);
      return;
    }
    if (claim.status?.phase !== 'Lost') {
      this.event(
        claim,
        'Warning',
        Reasons.ClaimMisbound,
        'Two claims are bound to the same volume, this one is bound incorrectly',
      );
    }
    await this.claimPhase(claim, 'Lost');
  }

  /** Bind both directions and set both phases; every step is skipped when already done. */
  private async bind(volume: PersistentVolume, claim: PersistentVolumeClaim): Promise<void> {
    // 1. volume.spec.claimRef
    const ref = volume.spec.claimRef;
    const refDone =
      ref &&
      ref.uid === claim.metadata.uid &&
      ref.name === claim.metadata.name &&
      ref.namespace === claim.metadata.namespace;
    if (!refDone) {
      const next = deepCopy(volume);
      next.spec.claimRef = {
        kind: 'PersistentVolumeClaim',
        namespace: claim.metadata.namespace,
        name: claim.metadata.name,
        uid: claim.metadata.uid,
        apiVersion: 'v1',
        resourceVersion: claim.metadata.resourceVersion,
      };
      if (!isVolumeBoundToClaim(volume, claim)) setAnn(next, ANN_BOUND_BY_CONTROLLER, YES);
      volume = await this.writePV(next, false);
    }
    // 2. volume phase
    volume = await this.volumePhase(volume, 'Bound');
    // 3. claim.spec.volumeName and the bind annotations
    if (claim.spec.volumeName !== volume.metadata.name || ann(claim, ANN_BIND_COMPLETED) !== YES) {
      const next = deepCopy(claim);
      if (next.spec.volumeName !== volume.metadata.name) {
        next.spec.volumeName = volume.metadata.name;
        setAnn(next, ANN_BOUND_BY_CONTROLLER, YES);
      }
      setAnn(next, ANN_BIND_COMPLETED, YES);
      claim = await this.writePVC(next, false);
    }
    // 4. claim phase
    await this.claimPhase(claim, 'Bound', volume);
  }

  // ------------------------------------------------------------------ volumes

  private async syncVolumeKey(name: string): Promise<undefined> {
    const volume = this.getPV(name);
    if (!volume) return undefined;
    try {
      await this.syncVolume(volume);
    } catch (e) {
      if (isConflict(e)) this.newerPV.delete(name);
      throw e;
    }
    return undefined;
  }

  private async syncVolume(volume: PersistentVolume): Promise<void> {
    const ref = volume.spec.claimRef;
    if (!ref) {
      await this.volumePhase(volume, 'Available');
      return;
    }
    if (!ref.uid) {
      // Pre-bound by the user to a claim that may not exist yet.
      await this.volumePhase(volume, 'Available');
      if (ref.name) this.claims.enqueue(`${ref.namespace}/${ref.name}`);
      return;
    }
    let claim = this.getPVC(ref.namespace ?? '', ref.name ?? '');
    if (claim && claim.metadata.uid !== ref.uid) claim = undefined;
    if (!claim) {
      // Make sure the claim is really gone, not just missing from a lagging cache.
      try {
        const live = (await this.store.get(
          'PersistentVolumeClaim',
          ref.namespace ?? '',
          ref.name ?? '',
        )) as PersistentVolumeClaim;
        if (live.metadata.uid === ref.uid) {
          this.claims.enqueue(`${ref.namespace}/${ref.name}`);
          return;
        }
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
      if (volume.status?.phase !== 'Released' && volume.status?.phase !== 'Failed') {
        volume = await this.volumePhase(volume, 'Released');
      }
      await this.reclaimVolume(volume);
      return;
    }
    if (!claim.spec.volumeName) {
      // Half-bound (e.g. just provisioned): the claim's sync finishes the binding.
      this.claims.enqueue(claim);
      if (volume.status?.phase !== 'Bound') await this.volumePhase(volume, 'Available');
      return;
    }
    if (claim.spec.volumeName === volume.metadata.name) {
      await this.volumePhase(volume, 'Bound');
      return;
    }
    // The claim is bound to another volume.
    const next = deepCopy(volume);
    if (ann(volume, ANN_DYNAMICALLY_PROVISIONED) && volume.spec.persistentVolumeReclaimPolicy === 'Delete') {
      // A provisioned volume nobody will use: release it so its provisioner deletes it.
      if (volume.status?.phase !== 'Released' && volume.status?.phase !== 'Failed')
        await this.volumePhase(volume, 'Released');
      return;
    }
    if (ann(volume, ANN_BOUND_BY_CONTROLLER) !== undefined) {
      next.spec.claimRef = undefined;
      delete next.metadata.annotations![ANN_BOUND_BY_CONTROLLER];
    } else {
      // Pre-bound by the user: keep the name, forget the uid so a new claim of that name can bind.
      next.spec.claimRef = { ...ref, uid: undefined, resourceVersion: undefined };
    }
    const written = await this.writePV(next, false);
    await this.volumePhase(written, 'Available');
  }

  private async reclaimVolume(volume: PersistentVolume): Promise<void> {
    const policy = volume.spec.persistentVolumeReclaimPolicy ?? 'Retain';
    if (policy === 'Retain') return;
    if (policy === 'Recycle') {
      if (volume.status?.phase !== 'Failed') {
        this.event(
          volume,
          'Warning',
          Reasons.VolumeFailedRecycle,
          'No recycler plugin found for the volume!',
        );
        await this.volumePhase(volume, 'Failed', 'No recycler plugin found for the volume!');
      }
      return;
    }
    // Delete: a provisioned volume is deleted by the provisioner named in its annotation.
    if (ann(volume, ANN_DYNAMICALLY_PROVISIONED)) return;
    if (volume.status?.phase !== 'Failed') {
      const msg = `error getting deleter volume plugin for volume "${volume.metadata.name}": no deletable volume plugin matched`;
      this.event(volume, 'Warning', Reasons.VolumeFailedDelete, msg);
      await this.volumePhase(volume, 'Failed', msg);
    }
  }
}
