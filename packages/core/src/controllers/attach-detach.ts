// The attach/detach controller: for every pod scheduled to a node, each CSI persistent volume whose driver
// needs attaching gets a VolumeAttachment named like the kubelet's CSI plugin names it; when no pod on the
// node uses the volume any more (and the kubelet no longer reports it in use) the VolumeAttachment is
// deleted, which the external-attacher turns into ControllerUnpublishVolume. The node's
// status.volumesAttached mirrors the attachments that succeeded.
import { createHash } from 'node:crypto';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../api-core.js';
import { deepCopy } from '../api-meta.js';
import type { CSIDriver, VolumeAttachment } from '../api-storage.js';
import { Controller, type ReconcileResult } from '../controller.js';
import { isAlreadyExists, isNotFound } from '../errors.js';
import { InformerFactory, type SharedInformer } from '../informer.js';
import { podVolumeClaimName } from '../pod-volume-claims.js';
import { ItemExponentialFailureRateLimiter } from '../rate-limiter.js';
import type { Store } from '../store.js';
import { RateLimitingQueue } from '../workqueue.js';
import { ANN_CONTROLLER_MANAGED_ATTACH_DETACH, Reasons } from './annotations.js';
import { EventRecorder } from './events.js';

/** `csi-<sha256(volumeHandle + driver + nodeName)>`, the name the kubelet's CSI attacher uses. */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${createHash('sha256').update(`${volumeHandle}${driver}${nodeName}`).digest('hex')}`;
}

/** The unique volume name the kubelet reports in node.status.volumesInUse / volumesAttached. */
export function csiUniqueVolumeName(driver: string, volumeHandle: string): string {
  return `kubernetes.io/csi/${driver}^${volumeHandle}`;
}

export interface AttachDetachOptions {
  store: Store;
  informers?: InformerFactory;
  workers?: number;
  recorder?: EventRecorder;
  /** Only manage nodes annotated volumes.kubernetes.io/controller-managed-attach-detach=true (default true). */
  requireManagedAnnotation?: boolean;
  /** Detach even though the kubelet still reports the volume in use after this long (default 6 min). */
  maxWaitForUnmountMs?: number;
  /** Periodic full reconcile (default 10 s). */
  resyncPeriodMs?: number;
}

const VA_NODE_INDEX = 'spec.nodeName';

/** Whether any of the pod's volumes is a claim (a PVC or a generic ephemeral volume's claim). */
function hasClaim(p: Pod): boolean {
  for (const v of p.spec?.volumes ?? []) if (podVolumeClaimName(p, v) !== undefined) return true;
  return false;
}
const POD_CLAIM_INDEX = 'pvc';
/**
 * Pods with a claim volume, by the node they are bound to: the only pods that can need an attachment, so a
 * node's sync and the periodic resync need not walk the node's other pods.
 */
const CLAIM_POD_NODE_INDEX = 'claimPodNode';
const NONE: string[] = [];

interface Desired {
  name: string;
  pv: PersistentVolume;
  driver: string;
  handle: string;
  pods: Pod[];
}

export class AttachDetachController {
  readonly controller: Controller;
  readonly recorder: EventRecorder;
  readonly podInformer: SharedInformer<'Pod'>;
  readonly nodeInformer: SharedInformer<'Node'>;
  readonly pvcInformer: SharedInformer<'PersistentVolumeClaim'>;
  readonly pvInformer: SharedInformer<'PersistentVolume'>;
  readonly vaInformer: SharedInformer<'VolumeAttachment'>;
  readonly driverInformer: SharedInformer<'CSIDriver'>;
  private readonly factory: InformerFactory;
  private readonly ownFactory: boolean;
  private readonly store: Store;
  /** When an unneeded attachment was first seen still in use, for maxWaitForUnmount. */
  private readonly unneededSince = new Map<string, number>();
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(readonly opts: AttachDetachOptions) {
    this.store = opts.store;
    this.ownFactory = !opts.informers;
    this.factory = opts.informers ?? new InformerFactory(opts.store);
    this.recorder = opts.recorder ?? new EventRecorder(opts.store, { component: 'attachdetach-controller' });
    this.podInformer = this.factory.informer('Pod');
    this.nodeInformer = this.factory.informer('Node');
    this.pvcInformer = this.factory.informer('PersistentVolumeClaim');
    this.pvInformer = this.factory.informer('PersistentVolume');
    this.vaInformer = this.factory.informer('VolumeAttachment');
    this.driverInformer = this.factory.informer('CSIDriver');
    this.podInformer.addIndexers({
      [CLAIM_POD_NODE_INDEX]: (p: Pod) => (p.spec?.nodeName && hasClaim(p) ? [p.spec.nodeName] : NONE),
      [POD_CLAIM_INDEX]: (p: Pod) =>
        (p.spec?.volumes ?? [])
          .map((v) => podVolumeClaimName(p, v))
          .filter((c): c is string => c !== undefined)
          .map((c) => `${p.metadata.namespace}/${c}`),
    });
    this.vaInformer.addIndexers({ [VA_NODE_INDEX]: (va: VolumeAttachment) => [va.spec.nodeName] });
    this.controller = new Controller({
      name: 'attachdetach',
      workers: opts.workers ?? 2,
      informers: [
        this.podInformer,
        this.nodeInformer,
        this.pvcInformer,
        this.pvInformer,
        this.vaInformer,
        this.driverInformer,
      ],
      queue: new RateLimitingQueue<string>(new ItemExponentialFailureRateLimiter(5, 30_000)),
      reconcile: (node) => this.syncNode(node),
    });
    // Only a pod with a claim volume can need an attachment (upstream's podAdd/podUpdate likewise look
    // only at the pod's volumes): a node is synced again for such pods, not for every status change of
    // every pod on it. A pod's volumes are immutable.
    const nodeOf = (p: Pod) => (hasClaim(p) ? p.spec?.nodeName : undefined);
    this.podInformer.addEventHandler({
      onAdd: (p) => nodeOf(p) && this.controller.enqueue(nodeOf(p)!),
      onUpdate: (o, p) => {
        if (nodeOf(p)) this.controller.enqueue(nodeOf(p)!);
        if (nodeOf(o) && nodeOf(o) !== nodeOf(p)) this.controller.enqueue(nodeOf(o)!);
      },
      onDelete: (p) => nodeOf(p) && this.controller.enqueue(nodeOf(p)!),
    });
    this.nodeInformer.addEventHandler(this.controller.handler());
    this.vaInformer.addEventHandler({
      onAdd: (va) => this.controller.enqueue(va.spec.nodeName),
      onUpdate: (_o, va) => this.controller.enqueue(va.spec.nodeName),
      onDelete: (va) => this.controller.enqueue(va.spec.nodeName),
    });
    const claimChanged = (c: PersistentVolumeClaim) => {
      for (const p of this.podInformer.lister.byIndex(
        POD_CLAIM_INDEX,
        `${c.metadata.namespace}/${c.metadata.name}`,
      )) {
        if (p.spec?.nodeName) this.controller.enqueue(p.spec.nodeName);
      }
    };
    this.pvcInformer.addEventHandler({ onAdd: claimChanged, onUpdate: (_o, c) => claimChanged(c) });
    const resync = opts.resyncPeriodMs ?? 10_000;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => {
        const nodes = new Set<string>();
        for (const n of this.vaInformer.indexer.indexValues(VA_NODE_INDEX)) nodes.add(n);
        for (const n of this.podInformer.indexer.indexValues(CLAIM_POD_NODE_INDEX)) nodes.add(n);
        for (const n of nodes) this.controller.enqueue(n);
      }, resync);
      this.resyncTimer.unref();
    }
  }

  async start(): Promise<void> {
    if (this.ownFactory) this.factory.start();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await this.controller.stop();
    if (this.ownFactory) await this.factory.stop();
  }

  private attachRequired(driver: string): boolean {
    const d = this.driverInformer.lister.get(undefined, driver) as CSIDriver | undefined;
    // Without a CSIDriver object the kubelet assumes the driver needs attaching.
    return d ? d.spec?.attachRequired !== false : true;
  }

  /** The attachments the node should have, from the pods scheduled to it. */
  private desired(nodeName: string): Map<string, Desired> {
    const out = new Map<string, Desired>();
    for (const pod of this.podInformer.lister.byIndex(CLAIM_POD_NODE_INDEX, nodeName)) {
      const phase = pod.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      for (const v of pod.spec?.volumes ?? []) {
        const claim = podVolumeClaimName(pod, v);
        if (!claim) continue;
        const pvc = this.pvcInformer.lister.get(pod.metadata.namespace, claim);
        if (!pvc?.spec.volumeName || pvc.status?.phase !== 'Bound') continue;
        const pv = this.pvInformer.lister.get(undefined, pvc.spec.volumeName);
        const csi = pv?.spec.csi;
        if (!pv || !csi || !this.attachRequired(csi.driver)) continue;
        const name = attachmentName(csi.volumeHandle, csi.driver, nodeName);
        const d = out.get(name);
        if (d) d.pods.push(pod);
        else out.set(name, { name, pv, driver: csi.driver, handle: csi.volumeHandle, pods: [pod] });
      }
    }
    return out;
  }

  private async syncNode(nodeName: string): Promise<ReconcileResult | undefined> {
    const node = this.nodeInformer.lister.get(undefined, nodeName);
    const managed =
      !!node &&
      (this.opts.requireManagedAnnotation === false ||
        node.metadata.annotations?.[ANN_CONTROLLER_MANAGED_ATTACH_DETACH] === 'true');
    const want = managed ? this.desired(nodeName) : new Map<string, Desired>();
    const have = new Map(
      this.vaInformer.lister.byIndex(VA_NODE_INDEX, nodeName).map((va) => [va.metadata.name!, va]),
    );
    // Attach.
    for (const d of want.values()) {
      const va = have.get(d.name);
      if (!va) {
        try {
          await this.store.create({
            apiVersion: 'storage.k8s.io/v1',
            kind: 'VolumeAttachment',
            metadata: { name: d.name },
            spec: { attacher: d.driver, nodeName, source: { persistentVolumeName: d.pv.metadata.name } },
          } satisfies VolumeAttachment);
        } catch (e) {
          if (!isAlreadyExists(e)) throw e;
        }
        continue;
      }
      if (va.status?.attachError?.message && !va.status.attached) {
        for (const p of d.pods) {
          this.recorder.event(
            p,
            'Warning',
            Reasons.FailedAttachVolume,
            `AttachVolume.Attach failed for volume "${d.pv.metadata.name}" : ${va.status.attachError.message}`,
          );
        }
      }
    }
    // Detach what no pod needs any more, once the kubelet stopped using it.
    const inUse = new Set(node?.status?.volumesInUse ?? []);
    const maxWait = this.opts.maxWaitForUnmountMs ?? 360_000;
    let retryIn: number | undefined;
    for (const [name, va] of have) {
      if (want.has(name) || va.metadata.deletionTimestamp) continue;
      const pvName = va.spec.source.persistentVolumeName;
      const pv = pvName ? this.pvInformer.lister.get(undefined, pvName) : undefined;
      const unique = pv?.spec.csi ? csiUniqueVolumeName(pv.spec.csi.driver, pv.spec.csi.volumeHandle) : '';
      if (node && unique && inUse.has(unique)) {
        const since = this.unneededSince.get(name) ?? performance.now();
        this.unneededSince.set(name, since);
        const left = since + maxWait - performance.now();
        if (left > 0) {
          retryIn = Math.min(retryIn ?? left, left, 5_000);
          continue;
        }
      }
      this.unneededSince.delete(name);
      try {
        await this.store.delete('VolumeAttachment', undefined, name);
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
    if (node) await this.updateNodeStatus(node, want);
    return retryIn !== undefined ? { requeueAfterMs: retryIn } : undefined;
  }

  /** Mirror successful attachments into node.status.volumesAttached and tell the pods. */
  private async updateNodeStatus(node: Node, want: Map<string, Desired>): Promise<void> {
    const attached: { name: string; devicePath: string }[] = [];
    for (const va of this.vaInformer.lister.byIndex(VA_NODE_INDEX, node.metadata.name!)) {
      if (!va.status?.attached) continue;
      const pvName = va.spec.source.persistentVolumeName;
      const pv = pvName ? this.pvInformer.lister.get(undefined, pvName) : undefined;
      if (!pv?.spec.csi) continue;
      attached.push({
        name: csiUniqueVolumeName(pv.spec.csi.driver, pv.spec.csi.volumeHandle),
        devicePath: '',
      });
    }
    attached.sort((a, b) => a.name.localeCompare(b.name));
    const before = node.status?.volumesAttached ?? [];
    if (JSON.stringify(before) === JSON.stringify(attached)) return;
    const had = new Set(before.map((v) => v.name));
    for (const d of want.values()) {
      if (had.has(csiUniqueVolumeName(d.driver, d.handle))) continue;
      if (!attached.some((a) => a.name === csiUniqueVolumeName(d.driver, d.handle))) continue;
      for (const p of d.pods) {
        this.recorder.event(
          p,
          'Normal',
          Reasons.SuccessfulAttachVolume,
          `AttachVolume.Attach succeeded for volume "${d.pv.metadata.name}" `,
        );
      }
    }
    const next = deepCopy(node);
    next.status = { ...(next.status ?? {}), volumesAttached: attached };
    await this.store.updateStatus(next);
  }
}
