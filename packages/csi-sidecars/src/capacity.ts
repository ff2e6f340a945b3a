// Storage capacity tracking (external-provisioner --enable-capacity): for every storage class of this
// driver and every topology segment its nodes report, ask GetCapacity and publish the answer as a
// CSIStorageCapacity object the scheduler reads; objects for vanished classes or segments are removed.
import {
  formatQuantity,
  InformerFactory,
  isNotFound,
  type LabelSelector,
  Quantity,
  type SharedInformer,
  type Store,
} from '@kemu/core';

import { type CsiConnection, DriverInfo, withTimeout } from './connection.js';
import { type CSIStorageCapacity, registerSidecarKinds } from './kinds.js';
import { parseClassParameters } from './params.js';

export const LABEL_DRIVER_NAME = 'csi.storage.k8s.io/drivername';
export const LABEL_MANAGED_BY = 'csi.storage.k8s.io/managed-by';

export interface CapacityOptions {
  store: Store;
  csi: CsiConnection;
  driverName?: string;
  informers?: InformerFactory;
  /** Where the objects live (the provisioner's namespace; default "default"). */
  namespace?: string;
  /** How often every (class, segment) is asked again (--capacity-poll-interval, default 1 min). */
  pollIntervalMs?: number;
  /** Also publish for Immediate classes (--capacity-for-immediate-binding). */
  forImmediateBinding?: boolean;
  /** GetCapacity calls in parallel (--capacity-threads, default 1). */
  threads?: number;
  timeoutMs?: number;
  /** managed-by label value (default external-provisioner). */
  managedBy?: string;
  onError?(what: string, err: unknown): void;
}

interface Want {
  className: string;
  segment: Record<string, string>;
  parameters: Record<string, string>;
}

const keyOf = (cls: string, seg: Record<string, string>) =>
  `${cls}\0${JSON.stringify(Object.entries(seg).sort())}`;

export class CapacityPublisher {
  readonly info: DriverInfo;
  driverName = '';
  private readonly factory: InformerFactory;
  private readonly ownFactory: boolean;
  private scInformer!: SharedInformer<'StorageClass'>;
  private csiNodeInformer!: SharedInformer<'CSINode'>;
  private nodeInformer!: SharedInformer<'Node'>;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private debounce: NodeJS.Timeout | undefined;
  private stopped = false;
  readonly stats = { getCapacityCalls: 0, syncs: 0 };

  constructor(readonly opts: CapacityOptions) {
    registerSidecarKinds();
    this.info = new DriverInfo(opts.csi, opts.timeoutMs ?? 10_000);
    this.ownFactory = !opts.informers;
    this.factory = opts.informers ?? new InformerFactory(opts.store);
  }

  async start(): Promise<void> {
    this.driverName = this.opts.driverName ?? (await this.info.driverName());
    this.scInformer = this.factory.informer('StorageClass');
    this.csiNodeInformer = this.factory.informer('CSINode');
    this.nodeInformer = this.factory.informer('Node');
    const poke = () => this.trigger();
    for (const inf of [
      this.scInformer,
      this.csiNodeInformer,
      this.nodeInformer,
    ] as SharedInformer<string>[]) {
      inf.addEventHandler({ onAdd: poke, onUpdate: poke, onDelete: poke });
      inf.start();
    }
    if (this.ownFactory) this.factory.start();
    await Promise.all([this.scInformer, this.csiNodeInformer, this.nodeInformer].map((i) => i.waitForSync()));
    await this.syncNow();
    this.timer = setInterval(() => this.trigger(), this.opts.pollIntervalMs ?? 60_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
    await this.running;
    if (this.ownFactory) await this.factory.stop();
  }

  private trigger(): void {
    if (this.stopped || this.debounce) return;
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      void this.syncNow().catch((e) => this.opts.onError?.('capacity', e));
    }, 50);
  }

  /** One full pass; concurrent requests coalesce into one more pass. */
  async syncNow(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.syncOnce();
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private wanted(): Map<string, Want> {
    const segments = new Map<string, Record<string, string>>();
    for (const cn of this.csiNodeInformer.lister.list()) {
      const d = cn.spec.drivers.find((x) => x.name === this.driverName);
      if (!d?.topologyKeys?.length) continue;
      const labels = this.nodeInformer.lister.get(undefined, cn.metadata.name!)?.metadata.labels ?? {};
      const seg: Record<string, string> = {};
      let ok = true;
      for (const k of d.topologyKeys) {
        if (labels[k] === undefined) ok = false;
        else seg[k] = labels[k];
      }
      if (ok) segments.set(JSON.stringify(Object.entries(seg).sort()), seg);
    }
    const out = new Map<string, Want>();
    for (const sc of this.scInformer.lister.list()) {
      if (sc.provisioner !== this.driverName) continue;
      if (sc.volumeBindingMode !== 'WaitForFirstConsumer' && !this.opts.forImmediateBinding) continue;
      let parameters: Record<string, string>;
      try {
        parameters = parseClassParameters(sc.parameters).driverParameters;
      } catch {
        continue;
      }
      for (const seg of segments.values())
        out.set(keyOf(sc.metadata.name!, seg), { className: sc.metadata.name!, segment: seg, parameters });
    }
    return out;
  }

  private async syncOnce(): Promise<void> {
    this.stats.syncs++;
    const ns = this.opts.namespace ?? 'default';
    const managedBy = this.opts.managedBy ?? 'external-provisioner';
    const want = this.wanted();
    const existing = (
      await this.opts.store.list('CSIStorageCapacity', {
        namespace: ns,
        labelSelector: `${LABEL_DRIVER_NAME}=${this.driverName},${LABEL_MANAGED_BY}=${managedBy}`,
      })
    ).items as CSIStorageCapacity[];
    const have = new Map<string, CSIStorageCapacity>();
    for (const o of existing) {
      const k = keyOf(o.storageClassName, o.nodeTopology?.matchLabels ?? {});
      if (want.has(k) && !have.has(k)) have.set(k, o);
      else
        await this.opts.store
          .delete('CSIStorageCapacity', ns, o.metadata.name!)
          .catch((e) => !isNotFound(e) && Promise.reject(e));
    }
    const items = [...want.entries()];
    const threads = Math.max(1, this.opts.threads ?? 1);
    let next = 0;
    const worker = async () => {
      while (next < items.length && !this.stopped) {
        const [k, w] = items[next++]!;
        try {
          await this.publish(ns, managedBy, w, have.get(k));
        } catch (e) {
          this.opts.onError?.(`capacity for ${w.className} ${JSON.stringify(w.segment)}`, e);
        }
      }
    };
    await Promise.all(Array.from({ length: threads }, worker));
  }

  private async publish(
    ns: string,
    managedBy: string,
    w: Want,
    cur: CSIStorageCapacity | undefined,
  ): Promise<void> {
    const timeoutMs = this.opts.timeoutMs ?? 10_000;
    this.stats.getCapacityCalls++;
    const r = await withTimeout(
      this.opts.csi.controller.GetCapacity(
        { volumeCapabilities: [], parameters: w.parameters, accessibleTopology: { segments: w.segment } },
        { timeoutMs },
      ),
      timeoutMs + 1000,
      'GetCapacity',
    );
    const capacity = formatQuantity(Quantity.fromValue(r.availableCapacity ?? 0, 'BinarySI'));
    const max = r.maximumVolumeSize?.value;
    const nodeTopology: LabelSelector = { matchLabels: w.segment };
    if (cur) {
      if (
        cur.capacity === capacity &&
        (cur.maximumVolumeSize ?? undefined) ===
          (max ? formatQuantity(Quantity.fromValue(max, 'BinarySI')) : undefined)
      )
        return;
      await this.opts.store.update({
        ...cur,
        capacity,
        ...(max
          ? { maximumVolumeSize: formatQuantity(Quantity.fromValue(max, 'BinarySI')) }
          : { maximumVolumeSize: undefined }),
      });
      return;
    }
    const obj: CSIStorageCapacity = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIStorageCapacity',
      metadata: {
        generateName: 'csisc-',
        namespace: ns,
        labels: { [LABEL_DRIVER_NAME]: this.driverName, [LABEL_MANAGED_BY]: managedBy },
      },
      storageClassName: w.className,
      nodeTopology,
      capacity,
      ...(max ? { maximumVolumeSize: formatQuantity(Quantity.fromValue(max, 'BinarySI')) } : {}),
    };
    await this.opts.store.create(obj);
  }
}
