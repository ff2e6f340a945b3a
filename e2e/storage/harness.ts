// A storage control plane for tests: memory store, PV binder and attach/detach controller from
// @kemu/core, the sidecars from @kemu/csi-sidecars, and our CSI driver served on a real unix socket.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Node, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@kemu/core';
import { MemoryStore } from '@kemu/core';
import { AttachDetachController, PersistentVolumeBinder } from '@kemu/core/controllers';
import {
  DEFAULT_DRIVER_NAME,
  DEFAULT_TOPOLOGY_KEY,
  type RunningCsiDriver,
  type SimBackendOptions,
  serveCsiDriver,
} from '@kemu/csi';
import {
  type CsiConnection,
  connectCsiSocket,
  ExternalAttacher,
  ExternalProvisioner,
  ExternalResizer,
  type ProvisionerOptions,
} from '@kemu/csi-sidecars';

export const DRIVER = DEFAULT_DRIVER_NAME;
export const TOPOLOGY_KEY = DEFAULT_TOPOLOGY_KEY;

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface StackOptions {
  backend: 'sim' | 'hostpath';
  nodeName?: string;
  enableAttach?: boolean;
  sim?: SimBackendOptions;
  capacityBytes?: number;
  /** Start the driver (default true); false leaves the socket absent. */
  startDriver?: boolean;
  provisioner?: Partial<ProvisionerOptions>;
}

export class Stack {
  store!: MemoryStore;
  driver: RunningCsiDriver | undefined;
  conn!: CsiConnection;
  binder!: PersistentVolumeBinder;
  adc!: AttachDetachController;
  provisioner!: ExternalProvisioner;
  attacher!: ExternalAttacher;
  resizer!: ExternalResizer;
  readonly dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-e2e-storage-'));
  readonly socket = path.join(this.dir, 'csi.sock');
  readonly nodeName: string;

  constructor(readonly opts: StackOptions) {
    this.nodeName = opts.nodeName ?? 'node-1';
  }

  async startDriver(): Promise<RunningCsiDriver> {
    this.driver = await serveCsiDriver({
      endpoint: `unix://${this.socket}`,
      nodeId: this.nodeName,
      backend: this.opts.backend,
      stateDir: path.join(this.dir, 'state'),
      useMounts: false,
      enableAttach: this.opts.enableAttach ?? false,
      // attach.test.ts reads published nodes through ControllerGetVolume, an alpha RPC
      alphaCapabilities: ['get-volume'],
      pathRoots: [this.dir],
      capacityBytes: this.opts.capacityBytes ?? 2 ** 40,
      sim: this.opts.sim,
    });
    return this.driver;
  }

  async start(): Promise<this> {
    this.store = await MemoryStore.open();
    if (this.opts.startDriver !== false) await this.startDriver();
    const node: Node = {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: this.nodeName,
        labels: { [TOPOLOGY_KEY]: this.nodeName, 'kubernetes.io/hostname': this.nodeName },
        annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
      },
      spec: {},
    } as Node;
    await this.store.create(node);
    await this.store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: this.nodeName },
      spec: { drivers: [{ name: DRIVER, nodeID: this.nodeName, topologyKeys: [TOPOLOGY_KEY] }] },
    });
    await this.store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: DRIVER },
      spec: { attachRequired: this.opts.enableAttach ?? false },
    });
    this.conn = connectCsiSocket(`unix://${this.socket}`);
    this.binder = new PersistentVolumeBinder({ store: this.store });
    this.adc = new AttachDetachController({ store: this.store });
    this.provisioner = this.newProvisioner();
    this.attacher = new ExternalAttacher({
      store: this.store,
      csi: this.conn,
      driverName: DRIVER,
      retryIntervalStartMs: 50,
      retryIntervalMaxMs: 1000,
    });
    this.resizer = new ExternalResizer({
      store: this.store,
      csi: this.conn,
      driverName: DRIVER,
      retryIntervalStartMs: 50,
      retryIntervalMaxMs: 1000,
    });
    await Promise.all([
      this.binder.start(),
      this.adc.start(),
      this.provisioner.start(),
      this.attacher.start(),
      this.resizer.start(),
    ]);
    return this;
  }

  newProvisioner(extra: Partial<ProvisionerOptions> = {}): ExternalProvisioner {
    return new ExternalProvisioner({
      store: this.store,
      csi: this.conn,
      driverName: DRIVER,
      topology: true,
      retryIntervalStartMs: 50,
      retryIntervalMaxMs: 2000,
      ...this.opts.provisioner,
      ...extra,
    });
  }

  async stop(): Promise<void> {
    await Promise.all([
      this.binder?.stop(),
      this.adc?.stop(),
      this.provisioner?.stop(),
      this.attacher?.stop(),
      this.resizer?.stop(),
    ]);
    this.conn?.close();
    await this.driver?.close();
    await this.store?.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  storageClass(name: string, o: Partial<StorageClass> = {}): Promise<unknown> {
    return this.store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name },
      provisioner: DRIVER,
      ...o,
    } as StorageClass);
  }

  claim(
    name: string,
    o: Partial<PersistentVolumeClaim['spec']> = {},
    annotations?: Record<string, string>,
  ): Promise<PersistentVolumeClaim> {
    return this.store.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: 'default', ...(annotations ? { annotations } : {}) },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...o },
    }) as Promise<PersistentVolumeClaim>;
  }

  getClaim(name: string): Promise<PersistentVolumeClaim> {
    return this.store.get('PersistentVolumeClaim', 'default', name) as Promise<PersistentVolumeClaim>;
  }

  getPV(name: string): Promise<PersistentVolume | undefined> {
    return this.store.get('PersistentVolume', '', name).catch(() => undefined) as Promise<
      PersistentVolume | undefined
    >;
  }

  async bound(name: string, timeoutMs = 20_000): Promise<PersistentVolumeClaim> {
    return until(
      `claim ${name} Bound`,
      async () => {
        const c = await this.getClaim(name);
        return c.status?.phase === 'Bound' && c.spec.volumeName ? c : undefined;
      },
      timeoutMs,
    );
  }

  /** Volumes the driver holds, by id. */
  async driverVolumes(): Promise<Map<string, { capacityBytes: number; name?: string }>> {
    const r = await this.conn.controller.ListVolumes({ maxEntries: 0, startingToken: '' });
    return new Map(
      (r.entries ?? []).map((e) => [
        e.volume!.volumeId ?? '',
        { capacityBytes: e.volume!.capacityBytes ?? 0 },
      ]),
    );
  }

  async events(name: string): Promise<{ reason?: string; message?: string; type?: string }[]> {
    return (await this.store.list('Event', { fieldSelector: `involvedObject.name=${name}` })).items;
  }
}
