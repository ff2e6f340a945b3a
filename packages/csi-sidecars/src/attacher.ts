// external-attacher: turns VolumeAttachments of this driver into ControllerPublishVolume and, once they
// are being deleted, ControllerUnpublishVolume. A finalizer on the attachment (and on its PV) keeps
// both objects until the volume is detached; the outcome is reported in the attachment's status.
import {
  Controller,
  InformerFactory,
  isNotFound,
  ItemExponentialFailureRateLimiter,
  type KubeObject,
  type Node,
  type PersistentVolume,
  RateLimitingQueue,
  rfc3339,
  type SharedInformer,
  type Store,
  type VolumeAttachment,
} from '@kemu/core';
import { csi } from '@kemu/proto';
import { pvCapability } from './capabilities.js';
import { type CsiConnection, DriverInfo, describeError, withTimeout } from './connection.js';
import { readSecretData } from './provisioner.js';

/** `external-attacher/<driver with "/" replaced by "-">`. */
export function attacherFinalizer(driver: string): string {
  return `external-attacher/${driver.replaceAll('/', '-')}`;
}

/** Node annotation the kubelet fills with `{driver: nodeID}` before CSINode existed. */
export const ANN_NODE_ID = 'csi.volume.kubernetes.io/nodeid';

export interface AttacherOptions {
  store: Store;
  csi: CsiConnection;
  driverName?: string;
  informers?: InformerFactory;
  /** Attachments processed at once (--worker-threads, default 10). */
  workers?: number;
  /** Deadline of each CSI call (--timeout, default 15 s). */
  timeoutMs?: number;
  retryIntervalStartMs?: number;
  retryIntervalMaxMs?: number;
  /** Periodic re-check (--resync, default 10 min; 0 disables). */
  resyncPeriodMs?: number;
  onError?(what: string, err: unknown): void;
}

class AttachError extends Error {}

export class ExternalAttacher {
  readonly info: DriverInfo;
  driverName = '';
  finalizer = '';
  controller!: Controller;
  pvController!: Controller;
  private vaInformer!: SharedInformer<'VolumeAttachment'>;
  private pvInformer!: SharedInformer<'PersistentVolume'>;
  private csiNodeInformer!: SharedInformer<'CSINode'>;
  private nodeInformer!: SharedInformer<'Node'>;
  private readonly factory: InformerFactory;
  private readonly ownFactory: boolean;
  private readonly timeoutMs: number;
  private publishSupported: boolean | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  readonly stats = { publishCalls: 0, unpublishCalls: 0 };

  constructor(readonly opts: AttacherOptions) {
    this.timeoutMs = opts.timeoutMs ?? 15_000;
    this.info = new DriverInfo(opts.csi, this.timeoutMs);
    this.ownFactory = !opts.informers;
    this.factory = opts.informers ?? new InformerFactory(opts.store);
  }

  async start(): Promise<void> {
    this.driverName = this.opts.driverName ?? (await this.info.driverName());
    this.finalizer = attacherFinalizer(this.driverName);
    this.vaInformer = this.factory.informer('VolumeAttachment');
    this.pvInformer = this.factory.informer('PersistentVolume');
    this.csiNodeInformer = this.factory.informer('CSINode');
    this.nodeInformer = this.factory.informer('Node');
    const informers = [this.vaInformer, this.pvInformer, this.csiNodeInformer, this.nodeInformer];
    const q = () =>
      new RateLimitingQueue<string>(
        new ItemExponentialFailureRateLimiter(
          this.opts.retryIntervalStartMs ?? 1000,
          this.opts.retryIntervalMaxMs ?? 300_000,
        ),
      );
    this.controller = new Controller({
      name: 'attacher',
      workers: this.opts.workers ?? 10,
      informers,
      queue: q(),
      reconcile: (k) => this.syncVA(k),
      onError: (k, e) => this.opts.onError?.(`volumeattachment ${k}`, e),
    });
    this.pvController = new Controller({
      name: 'attacher-pv',
      workers: 1,
      informers,
      queue: q(),
      reconcile: (k) => this.syncPV(k),
      onError: (k, e) => this.opts.onError?.(`persistentvolume ${k}`, e),
    });
    const mine = (va: VolumeAttachment) => va.spec.attacher === this.driverName;
    this.vaInformer.addEventHandler({
      onAdd: (va) => mine(va) && this.controller.enqueue(va),
      onUpdate: (_o, va) => mine(va) && this.controller.enqueue(va),
      onDelete: (va) => {
        if (mine(va) && va.spec.source.persistentVolumeName)
          this.pvController.enqueue(va.spec.source.persistentVolumeName);
      },
    });
    this.pvInformer.addEventHandler({
      onUpdate: (_o, pv) => pv.metadata.deletionTimestamp && this.pvController.enqueue(pv),
      onAdd: (pv) => pv.metadata.deletionTimestamp && this.pvController.enqueue(pv),
    });
    const resync = this.opts.resyncPeriodMs ?? 600_000;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => {
        for (const va of this.vaInformer.lister.list()) if (mine(va)) this.controller.enqueue(va);
      }, resync);
      this.resyncTimer.unref();
    }
    if (this.ownFactory) this.factory.start();
    await Promise.all([this.controller.start(), this.pvController.start()]);
  }

  async stop(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await Promise.all([this.controller?.stop(), this.pvController?.stop()]);
    if (this.ownFactory) await this.factory.stop();
  }

  private call<T>(p: Promise<T>, what: string): Promise<T> {
    return withTimeout(p, this.timeoutMs + 1000, what);
  }

  private async supportsPublish(): Promise<boolean> {
    if (this.publishSupported === undefined) {
      this.publishSupported = await this.info.hasController(
        csi.ControllerServiceCapability_RPC_Type.PUBLISH_UNPUBLISH_VOLUME,
      );
    }
    return this.publishSupported;
  }

  /** The driver's id for a node: CSINode first, then the legacy node annotation. */
  private nodeID(nodeName: string): string | undefined {
    const cn = this.csiNodeInformer.lister.get(undefined, nodeName);
    const d = cn?.spec.drivers.find((x) => x.name === this.driverName);
    if (d?.nodeID) return d.nodeID;
    const node = this.nodeInformer.lister.get(undefined, nodeName) as Node | undefined;
    const raw = node?.metadata.annotations?.[ANN_NODE_ID];
    if (raw) {
      try {
        const ids = JSON.parse(raw) as Record<string, string>;
        if (ids[this.driverName]) return ids[this.driverName];
      } catch {
        // a malformed annotation is the same as none
      }
    }
    return undefined;
  }

  private async syncVA(name: string): Promise<undefined> {
    const va = this.vaInformer.lister.get(undefined, name);
    if (!va || va.spec.attacher !== this.driverName) return undefined;
    if (va.metadata.deletionTimestamp) await this.detach(va);
    else await this.attach(va);
    return undefined;
  }

  private async setStatus(va: VolumeAttachment, status: VolumeAttachment['status']): Promise<void> {
    const cur = (await this.opts.store.get('VolumeAttachment', '', va.metadata.name!)) as VolumeAttachment;
    if (JSON.stringify(cur.status ?? {}) === JSON.stringify(status)) return;
    // A patch of the status subresource, as upstream's attacher writes it (its role grants
    // volumeattachments/status patch, not update).
    await this.opts.store.patch('VolumeAttachment', '', va.metadata.name!, [{ op: 'add', path: '/status', value: status }], 'json', { subresource: 'status' });
  }

  private async attach(va: VolumeAttachment): Promise<void> {
    if (va.status?.attached && va.metadata.finalizers?.includes(this.finalizer)) return;
    const pvName = va.spec.source.persistentVolumeName;
    const fail = async (msg: string, err?: unknown): Promise<never> => {
      await this.setStatus(va, { attached: false, attachError: { time: rfc3339(), message: msg } });
      throw err ?? new AttachError(msg);
    };
    if (!pvName) return fail('inline volumes are not supported by this attacher');
    const pv =
      this.pvInformer.lister.get(undefined, pvName) ??
      ((await this.opts.store.get('PersistentVolume', '', pvName).catch(() => undefined)) as
        | PersistentVolume
        | undefined);
    if (!pv?.spec.csi) return fail(`persistentvolume "${pvName}" not found or not a CSI volume`);
    if (pv.spec.csi.driver !== this.driverName)
      return fail(`persistentvolume "${pvName}" belongs to driver ${pv.spec.csi.driver}`);
    // Finalizers first: once the driver may have published, nothing may vanish before we unpublish.
    await this.addFinalizer('VolumeAttachment', va.metadata.name!);
    await this.addFinalizer('PersistentVolume', pvName);
    let publishContext: Record<string, string> = {};
    if (await this.supportsPublish()) {
      const nodeID = this.nodeID(va.spec.nodeName);
      if (!nodeID)
        return fail(
          `node "${va.spec.nodeName}" has no NodeID annotation and no CSINode entry for driver ${this.driverName}`,
        );
      const c = pv.spec.csi;
      let secrets: Record<string, string> = {};
      try {
        if (c.controllerPublishSecretRef) {
          secrets = await readSecretData(
            this.opts.store,
            c.controllerPublishSecretRef.namespace,
            c.controllerPublishSecretRef.name,
            'controller publish',
          );
        }
        const snmw = await this.info.hasController(
          csi.ControllerServiceCapability_RPC_Type.SINGLE_NODE_MULTI_WRITER,
        );
        this.stats.publishCalls++;
        const r = await this.call(
          this.opts.csi.controller.ControllerPublishVolume(
            {
              volumeId: c.volumeHandle,
              nodeId: nodeID,
              volumeCapability: pvCapability(
                pv.spec.accessModes ?? [],
                pv.spec.volumeMode,
                c.fsType ?? '',
                pv.spec.mountOptions ?? [],
                snmw,
              ),
              readonly: c.readOnly ?? false,
              secrets,
              volumeContext: c.volumeAttributes ?? {},
            },
            { timeoutMs: this.timeoutMs },
          ),
          'ControllerPublishVolume',
        );
        publishContext = r.publishContext ?? {};
      } catch (e) {
        return fail(describeError(e), e);
      }
    }
    await this.setStatus(va, {
      attached: true,
      ...(Object.keys(publishContext).length ? { attachmentMetadata: publishContext } : {}),
    });
  }

  private async detach(va: VolumeAttachment): Promise<void> {
    if (!va.metadata.finalizers?.includes(this.finalizer)) return;
    const pvName = va.spec.source.persistentVolumeName;
    const pv = pvName ? this.pvInformer.lister.get(undefined, pvName) : undefined;
    if (await this.supportsPublish()) {
      const nodeID = this.nodeID(va.spec.nodeName);
      // Without a node id (the node is gone) there is nothing the driver could unpublish from.
      if (nodeID && pv?.spec.csi) {
        try {
          let secrets: Record<string, string> = {};
          const ref = pv.spec.csi.controllerPublishSecretRef;
          if (ref)
            secrets = await readSecretData(this.opts.store, ref.namespace, ref.name, 'controller publish');
          this.stats.unpublishCalls++;
          await this.call(
            this.opts.csi.controller.ControllerUnpublishVolume(
              { volumeId: pv.spec.csi.volumeHandle, nodeId: nodeID, secrets },
              { timeoutMs: this.timeoutMs },
            ),
            'ControllerUnpublishVolume',
          );
        } catch (e) {
          await this.setStatus(va, {
            ...(va.status ?? { attached: true }),
            detachError: { time: rfc3339(), message: describeError(e) },
          }).catch(() => {});
          throw e;
        }
      }
    }
    await this.removeFinalizer('VolumeAttachment', va.metadata.name!);
    if (pvName) this.pvController.enqueue(pvName);
  }

  /** Release the PV once no attachment of ours refers to it and it is being deleted. */
  private async syncPV(name: string): Promise<undefined> {
    const pv = this.pvInformer.lister.get(undefined, name);
    if (!pv?.metadata.finalizers?.includes(this.finalizer)) return undefined;
    const used = this.vaInformer.lister
      .list()
      .some((va) => va.spec.attacher === this.driverName && va.spec.source.persistentVolumeName === name);
    if (used || !pv.metadata.deletionTimestamp) return undefined;
    await this.removeFinalizer('PersistentVolume', name);
    return undefined;
  }

  private async addFinalizer(kind: 'VolumeAttachment' | 'PersistentVolume', name: string): Promise<void> {
    const cur = await this.opts.store.get(kind, '', name);
    if (cur.metadata.finalizers?.includes(this.finalizer)) return;
    await this.patchFinalizers(kind, cur, [...(cur.metadata.finalizers ?? []), this.finalizer]);
  }

  private async removeFinalizer(kind: 'VolumeAttachment' | 'PersistentVolume', name: string): Promise<void> {
    try {
      const cur = await this.opts.store.get(kind, '', name);
      if (!cur.metadata.finalizers?.includes(this.finalizer)) return;
      await this.patchFinalizers(kind, cur, cur.metadata.finalizers!.filter((f) => f !== this.finalizer));
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /**
   * Sets an object's finalizers with a merge patch pinned to the version read (Conflict if it changed), as
   * upstream's attacher does: its role grants patch on PersistentVolumes and VolumeAttachments, not update.
   */
  private async patchFinalizers(kind: 'VolumeAttachment' | 'PersistentVolume', cur: KubeObject, finalizers: string[]): Promise<void> {
    const metadata = { resourceVersion: cur.metadata.resourceVersion, finalizers: finalizers.length ? finalizers : null };
    await this.opts.store.patch(kind, '', cur.metadata.name!, { metadata }, 'merge');
  }
}
