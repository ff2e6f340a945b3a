// external-provisioner: watches claims handed to this driver (the storage-provisioner annotation, and for
// WaitForFirstConsumer the selected-node annotation), calls CreateVolume with a name derived from the
// claim's uid (so retries and restarts can never create a second volume), creates the PersistentVolume
// `pvc-<uid>` pre-bound to the claim, and calls DeleteVolume for released volumes whose policy is Delete.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import {
  Controller,
  deepCopy,
  formatQuantity,
  InformerFactory,
  isAlreadyExists,
  isNotFound,
  ItemExponentialFailureRateLimiter,
  type PersistentVolume,
  type PersistentVolumeClaim,
  Quantity,
  RateLimitingQueue,
  type SharedInformer,
  type StorageClass,
  type Store,
  splitObjectKey,
} from '@kemu/core';
import {
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
  claimClass,
  claimRequestBytes,
  EventRecorder,
  volumeCapacityBytes,
} from '@kemu/core/controllers';
import { csi, grpc } from '@kemu/proto';
import { claimCapabilities } from './capabilities.js';
import { type CsiConnection, DriverInfo, describeError, isFinalError, withTimeout } from './connection.js';
import {
  registerSidecarKinds,
  type Secret,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from './kinds.js';
import {
  ParameterError,
  type ParsedParameters,
  PV_NAME_KEY,
  PVC_NAME_KEY,
  PVC_NAMESPACE_KEY,
  parseClassParameters,
  resolveTemplate,
  type SecretKind,
} from './params.js';

export const PROVISIONER_FINALIZER = 'external-provisioner.volume.kubernetes.io/finalizer';
export const CLONE_FINALIZER = 'provisioner.storage.kubernetes.io/cloning-protection';
export const ANN_DELETION_SECRET_NAME = 'volume.kubernetes.io/provisioner-deletion-secret-name';
export const ANN_DELETION_SECRET_NAMESPACE = 'volume.kubernetes.io/provisioner-deletion-secret-namespace';
export const PROVISIONER_IDENTITY_KEY = 'storage.kubernetes.io/csiProvisionerIdentity';

export interface ProvisionerOptions {
  store: Store;
  csi: CsiConnection;
  /** The driver's name; asked with GetPluginInfo when omitted. */
  driverName?: string;
  informers?: InformerFactory;
  /** Claims and volumes processed at once, each (--worker-threads, default 100). */
  workers?: number;
  /** Deadline of each CSI call (--timeout, default 10 s). */
  timeoutMs?: number;
  /** Retry backoff of a failed claim or volume, doubling from start to max (default 1 s .. 5 min). */
  retryIntervalStartMs?: number;
  retryIntervalMaxMs?: number;
  /** Volume and PV name prefix (--volume-name-prefix, default "pvc"). */
  volumeNamePrefix?: string;
  /** Characters of the claim uid used in the name (--volume-name-uuid-length, default all). */
  volumeNameUuidLength?: number;
  /** Pass csi.storage.k8s.io/pvc/name, pvc/namespace and pv/name to CreateVolume (--extra-create-metadata). */
  extraCreateMetadata?: boolean;
  /** Filesystem when the class names none (--default-fstype). */
  defaultFsType?: string;
  /** Send topology requirements and set PV node affinity (--feature-gates Topology=true). */
  topology?: boolean;
  /** Only the selected node's segment as requisite (--strict-topology). */
  strictTopology?: boolean;
  /** Periodic re-check of every claim and volume (default 60 s; 0 disables). */
  resyncPeriodMs?: number;
  recorder?: EventRecorder;
  onError?(what: string, err: unknown): void;
}

interface InProgress {
  uid: string;
  request: csi.CreateVolumeRequest;
  secrets: Record<string, string>;
}

const bytesQuantity = (n: number) => formatQuantity(Quantity.fromValue(n, 'BinarySI'));

class ProvisionError extends Error {}

export class ExternalProvisioner {
  readonly store: Store;
  readonly conn: CsiConnection;
  readonly info: DriverInfo;
  driverName = '';
  identity = '';
  recorder!: EventRecorder;
  claims!: Controller;
  volumes!: Controller;
  private readonly factory: InformerFactory;
  private readonly ownFactory: boolean;
  private pvcInformer!: SharedInformer<'PersistentVolumeClaim'>;
  private pvInformer!: SharedInformer<'PersistentVolume'>;
  private classInformer!: SharedInformer<'StorageClass'>;
  private nodeInformer!: SharedInformer<'Node'>;
  private csiNodeInformer!: SharedInformer<'CSINode'>;
  /** Claims whose CreateVolume may still be running in the driver (non-final error), by claim key. */
  readonly inProgress = new Map<string, InProgress>();
  private resyncTimer: NodeJS.Timeout | undefined;
  private readonly timeoutMs: number;
  readonly stats = { createVolumeCalls: 0, deleteVolumeCalls: 0, provisioned: 0, deleted: 0 };

  constructor(readonly opts: ProvisionerOptions) {
    registerSidecarKinds();
    this.store = opts.store;
    this.conn = opts.csi;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.info = new DriverInfo(opts.csi, this.timeoutMs);
    this.ownFactory = !opts.informers;
    this.factory = opts.informers ?? new InformerFactory(opts.store);
  }

  /** Resolve the driver name (waits for the driver unless a name was given), then run the controllers. */
  async start(): Promise<void> {
    this.driverName = this.opts.driverName ?? (await this.info.driverName());
    this.identity = `${Date.now()}-${randomUUID().slice(0, 4)}-${this.driverName}`;
    this.recorder =
      this.opts.recorder ??
      new EventRecorder(this.store, { component: `${this.driverName}_${os.hostname()}_${randomUUID()}` });
    this.pvcInformer = this.factory.informer('PersistentVolumeClaim');
    this.pvInformer = this.factory.informer('PersistentVolume');
    this.classInformer = this.factory.informer('StorageClass');
    this.nodeInformer = this.factory.informer('Node');
    this.csiNodeInformer = this.factory.informer('CSINode');
    const informers = [
      this.pvcInformer,
      this.pvInformer,
      this.classInformer,
      this.nodeInformer,
      this.csiNodeInformer,
    ];
    const limiter = () =>
      new RateLimitingQueue<string>(
        new ItemExponentialFailureRateLimiter(
          this.opts.retryIntervalStartMs ?? 1000,
          this.opts.retryIntervalMaxMs ?? 300_000,
        ),
      );
    const onError = (what: string) => (key: string, err: unknown) =>
      this.opts.onError?.(`${what} ${key}`, err);
    const workers = this.opts.workers ?? 100;
    this.claims = new Controller({
      name: 'provisioner-claims',
      workers,
      informers,
      queue: limiter(),
      reconcile: (k) => this.syncClaim(k),
      onError: onError('claim'),
    });
    this.volumes = new Controller({
      name: 'provisioner-volumes',
      workers,
      informers,
      queue: limiter(),
      reconcile: (k) => this.syncVolume(k),
      onError: onError('volume'),
    });
    this.pvcInformer.addEventHandler({
      onAdd: (c) => this.claims.enqueue(c),
      onUpdate: (_o, c) => this.claims.enqueue(c),
      onDelete: (c) => {
        if (this.inProgress.has(`${c.metadata.namespace}/${c.metadata.name}`)) this.claims.enqueue(c);
      },
    });
    this.pvInformer.addEventHandler({
      onAdd: (v) => this.volumes.enqueue(v),
      onUpdate: (_o, v) => this.volumes.enqueue(v),
    });
    const resync = this.opts.resyncPeriodMs ?? 60_000;
    if (resync > 0) {
      this.resyncTimer = setInterval(() => {
        for (const c of this.pvcInformer.lister.list()) this.claims.enqueue(c);
        for (const k of this.inProgress.keys()) this.claims.enqueue(k);
        for (const v of this.pvInformer.lister.list()) this.volumes.enqueue(v);
      }, resync);
      this.resyncTimer.unref();
    }
    if (this.ownFactory) this.factory.start();
    await Promise.all([this.claims.start(), this.volumes.start()]);
  }

  async stop(): Promise<void> {
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    await Promise.all([this.claims?.stop(), this.volumes?.stop()]);
    if (this.ownFactory) await this.factory.stop();
  }

  /** `<prefix>-<uid>`: the CSI volume name and the PV name of a claim. */
  volumeName(claim: PersistentVolumeClaim): string {
    const uid = claim.metadata.uid ?? '';
    const n = this.opts.volumeNameUuidLength ?? -1;
    return `${this.opts.volumeNamePrefix ?? 'pvc'}-${n >= 0 ? uid.slice(0, n) : uid}`;
  }

  private call<T>(p: Promise<T>, what: string): Promise<T> {
    return withTimeout(p, this.timeoutMs + 1000, what);
  }

  // ------------------------------------------------------------------ claims

  private isOurs(claim: PersistentVolumeClaim): boolean {
    const a = claim.metadata.annotations ?? {};
    return (a[ANN_STORAGE_PROVISIONER] ?? a[ANN_BETA_STORAGE_PROVISIONER]) === this.driverName;
  }

  private async syncClaim(key: string): Promise<undefined> {
    const { namespace, name } = splitObjectKey(key);
    const claim = this.pvcInformer.lister.get(namespace, name);
    const pending = this.inProgress.get(key);
    if (pending && (!claim || claim.metadata.uid !== pending.uid || claim.metadata.deletionTimestamp)) {
      await this.cleanupAbandoned(key, pending);
    }
    if (!claim || claim.metadata.deletionTimestamp) return undefined;
    if (claim.spec.volumeName || !this.isOurs(claim)) return undefined;
    const clsName = claimClass(claim);
    const cls = this.classInformer.lister.get(undefined, clsName);
    if (!cls) {
      this.recorder.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `storageclass.storage.k8s.io "${clsName}" not found`,
      );
      throw new ProvisionError(`storageclass.storage.k8s.io "${clsName}" not found`);
    }
    if (cls.provisioner !== this.driverName) return undefined;
    const selectedNode = claim.metadata.annotations?.[ANN_SELECTED_NODE];
    if (cls.volumeBindingMode === 'WaitForFirstConsumer' && !selectedNode) return undefined;
    const pvName = this.volumeName(claim);
    // A PV the cache has not seen yet is caught when creating it (AlreadyExists), and CreateVolume is idempotent.
    if (this.pvInformer.lister.get(undefined, pvName)) {
      this.inProgress.delete(key);
      return undefined;
    }
    await this.provision(key, claim, cls, pvName, selectedNode);
    return undefined;
  }

  /** A claim vanished while its CreateVolume might still complete: finish it and delete the volume. */
  private async cleanupAbandoned(key: string, p: InProgress): Promise<void> {
    let vol: csi.Volume | null | undefined;
    try {
      this.stats.createVolumeCalls++;
      vol = (
        await this.call(
          this.conn.controller.CreateVolume(p.request, { timeoutMs: this.timeoutMs }),
          'CreateVolume',
        )
      ).volume;
    } catch (e) {
      if (isFinalError(e)) this.inProgress.delete(key);
      throw e;
    }
    if (vol?.volumeId) {
      this.stats.deleteVolumeCalls++;
      await this.call(
        this.conn.controller.DeleteVolume(
          { volumeId: vol.volumeId, secrets: p.secrets },
          { timeoutMs: this.timeoutMs },
        ),
        'DeleteVolume',
      );
    }
    this.inProgress.delete(key);
  }

  private async provision(
    key: string,
    claim: PersistentVolumeClaim,
    cls: StorageClass,
    pvName: string,
    selectedNode: string | undefined,
  ): Promise<void> {
    const fail = (msg: string): never => {
      this.recorder.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `failed to provision volume with StorageClass "${cls.metadata.name}": ${msg}`,
      );
      throw new ProvisionError(msg);
    };
    this.recorder.event(
      claim,
      'Normal',
      'Provisioning',
      `External provisioner is provisioning volume for claim "${key}"`,
    );
    // A selector asks for an existing volume; a new one could never be guaranteed to match it.
    if (claim.spec.selector) return fail('claim Selector is not supported');
    let params: ParsedParameters;
    try {
      params = parseClassParameters(cls.parameters);
    } catch (e) {
      return fail((e as Error).message);
    }
    const requested = Number(claimRequestBytes(claim));
    const volumeMode = claim.spec.volumeMode ?? 'Filesystem';
    const fsType = volumeMode === 'Block' ? '' : params.fsType || this.opts.defaultFsType || '';
    let request: csi.CreateVolumeRequest;
    let secrets: Record<string, string> = {};
    try {
      const snmw = await this.info.hasController(
        csi.ControllerServiceCapability_RPC_Type.SINGLE_NODE_MULTI_WRITER,
      );
      const source = claim.spec.dataSource ? await this.dataSource(claim, requested) : undefined;
      const topology = await this.topologyRequirement(claim, cls, selectedNode);
      if (params.secrets.provisioner)
        secrets = await this.readSecret(params.secrets.provisioner, pvName, claim, 'provisioner');
      const parameters = { ...params.driverParameters };
      if (this.opts.extraCreateMetadata) {
        parameters[PVC_NAME_KEY] = claim.metadata.name!;
        parameters[PVC_NAMESPACE_KEY] = claim.metadata.namespace!;
        parameters[PV_NAME_KEY] = pvName;
      }
      request = {
        name: pvName,
        capacityRange: { requiredBytes: requested, limitBytes: 0 },
        volumeCapabilities: claimCapabilities(
          claim.spec.accessModes ?? [],
          volumeMode,
          fsType,
          cls.mountOptions ?? [],
          snmw,
        ),
        parameters,
        secrets,
        volumeContentSource: source ?? null,
        accessibilityRequirements: topology ?? null,
        mutableParameters: {},
      };
    } catch (e) {
      return fail(e instanceof ParameterError || e instanceof ProvisionError ? e.message : describeError(e));
    }
    let volume: csi.Volume;
    try {
      this.stats.createVolumeCalls++;
      const r = await this.call(
        this.conn.controller.CreateVolume(request, { timeoutMs: this.timeoutMs }),
        'CreateVolume',
      );
      if (!r.volume?.volumeId) throw new ProvisionError('the driver returned no volume id');
      volume = r.volume;
    } catch (e) {
      const msg = describeError(e);
      this.recorder.event(
        claim,
        'Warning',
        'ProvisioningFailed',
        `failed to provision volume with StorageClass "${cls.metadata.name}": ${msg}`,
      );
      if (isFinalError(e)) this.inProgress.delete(key);
      else this.inProgress.set(key, { uid: claim.metadata.uid!, request, secrets });
      const code = (e as { code?: number }).code;
      if (
        code === grpc.status.RESOURCE_EXHAUSTED &&
        selectedNode &&
        cls.volumeBindingMode === 'WaitForFirstConsumer'
      ) {
        // Not enough room on that node: let the scheduler pick again.
        await this.store
          .patch(
            'PersistentVolumeClaim',
            claim.metadata.namespace,
            claim.metadata.name!,
            { metadata: { annotations: { [ANN_SELECTED_NODE]: null } } },
            'merge',
          )
          .catch(() => {});
        return;
      }
      throw e;
    }
    // From here on the volume exists: until the PV is stored, a vanished claim must take it along.
    this.inProgress.set(key, { uid: claim.metadata.uid!, request, secrets });
    const capacity = volume.capacityBytes || requested;
    if (capacity < requested) {
      this.stats.deleteVolumeCalls++;
      await this.call(
        this.conn.controller.DeleteVolume(
          { volumeId: volume.volumeId, secrets },
          { timeoutMs: this.timeoutMs },
        ),
        'DeleteVolume',
      );
      this.inProgress.delete(key);
      fail(`created volume capacity ${capacity} less than requested capacity ${requested}`);
    }
    const pv = this.buildPV(claim, cls, pvName, volume, capacity, fsType, params);
    try {
      await this.store.create(pv);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
      const other = (await this.store.get('PersistentVolume', '', pvName)) as PersistentVolume;
      if (other.spec.claimRef?.uid !== claim.metadata.uid)
        throw new ProvisionError(`persistentvolume ${pvName} exists and belongs to another claim`);
    }
    this.inProgress.delete(key);
    this.stats.provisioned++;
    if (claim.spec.dataSource?.kind === 'PersistentVolumeClaim') await this.releaseCloneSource(claim);
    this.recorder.event(
      claim,
      'Normal',
      'ProvisioningSucceeded',
      `Successfully provisioned volume ${pvName}`,
    );
  }

  private buildPV(
    claim: PersistentVolumeClaim,
    cls: StorageClass,
    pvName: string,
    volume: csi.Volume,
    capacity: number,
    fsType: string,
    params: ParsedParameters,
  ): PersistentVolume {
    const annotations: Record<string, string> = { [ANN_DYNAMICALLY_PROVISIONED]: this.driverName };
    const prov = params.secrets.provisioner;
    if (prov) {
      annotations[ANN_DELETION_SECRET_NAME] = resolveTemplate(prov.nameTemplate, pvName, claim, true);
      annotations[ANN_DELETION_SECRET_NAMESPACE] = resolveTemplate(
        prov.namespaceTemplate,
        pvName,
        claim,
        false,
      );
    }
    const ref = (kind: SecretKind) => {
      const s = params.secrets[kind];
      if (!s) return undefined;
      return {
        name: resolveTemplate(s.nameTemplate, pvName, claim, true),
        namespace: resolveTemplate(s.namespaceTemplate, pvName, claim, false),
      };
    };
    const policy = cls.reclaimPolicy ?? 'Delete';
    const csiSource: Record<string, unknown> = {
      driver: this.driverName,
      volumeHandle: volume.volumeId,
      volumeAttributes: { ...(volume.volumeContext ?? {}), [PROVISIONER_IDENTITY_KEY]: this.identity },
    };
    if (fsType) csiSource.fsType = fsType;
    for (const [kind, field] of [
      ['controllerPublish', 'controllerPublishSecretRef'],
      ['nodeStage', 'nodeStageSecretRef'],
      ['nodePublish', 'nodePublishSecretRef'],
      ['controllerExpand', 'controllerExpandSecretRef'],
      ['nodeExpand', 'nodeExpandSecretRef'],
    ] as const) {
      const r = ref(kind);
      if (r) csiSource[field] = r;
    }
    const topo = volume.accessibleTopology ?? [];
    const pv: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name: pvName,
        annotations,
        ...(policy === 'Delete' ? { finalizers: [PROVISIONER_FINALIZER] } : {}),
      },
      spec: {
        accessModes: claim.spec.accessModes,
        capacity: { storage: bytesQuantity(capacity) },
        claimRef: {
          kind: 'PersistentVolumeClaim',
          apiVersion: 'v1',
          namespace: claim.metadata.namespace,
          name: claim.metadata.name,
          uid: claim.metadata.uid,
          resourceVersion: claim.metadata.resourceVersion,
        },
        persistentVolumeReclaimPolicy: policy,
        storageClassName: cls.metadata.name,
        volumeMode: claim.spec.volumeMode ?? 'Filesystem',
        csi: csiSource as unknown as PersistentVolume['spec']['csi'],
        ...(cls.mountOptions?.length ? { mountOptions: cls.mountOptions } : {}),
        ...(this.opts.topology && topo.length
          ? {
              nodeAffinity: {
                required: {
                  nodeSelectorTerms: topo.map((t) => ({
                    matchExpressions: Object.entries(t.segments ?? {}).map(([key, v]) => ({
                      key,
                      operator: 'In' as const,
                      values: [v],
                    })),
                  })),
                },
              },
            }
          : {}),
      },
    };
    return pv;
  }

  private async readSecret(
    s: { nameTemplate: string; namespaceTemplate: string },
    pvName: string,
    claim: PersistentVolumeClaim | undefined,
    what: string,
  ): Promise<Record<string, string>> {
    const name = resolveTemplate(s.nameTemplate, pvName, claim, true);
    const namespace = resolveTemplate(s.namespaceTemplate, pvName, claim, false);
    return readSecretData(this.store, namespace, name, what);
  }

  /** The content source of a clone or restore, checked as upstream checks it. */
  private async dataSource(
    claim: PersistentVolumeClaim,
    requested: number,
  ): Promise<csi.VolumeContentSource> {
    const ds = claim.spec.dataSource!;
    const ns = claim.metadata.namespace!;
    if (ds.kind === 'VolumeSnapshot' && ds.apiGroup === 'snapshot.storage.k8s.io') {
      const prefix = `error getting handle for DataSource Type VolumeSnapshot by Name ${ds.name}`;
      let snap: VolumeSnapshot;
      try {
        snap = (await this.store.get('VolumeSnapshot', ns, ds.name)) as VolumeSnapshot;
      } catch (e) {
        throw new ProvisionError(
          `${prefix}: error getting snapshot ${ds.name} from api server: ${(e as Error).message}`,
        );
      }
      if (snap.status?.readyToUse !== true)
        throw new ProvisionError(`${prefix}: snapshot ${ds.name} is not Ready`);
      const contentName = snap.status.boundVolumeSnapshotContentName;
      if (!contentName) throw new ProvisionError(`${prefix}: snapshot ${ds.name} not bound`);
      let content: VolumeSnapshotContent;
      try {
        content = (await this.store.get('VolumeSnapshotContent', '', contentName)) as VolumeSnapshotContent;
      } catch (e) {
        throw new ProvisionError(
          `${prefix}: error getting snapshotcontent ${contentName} for snapshot ${ns}/${ds.name} from api server: ${(e as Error).message}`,
        );
      }
      const r = content.spec.volumeSnapshotRef;
      if (r.name !== ds.name || r.namespace !== ns || (r.uid && r.uid !== snap.metadata.uid)) {
        throw new ProvisionError(
          `${prefix}: snapshotcontent ${contentName} for snapshot ${ns}/${ds.name} is bound to a different snapshot`,
        );
      }
      if (content.spec.driver !== this.driverName) {
        throw new ProvisionError(
          `${prefix}: snapshotcontent ${contentName} is handled by driver ${content.spec.driver}, not ${this.driverName}`,
        );
      }
      const handle = content.status?.snapshotHandle ?? content.spec.source.snapshotHandle;
      if (!handle)
        throw new ProvisionError(`${prefix}: snapshot handle of snapshotcontent ${contentName} is empty`);
      if (snap.status.restoreSize) {
        const rs = Quantity.parse(snap.status.restoreSize).value();
        if (requested < rs) {
          throw new ProvisionError(
            `${prefix}: requested volume size ${requested} is less than the size ${rs} for the source snapshot ${ds.name}`,
          );
        }
      }
      return { snapshot: { snapshotId: handle } };
    }
    if (ds.kind === 'PersistentVolumeClaim' && !ds.apiGroup) {
      if (!(await this.info.hasController(csi.ControllerServiceCapability_RPC_Type.CLONE_VOLUME))) {
        throw new ProvisionError(
          `the driver ${this.driverName} does not support cloning (no CLONE_VOLUME capability)`,
        );
      }
      let src: PersistentVolumeClaim;
      try {
        src = (await this.store.get('PersistentVolumeClaim', ns, ds.name)) as PersistentVolumeClaim;
      } catch (e) {
        throw new ProvisionError(
          `error getting PVC ${ds.name} (namespace "${ns}") from api server: ${(e as Error).message}`,
        );
      }
      if (src.status?.phase !== 'Bound' || !src.spec.volumeName) {
        throw new ProvisionError(
          `the PVC ${ds.name} not yet bound to a PV, will not attempt to use it as a data source`,
        );
      }
      if (claimClass(src) !== claimClass(claim)) {
        throw new ProvisionError(
          `the source PVC and destination PVCs must be in the same storage class for cloning. Source is in ${claimClass(src)}, but new PVC is in ${claimClass(claim)}`,
        );
      }
      if ((src.spec.volumeMode ?? 'Filesystem') !== (claim.spec.volumeMode ?? 'Filesystem')) {
        throw new ProvisionError(
          `the source PVC and destination PVCs must have the same volume mode for cloning. Source is ${src.spec.volumeMode}. Requested PVC is ${claim.spec.volumeMode}`,
        );
      }
      const srcPV = (await this.store
        .get('PersistentVolume', '', src.spec.volumeName)
        .catch(() => undefined)) as PersistentVolume | undefined;
      if (!srcPV?.spec.csi || srcPV.spec.csi.driver !== this.driverName) {
        throw new ProvisionError(`the source PVC ${ds.name} is not a volume of driver ${this.driverName}`);
      }
      const srcBytes = Number(volumeCapacityBytes(srcPV));
      if (requested < srcBytes) {
        throw new ProvisionError(
          `error, new PVC request must be greater than or equal in size to the specified PVC data source, requested ${requested} but source is ${srcBytes}`,
        );
      }
      if (!src.metadata.finalizers?.includes(CLONE_FINALIZER)) {
        const next = deepCopy(src);
        next.metadata.finalizers = [...(next.metadata.finalizers ?? []), CLONE_FINALIZER];
        await this.store.update(next);
      }
      return { volume: { volumeId: srcPV.spec.csi.volumeHandle } };
    }
    throw new ProvisionError(
      `data source ${ds.apiGroup ? `${ds.apiGroup}/` : ''}${ds.kind} ${ds.name} is not supported`,
    );
  }

  /** Drop the cloning-protection finalizer from a source claim no other pending clone uses. */
  private async releaseCloneSource(claim: PersistentVolumeClaim): Promise<void> {
    const ns = claim.metadata.namespace!;
    const srcName = claim.spec.dataSource!.name;
    const stillCloning = this.pvcInformer.lister
      .namespace(ns)
      .list()
      .some(
        (c) =>
          c.metadata.uid !== claim.metadata.uid &&
          c.spec.dataSource?.kind === 'PersistentVolumeClaim' &&
          c.spec.dataSource.name === srcName &&
          !c.spec.volumeName &&
          !this.pvInformer.lister.get(undefined, this.volumeName(c)),
      );
    if (stillCloning) return;
    try {
      const src = (await this.store.get('PersistentVolumeClaim', ns, srcName)) as PersistentVolumeClaim;
      if (!src.metadata.finalizers?.includes(CLONE_FINALIZER)) return;
      const next = deepCopy(src);
      next.metadata.finalizers = next.metadata.finalizers!.filter((f) => f !== CLONE_FINALIZER);
      await this.store.update(next);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }

  /** Requisite and preferred topology (GenerateAccessibilityRequirements). */
  private async topologyRequirement(
    claim: PersistentVolumeClaim,
    cls: StorageClass,
    selectedNode: string | undefined,
  ): Promise<csi.TopologyRequirement | undefined> {
    if (!this.opts.topology) return undefined;
    const segmentOf = (nodeName: string): Record<string, string> | undefined => {
      const cn = this.csiNodeInformer.lister.get(undefined, nodeName);
      const d = cn?.spec.drivers.find((x) => x.name === this.driverName);
      if (!d) return undefined;
      const node = this.nodeInformer.lister.get(undefined, nodeName);
      const labels = node?.metadata.labels ?? {};
      const seg: Record<string, string> = {};
      for (const k of d.topologyKeys ?? []) {
        if (labels[k] === undefined) return undefined;
        seg[k] = labels[k];
      }
      return Object.keys(seg).length ? seg : undefined;
    };
    const all = new Map<string, Record<string, string>>();
    for (const cn of this.csiNodeInformer.lister.list()) {
      const s = segmentOf(cn.metadata.name!);
      if (s) all.set(JSON.stringify(Object.entries(s).sort()), s);
    }
    const key = (s: Record<string, string>) => JSON.stringify(Object.entries(s).sort());
    if (selectedNode) {
      const seg = segmentOf(selectedNode);
      if (!seg) {
        throw new ProvisionError(
          `error generating accessibility requirements: no topology key found for driver ${this.driverName} on CSINode ${selectedNode} (or node labels are missing)`,
        );
      }
      if (this.opts.strictTopology) return { requisite: [{ segments: seg }], preferred: [{ segments: seg }] };
      const sameKeys = [...all.values()].filter(
        (s) => Object.keys(s).sort().join() === Object.keys(seg).sort().join(),
      );
      const rest = sameKeys.filter((s) => key(s) !== key(seg));
      return {
        requisite: [seg, ...rest].map((segments) => ({ segments })),
        preferred: [seg, ...rest].map((segments) => ({ segments })),
      };
    }
    let requisite: Record<string, string>[];
    if (cls.allowedTopologies?.length) {
      requisite = [];
      for (const term of cls.allowedTopologies) {
        let combos: Record<string, string>[] = [{}];
        for (const e of term.matchLabelExpressions ?? [])
          combos = combos.flatMap((c) => e.values.map((v) => ({ ...c, [e.key]: v })));
        requisite.push(...combos.filter((c) => Object.keys(c).length));
      }
    } else requisite = [...all.values()];
    if (!requisite.length) return undefined;
    requisite.sort((a, b) => key(a).localeCompare(key(b)));
    // Spread claims over segments: rotate by a hash of the claim name, as upstream does.
    let h = 0;
    for (const ch of claim.metadata.name ?? '') h = (h * 31 + ch.charCodeAt(0)) >>> 0;
    const i = h % requisite.length;
    const preferred = [...requisite.slice(i), ...requisite.slice(0, i)];
    return {
      requisite: requisite.map((segments) => ({ segments })),
      preferred: preferred.map((segments) => ({ segments })),
    };
  }

  // ------------------------------------------------------------------ volumes

  private async syncVolume(name: string): Promise<undefined> {
    const pv = this.pvInformer.lister.get(undefined, name);
    if (!pv) return undefined;
    if (pv.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED] !== this.driverName) return undefined;
    const hasFinalizer = pv.metadata.finalizers?.includes(PROVISIONER_FINALIZER) ?? false;
    if (pv.spec.persistentVolumeReclaimPolicy !== 'Delete') {
      if (hasFinalizer) await this.dropFinalizer(pv);
      return undefined;
    }
    const phase = pv.status?.phase;
    const shouldDelete = phase === 'Released' || (!!pv.metadata.deletionTimestamp && phase !== 'Bound');
    if (!shouldDelete) return undefined;
    if (phase === 'Released' && pv.spec.claimRef) {
      // Released by the binder: the claim is gone, or bound to another volume. A claim still pointing
      // here means our cache lags behind the binder; look again on the next event.
      const c = this.pvcInformer.lister.get(pv.spec.claimRef.namespace, pv.spec.claimRef.name ?? '');
      if (c && c.metadata.uid === pv.spec.claimRef.uid && (!c.spec.volumeName || c.spec.volumeName === name))
        return undefined;
    }
    let secrets: Record<string, string> = {};
    const sName = pv.metadata.annotations?.[ANN_DELETION_SECRET_NAME];
    const sNs = pv.metadata.annotations?.[ANN_DELETION_SECRET_NAMESPACE];
    try {
      if (sName && sNs) secrets = await readSecretData(this.store, sNs, sName, 'provisioner');
      this.stats.deleteVolumeCalls++;
      await this.call(
        this.conn.controller.DeleteVolume(
          { volumeId: pv.spec.csi?.volumeHandle ?? '', secrets },
          { timeoutMs: this.timeoutMs },
        ),
        'DeleteVolume',
      );
    } catch (e) {
      this.recorder.event(pv, 'Warning', 'VolumeFailedDelete', describeError(e));
      throw e;
    }
    const latest = hasFinalizer ? await this.dropFinalizer(pv) : pv;
    if (latest && !latest.metadata.deletionTimestamp) {
      await this.store.delete('PersistentVolume', undefined, name).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    }
    this.stats.deleted++;
    return undefined;
  }

  private async dropFinalizer(pv: PersistentVolume): Promise<PersistentVolume | undefined> {
    try {
      const cur = (await this.store.get('PersistentVolume', '', pv.metadata.name!)) as PersistentVolume;
      if (!cur.metadata.finalizers?.includes(PROVISIONER_FINALIZER)) return cur;
      // A merge patch pinned to the version read, as upstream's provisioner removes it: its role grants
      // patch on PersistentVolumes, not update.
      const finalizers = cur.metadata.finalizers!.filter((f) => f !== PROVISIONER_FINALIZER);
      const metadata = { resourceVersion: cur.metadata.resourceVersion, finalizers: finalizers.length ? finalizers : null };
      const out = (await this.store.patch('PersistentVolume', '', cur.metadata.name!, { metadata }, 'merge')) as PersistentVolume;
      // A PV whose deletion was waiting only on us is gone now.
      return cur.metadata.deletionTimestamp && !out.metadata.finalizers?.length ? undefined : out;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }
}

/** A Secret's data, decoded. NotFound and friends become a message naming the secret. */
export async function readSecretData(
  store: Store,
  namespace: string,
  name: string,
  what: string,
): Promise<Record<string, string>> {
  registerSidecarKinds();
  let s: Secret;
  try {
    s = (await store.get('Secret', namespace, name)) as Secret;
  } catch (e) {
    throw new ProvisionError(
      `failed to get ${what} secret ${name} in namespace ${namespace}: ${(e as Error).message}`,
    );
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  for (const [k, v] of Object.entries(s.stringData ?? {})) out[k] = v;
  return out;
}
