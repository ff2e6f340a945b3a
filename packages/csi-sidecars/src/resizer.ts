// external-resizer: when a bound claim of this driver asks for more storage than it has, call
// ControllerExpandVolume, record the new size on the PV, and either finish (no node step needed) or
// leave the claim FileSystemResizePending for the kubelet's NodeExpandVolume.
import {
  type Condition,
  Controller,
  deepCopy,
  formatQuantity,
  InformerFactory,
  ItemExponentialFailureRateLimiter,
  type PersistentVolume,
  type PersistentVolumeClaim,
  Quantity,
  RateLimitingQueue,
  rfc3339,
  type SharedInformer,
  type Store,
  splitObjectKey,
} from '@kemu/core';
import {
  ANN_STORAGE_RESIZER,
  claimRequestBytes,
  EventRecorder,
  volumeCapacityBytes,
} from '@kemu/core/controllers';
import { csi } from '@kemu/proto';
import { pvCapability } from './capabilities.js';
import { type CsiConnection, DriverInfo, describeError, withTimeout } from './connection.js';
import { readSecretData } from './provisioner.js';

export interface ResizerOptions {
  store: Store;
  csi: CsiConnection;
  driverName?: string;
  informers?: InformerFactory;
  /** Claims processed at once (--workers, default 10). */
  workers?: number;
  /** Deadline of each CSI call (--timeout, default 10 s). */
  timeoutMs?: number;
  retryIntervalStartMs?: number;
  retryIntervalMaxMs?: number;
  resyncPeriodMs?: number;
  recorder?: EventRecorder;
  onError?(what: string, err: unknown): void;
}

const q = (n: number) => formatQuantity(Quantity.fromValue(n, 'BinarySI'));

export const FS_RESIZE_PENDING_MESSAGE =
  'Waiting for user to (re-)start a pod to finish file system resize of volume on node.';

export class ExternalResizer {
  readonly info: DriverInfo;
  driverName = '';
  recorder!: EventRecorder;
  controller!: Controller;
  private pvcInformer!: SharedInformer<'PersistentVolumeClaim'>;
  private pvInformer!: SharedInformer<'PersistentVolume'>;
  private readonly factory: InformerFactory;
  private readonly ownFactory: boolean;
  private readonly timeoutMs: number;
  private resyncTimer: NodeJS.Timeout | undefined;
  readonly stats = { expandCalls: 0 };

  constructor(readonly opts: ResizerOptions) {
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.info = new DriverInfo(opts.csi, this.timeoutMs);
    this.ownFactory = !opts.informers;
    this.factory = opts.informers ?? new InformerFactory(opts.store);
  }

  async start(): Promise<void> {
    this.driverName = this.opts.driverName ?? (await this.info.driverName());
    this.recorder =
      this.opts.recorder ??
      new EventRecorder(this.opts.store, { component: `external-resizer ${this.driverName}` });
    this.pvcInformer = this.factory.informer('PersistentVolumeClaim');
    this.pvInformer = this.factory.informer('PersistentVolume');
    this.controller = new Controller({
      name: 'resizer',
      workers: this.opts.workers ?? 10,
      informers: [this.pvcInformer, this.pvInformer],
      queue: new RateLimitingQueue<string>(
        new ItemExponentialFailureRateLimiter(
          this.opts.retryIntervalStartMs ?? 1000,
          this.opts.retryIntervalMaxMs ?? 300_000,
        ),
      ),
      reconcile: (k) => this.sync(k),
      onError: (k, e) => this.opts.onError?.(`claim ${k}`, e),
    });
    this.pvcInformer.addEventHandler({
      onAdd: (c) => this.controller.enqueue(c),
      onUpdate: (_o, c) => this.controller.enqueue(c),
    });
    const resync = this.opts.resyncPeriodMs ?? 600_000;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => {
        for (const c of this.pvcInformer.lister.list()) this.controller.enqueue(c);
      }, resync);
      this.resyncTimer.unref();
    }
    if (this.ownFactory) this.factory.start();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await this.controller?.stop();
    if (this.ownFactory) await this.factory.stop();
  }

  private async sync(key: string): Promise<undefined> {
    const { namespace, name } = splitObjectKey(key);
    const pvc = this.pvcInformer.lister.get(namespace, name);
    if (!pvc || pvc.status?.phase !== 'Bound' || !pvc.spec.volumeName) return undefined;
    const pv = this.pvInformer.lister.get(undefined, pvc.spec.volumeName);
    if (!pv?.spec.csi || pv.spec.csi.driver !== this.driverName) return undefined;
    const resizer = pvc.metadata.annotations?.[ANN_STORAGE_RESIZER];
    if (resizer && resizer !== this.driverName) return undefined;
    const want = Number(claimRequestBytes(pvc));
    const have = pvc.status?.capacity?.storage ? Quantity.parse(pvc.status.capacity.storage).value() : 0;
    if (want <= have) return undefined;
    const pvBytes = Number(volumeCapacityBytes(pv));
    if (pvBytes >= want) {
      // The controller side is done; the kubelet finishes (or finished) on the node.
      if (!pvc.status?.conditions?.some((c) => c.type === 'FileSystemResizePending')) {
        await this.markNodeResizePending(pvc, want);
      }
      return undefined;
    }
    await this.expand(pvc, pv, want);
    return undefined;
  }

  private async patchStatus(
    pvc: PersistentVolumeClaim,
    f: (s: NonNullable<PersistentVolumeClaim['status']>) => void,
  ): Promise<void> {
    const cur = (await this.opts.store.get(
      'PersistentVolumeClaim',
      pvc.metadata.namespace,
      pvc.metadata.name!,
    )) as PersistentVolumeClaim;
    const next = deepCopy(cur);
    next.status ??= {};
    f(next.status);
    // The status subresource is patched, as upstream's resizer writes it (persistentvolumeclaims/status patch).
    await this.opts.store.patch('PersistentVolumeClaim', cur.metadata.namespace, cur.metadata.name!, [{ op: 'add', path: '/status', value: next.status }], 'json', { subresource: 'status' });
  }

  private setCondition(
    s: NonNullable<PersistentVolumeClaim['status']>,
    c: Condition | undefined,
    drop: string[],
  ): void {
    const rest = (s.conditions ?? []).filter((x) => !drop.includes(x.type) && x.type !== c?.type);
    s.conditions = c ? [...rest, c] : rest;
    if (!s.conditions.length) delete s.conditions;
  }

  private async markNodeResizePending(pvc: PersistentVolumeClaim, want: number): Promise<void> {
    await this.patchStatus(pvc, (s) => {
      s.allocatedResources = { ...(s.allocatedResources ?? {}), storage: q(want) };
      this.setCondition(
        s,
        {
          type: 'FileSystemResizePending',
          status: 'True',
          lastTransitionTime: rfc3339(),
          message: FS_RESIZE_PENDING_MESSAGE,
        },
        ['Resizing'],
      );
    });
  }

  private async expand(pvc: PersistentVolumeClaim, pv: PersistentVolume, want: number): Promise<void> {
    const c = pv.spec.csi!;
    this.recorder.event(pvc, 'Normal', 'Resizing', `External resizer is resizing volume ${pv.metadata.name}`);
    await this.patchStatus(pvc, (s) => {
      s.allocatedResources = { ...(s.allocatedResources ?? {}), storage: q(want) };
      this.setCondition(s, { type: 'Resizing', status: 'True', lastTransitionTime: rfc3339() }, []);
    });
    let newBytes = want;
    let nodeExpansionRequired = true;
    try {
      if (await this.info.hasController(csi.ControllerServiceCapability_RPC_Type.EXPAND_VOLUME)) {
        let secrets: Record<string, string> = {};
        const ref = (c as { controllerExpandSecretRef?: { name: string; namespace: string } })
          .controllerExpandSecretRef;
        if (ref)
          secrets = await readSecretData(this.opts.store, ref.namespace, ref.name, 'controller expand');
        const snmw = await this.info.hasController(
          csi.ControllerServiceCapability_RPC_Type.SINGLE_NODE_MULTI_WRITER,
        );
        this.stats.expandCalls++;
        const r = await withTimeout(
          this.opts.csi.controller.ControllerExpandVolume(
            {
              volumeId: c.volumeHandle,
              capacityRange: { requiredBytes: want, limitBytes: 0 },
              secrets,
              volumeCapability: pvCapability(
                pv.spec.accessModes ?? [],
                pv.spec.volumeMode,
                c.fsType ?? '',
                pv.spec.mountOptions ?? [],
                snmw,
              ),
            },
            { timeoutMs: this.timeoutMs },
          ),
          this.timeoutMs + 1000,
          'ControllerExpandVolume',
        );
        newBytes = r.capacityBytes || want;
        nodeExpansionRequired = r.nodeExpansionRequired ?? false;
      }
      // Without EXPAND_VOLUME the whole resize happens on the node.
    } catch (e) {
      const msg = `resize volume "${pv.metadata.name}" by resizer "${this.driverName}" failed: ${describeError(e)}`;
      this.recorder.event(pvc, 'Warning', 'VolumeResizeFailed', msg);
      await this.patchStatus(pvc, (s) =>
        this.setCondition(
          s,
          { type: 'ControllerResizeError', status: 'True', lastTransitionTime: rfc3339(), message: msg },
          ['Resizing'],
        ),
      ).catch(() => {});
      throw e;
    }
    const curPV = (await this.opts.store.get('PersistentVolume', '', pv.metadata.name!)) as PersistentVolume;
    // Pinned to the version read; upstream's resizer role grants patch on PersistentVolumes, not update.
    const capacity = { ...(curPV.spec.capacity ?? {}), storage: q(newBytes) };
    await this.opts.store.patch('PersistentVolume', '', curPV.metadata.name!, { metadata: { resourceVersion: curPV.metadata.resourceVersion }, spec: { capacity } }, 'merge');
    if (nodeExpansionRequired && pv.spec.volumeMode !== 'Block') {
      await this.markNodeResizePending(pvc, want);
      this.recorder.event(
        pvc,
        'Normal',
        'FileSystemResizeRequired',
        'Require file system resize of volume on node',
      );
      return;
    }
    await this.patchStatus(pvc, (s) => {
      s.capacity = { ...(s.capacity ?? {}), storage: q(newBytes) };
      this.setCondition(s, undefined, ['Resizing', 'ControllerResizeError', 'FileSystemResizePending']);
    });
    this.recorder.event(pvc, 'Normal', 'VolumeResizeSuccessful', 'Resize volume succeeded');
  }
}
