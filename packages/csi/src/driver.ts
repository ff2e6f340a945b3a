import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { AlphaCapability } from './capabilities.js';
import type { Backend, BackendVolume } from './backend.js';
import {
  aborted,
  alreadyExists,
  exhausted,
  invalid,
  notFound,
  outOfRange,
  precondition,
  unimplemented,
} from './errors.js';
import { OperationLocks } from './locks.js';
import { formatSize } from './quantity.js';
import { MemoryStateStore, type StateStore } from './state-store.js';
import {
  AccessMode,
  type Capability,
  type ContentSource,
  type DriverState,
  type GroupSnapshotRecord,
  type NodePublication,
  type SnapshotRecord,
  type Topology,
  type VolumeCondition,
  type VolumeRecord,
} from './types.js';
import {
  SUPPORTED_FS_TYPES,
  checkDriverName,
  checkIdentifier,
  checkMountFlags,
  checkNodePath,
  nodePathIn,
  requireField,
  requireId,
} from './validate.js';

export const DEFAULT_DRIVER_NAME = 'kemu.csi.k8s.io';
export const DEFAULT_TOPOLOGY_KEY = 'topology.kemu.csi.k8s.io/node';
export const DRIVER_VERSION = '0.1.0';
const GiB = 2 ** 30;

/** Parameter keys accepted by CreateVolume; values are checked by PARAMETER_RULES. */
const PARAMETER_RULES: Record<string, (v: string) => string | null> = {
  tier: (v) => (['fast', 'standard', 'cold'].includes(v) ? null : 'must be one of fast, standard, cold'),
  iops: (v) => (/^[1-9]\d{0,8}$/.test(v) ? null : 'must be a positive integer'),
  throughput: (v) => (/^[1-9]\d{0,8}$/.test(v) ? null : 'must be a positive integer (MiB/s)'),
};
/** Keys that ControllerModifyVolume may change after creation. */
export const MUTABLE_PARAMETERS = new Set(['tier', 'iops', 'throughput']);
/** Prefixes the CO adds on its own (external-provisioner's extra metadata); accepted and kept. */
const PASSTHROUGH_PREFIXES = ['csi.storage.k8s.io/', `${DEFAULT_DRIVER_NAME}/`];

export interface DriverOptions {
  /** the node this driver runs on (NodeGetInfo, default target of node calls) */
  nodeId: string;
  /**
   * further nodes served by the same driver state, for one in-process driver behind a whole simulated
   * cluster; each node has its own topology segment and capacity, and a volume lives on one node
   */
  extraNodeIds?: string[];
  backend: Backend;
  store?: StateStore;
  name?: string;
  version?: string;
  /** bytes each node may hand out (default 100Gi) */
  capacityBytes?: number;
  /** largest single volume (default: the whole capacity) */
  maxVolumeSizeBytes?: number;
  /** 0 means no limit */
  maxVolumesPerNode?: number;
  /** advertise and require ControllerPublishVolume */
  enableAttach?: boolean;
  /** alpha capabilities of CSI v1.12 to advertise and serve; none by default (see capabilities.ts) */
  alphaCapabilities?: readonly AlphaCapability[];
  topologyKey?: string;
  /** staging and target paths must lie below one of these (default /var/lib/kubelet) */
  pathRoots?: string[];
  /** size of a volume created without a capacity range (default 1Gi) */
  defaultVolumeBytes?: number;
}

export interface CapacityRange {
  requiredBytes?: number;
  limitBytes?: number;
}

export interface CreateVolumeArgs {
  name?: string;
  capacityRange?: CapacityRange | null;
  capabilities?: Capability[];
  parameters?: Record<string, string>;
  mutableParameters?: Record<string, string>;
  contentSource?: ContentSource | null;
  requisite?: Topology[];
  preferred?: Topology[];
}

export interface PageArgs {
  maxEntries?: number;
  startingToken?: string;
}

function page<T>(items: T[], args: PageArgs): { entries: T[]; nextToken: string } {
  const max = args.maxEntries ?? 0;
  if (!Number.isInteger(max) || max < 0) throw invalid(`max_entries must not be negative (got ${max})`);
  let start = 0;
  if (args.startingToken) {
    if (!/^\d{1,9}$/.test(args.startingToken) || Number(args.startingToken) > items.length) {
      throw aborted(`starting_token "${args.startingToken}" is not valid; list again without a token`);
    }
    start = Number(args.startingToken);
  }
  const end = max > 0 ? Math.min(items.length, start + max) : items.length;
  return { entries: items.slice(start, end), nextToken: end < items.length ? String(end) : '' };
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

function sameCapability(a: Capability, b: Capability): boolean {
  return (
    a.accessType === b.accessType &&
    a.accessMode === b.accessMode &&
    (a.fsType ?? '') === (b.fsType ?? '') &&
    (a.volumeMountGroup ?? '') === (b.volumeMountGroup ?? '') &&
    [...(a.mountFlags ?? [])].sort().join(',') === [...(b.mountFlags ?? [])].sort().join(',')
  );
}

const isSingleNode = (m: AccessMode) =>
  m === AccessMode.SINGLE_NODE_WRITER ||
  m === AccessMode.SINGLE_NODE_READER_ONLY ||
  m === AccessMode.SINGLE_NODE_SINGLE_WRITER ||
  m === AccessMode.SINGLE_NODE_MULTI_WRITER;
const isReaderOnly = (m: AccessMode) =>
  m === AccessMode.SINGLE_NODE_READER_ONLY || m === AccessMode.MULTI_NODE_READER_ONLY;

const bv = (v: VolumeRecord): BackendVolume => ({
  id: v.id,
  accessType: v.accessType,
  capacityBytes: v.capacityBytes,
});

/**
 * The driver core: the CSI volume state machine (CREATED → NODE_READY → VOL_READY → PUBLISHED and back),
 * idempotency and the spec's error tables, independent of gRPC. Each service file maps its RPCs here.
 */
export class Driver {
  readonly name: string;
  readonly version: string;
  readonly nodeId: string;
  /** every node this driver serves, its own first */
  readonly nodeIds: readonly string[];
  readonly backend: Backend;
  readonly capacityBytes: number;
  readonly maxVolumeSizeBytes: number;
  readonly maxVolumesPerNode: number;
  readonly enableAttach: boolean;
  readonly alphaCapabilities: ReadonlySet<AlphaCapability>;
  readonly topologyKey: string;
  readonly pathRoots: string[];
  readonly defaultVolumeBytes: number;
  private readonly store: StateStore;
  private state!: DriverState;
  private readonly locks = new OperationLocks();
  /** name -> id, so CreateVolume's idempotency check does not scan every volume */
  private readonly volumeByName = new Map<string, string>();
  private ready = false;

  constructor(opts: DriverOptions) {
    checkIdentifier('node id', opts.nodeId);
    this.nodeId = opts.nodeId;
    for (const n of opts.extraNodeIds ?? []) checkIdentifier('node id', n);
    this.nodeIds = [...new Set([opts.nodeId, ...(opts.extraNodeIds ?? [])])];
    this.backend = opts.backend;
    this.store = opts.store ?? new MemoryStateStore();
    this.name = opts.name ?? DEFAULT_DRIVER_NAME;
    checkDriverName(this.name);
    this.version = opts.version ?? DRIVER_VERSION;
    this.capacityBytes = opts.capacityBytes ?? 100 * GiB;
    this.maxVolumeSizeBytes = opts.maxVolumeSizeBytes ?? this.capacityBytes;
    this.maxVolumesPerNode = opts.maxVolumesPerNode ?? 0;
    this.enableAttach = opts.enableAttach ?? false;
    this.alphaCapabilities = new Set(opts.alphaCapabilities ?? []);
    this.topologyKey = opts.topologyKey ?? DEFAULT_TOPOLOGY_KEY;
    this.pathRoots = (opts.pathRoots ?? ['/var/lib/kubelet']).map((r) => path.resolve(r));
    this.defaultVolumeBytes = Math.min(opts.defaultVolumeBytes ?? GiB, this.maxVolumeSizeBytes);
  }

  /** Load persisted state and drop backing data that no record refers to (a crash mid-create). */
  async start(): Promise<void> {
    this.state = await this.store.load();
    for (const v of Object.values(this.state.volumes)) this.volumeByName.set(v.name, v.id);
    await this.backend.reconcile?.(
      new Set(Object.keys(this.state.volumes)),
      new Set(Object.keys(this.state.snapshots)),
    );
    const sim = this.backend as Partial<{ adopt(v: unknown[]): void }>;
    sim.adopt?.(
      Object.values(this.state.volumes).map((v) => ({
        ...bv(v),
        mounts: [...Object.keys(v.targets), ...(v.staged ? [v.staged.path] : [])],
      })),
    );
    this.ready = true;
  }

  alphaEnabled(name: AlphaCapability): boolean {
    return this.alphaCapabilities.has(name);
  }

  get isReady(): boolean {
    return this.ready;
  }

  /** A copy of the current state (for tests and diagnostics). */
  snapshotState(): DriverState {
    return structuredClone(this.state);
  }

  private persist(): Promise<void> {
    return this.store.save(this.state);
  }

  get segment(): Topology {
    return this.segmentOf(this.nodeId);
  }

  segmentOf(node: string): Topology {
    return { [this.topologyKey]: node };
  }

  /** The served node whose segment satisfies a topology (every key of it matches), if any. */
  private nodeFor(t: Topology): string | undefined {
    return this.nodeIds.find((n) => Object.entries(t).every(([k, v]) => this.segmentOf(n)[k] === v));
  }

  private nodeOf(v: VolumeRecord): string {
    return v.node ?? this.nodeId;
  }

  /** Node-side calls must come from a served node that can reach the volume. */
  private checkNode(v: VolumeRecord, node: string): void {
    if (!this.nodeIds.includes(node)) throw notFound(`node ${node} is not served by this driver`);
    if (this.nodeOf(v) !== node) {
      throw precondition(
        `volume ${v.id} lives on node ${this.nodeOf(v)} and is not accessible from node ${node}`,
      );
    }
  }

  private volume(id: string): VolumeRecord {
    const v = this.state.volumes[id];
    if (!v) throw notFound(`volume ${id} does not exist`);
    return v;
  }

  private usedBytes(node: string): number {
    let n = 0;
    for (const v of Object.values(this.state.volumes)) if (this.nodeOf(v) === node) n += v.capacityBytes;
    return n;
  }

  private freeBytes(node: string): number {
    return Math.max(0, this.capacityBytes - this.usedBytes(node));
  }

  private checkParameters(params: Record<string, string>, what: string, onlyMutable: boolean): void {
    for (const [k, v] of Object.entries(params)) {
      if (!onlyMutable && PASSTHROUGH_PREFIXES.some((p) => k.startsWith(p))) continue;
      const rule = PARAMETER_RULES[k];
      if (!rule || (onlyMutable && !MUTABLE_PARAMETERS.has(k))) {
        const allowed = onlyMutable ? [...MUTABLE_PARAMETERS] : Object.keys(PARAMETER_RULES);
        throw invalid(`unknown ${what} "${k}"; supported: ${allowed.join(', ')}`);
      }
      const err = rule(v);
      if (err) throw invalid(`${what} ${k}="${v}" ${err}`);
    }
  }

  /** Structural checks of one capability (access type and mode present, flags supported). */
  checkCapability(cap: Capability | undefined | null, what = 'volume_capability'): Capability {
    if (!cap) throw invalid(`${what} is required`);
    if (cap.accessType !== 'mount' && cap.accessType !== 'block') {
      throw invalid(`${what}.access_type must be mount or block`);
    }
    if (!cap.accessMode || !AccessMode[cap.accessMode]) throw invalid(`${what}.access_mode.mode must be set`);
    if (cap.accessType === 'mount') {
      if (!SUPPORTED_FS_TYPES.has(cap.fsType ?? '')) {
        throw invalid(
          `fs_type "${cap.fsType}" is not supported; supported: ${[...SUPPORTED_FS_TYPES].filter(Boolean).join(', ')}`,
        );
      }
      checkMountFlags(cap.mountFlags ?? []);
      if (cap.volumeMountGroup && !/^\d{1,10}$/.test(cap.volumeMountGroup)) {
        throw invalid(`volume_mount_group "${cap.volumeMountGroup}" must be a numeric group id`);
      }
    }
    return cap;
  }

  private resolveSize(range: CapacityRange | null | undefined, minimum: number): number {
    const req = range?.requiredBytes ?? 0;
    const lim = range?.limitBytes ?? 0;
    for (const [k, v] of [
      ['required_bytes', req],
      ['limit_bytes', lim],
    ] as const) {
      if (!Number.isFinite(v) || v < 0) throw invalid(`capacity_range.${k} must not be negative (got ${v})`);
      if (!Number.isSafeInteger(v)) throw outOfRange(`capacity_range.${k} ${v} is too large`);
    }
    if (lim > 0 && req > lim)
      throw invalid(`capacity_range.required_bytes ${req} exceeds limit_bytes ${lim}`);
    if (lim > 0 && lim < minimum) {
      throw outOfRange(`capacity_range.limit_bytes ${lim} is smaller than the source's ${minimum} bytes`);
    }
    // without a size, a restore or clone takes its source's size and a new volume the default
    let size =
      req > 0 ? req : lim > 0 ? Math.min(lim, this.defaultVolumeBytes) : minimum || this.defaultVolumeBytes;
    size = Math.max(size, minimum);
    if (size > this.maxVolumeSizeBytes) {
      throw outOfRange(
        `requested ${size} bytes exceeds the maximum volume size of ${formatSize(this.maxVolumeSizeBytes)}`,
      );
    }
    return size;
  }

  // ---------------------------------------------------------------- controller

  async createVolume(args: CreateVolumeArgs): Promise<VolumeRecord> {
    const name = requireField('name', args.name);
    checkIdentifier('name', name);
    const caps = args.capabilities ?? [];
    if (caps.length === 0) throw invalid('volume_capabilities is required');
    for (const [i, c] of caps.entries()) this.checkCapability(c, `volume_capabilities[${i}]`);
    const accessType = caps[0]!.accessType;
    if (caps.some((c) => c.accessType !== accessType)) {
      throw invalid('volume_capabilities mix block and mount access types; a volume is one or the other');
    }
    const parameters = args.parameters ?? {};
    const mutableParameters = args.mutableParameters ?? {};
    this.checkParameters(parameters, 'parameter', false);
    this.checkParameters(mutableParameters, 'mutable parameter', true);
    const source = args.contentSource ?? undefined;
    if (source) requireId(`volume_content_source.${source.type}_id`, source.id);
    // preferred first, then requisite; without requirements the driver's own node
    const candidates = [...(args.preferred ?? []), ...(args.requisite ?? [])]
      .map((t) => this.nodeFor(t))
      .filter(
        (n): n is string =>
          !!n && (!args.requisite?.length || args.requisite.some((t) => this.nodeFor(t) === n)),
      );
    if (args.requisite?.length && candidates.length === 0) {
      throw exhausted(
        `none of the requisite topologies is reachable; this driver serves ${this.nodeIds.map((n) => JSON.stringify(this.segmentOf(n))).join(', ')}`,
      );
    }
    if (candidates.length === 0) candidates.push(this.nodeId);

    return this.locks.with([`volume name ${name}`], 'CreateVolume', async () => {
      // a repeat answers from what exists, even if its source has gone since
      const existingId = this.volumeByName.get(name);
      const existing = existingId ? this.state.volumes[existingId] : undefined;
      if (existing) {
        const lim = args.capacityRange?.limitBytes ?? 0;
        const req = args.capacityRange?.requiredBytes ?? 0;
        const fits = existing.capacityBytes >= req && (lim === 0 || existing.capacityBytes <= lim);
        const sameSource =
          (existing.contentSource?.type ?? '') === (source?.type ?? '') &&
          (existing.contentSource?.id ?? '') === (source?.id ?? '');
        if (
          !fits ||
          existing.accessType !== accessType ||
          !sameSource ||
          !sameMap(existing.parameters, parameters)
        ) {
          throw alreadyExists(
            `volume "${name}" already exists (${existing.id}, ${existing.capacityBytes} bytes, ${existing.accessType}) and is incompatible with this request`,
          );
        }
        return existing;
      }
      let minimum = 0;
      let src: { snapshotId: string } | { volume: BackendVolume } | undefined;
      if (source?.type === 'snapshot') {
        const s = this.state.snapshots[source.id];
        if (!s) throw notFound(`source snapshot ${source.id} does not exist`);
        if (!s.readyToUse) throw precondition(`source snapshot ${source.id} is not ready to use yet`);
        if (s.accessType !== accessType) {
          throw invalid(
            `source snapshot ${source.id} holds a ${s.accessType} volume; cannot restore it as ${accessType}`,
          );
        }
        minimum = s.sizeBytes;
        src = { snapshotId: s.id };
      } else if (source?.type === 'volume') {
        const v = this.state.volumes[source.id];
        if (!v) throw notFound(`source volume ${source.id} does not exist`);
        if (v.accessType !== accessType) {
          throw invalid(
            `source volume ${source.id} is a ${v.accessType} volume; cannot clone it as ${accessType}`,
          );
        }
        minimum = v.capacityBytes;
        src = { volume: bv(v) };
      }
      const size = this.resolveSize(args.capacityRange, minimum);

      const node = candidates.find((n) => this.freeBytes(n) >= size);
      if (!node) {
        const free = this.freeBytes(candidates[0]!);
        throw exhausted(
          `not enough capacity on node ${candidates[0]}: ${size} bytes requested, ${free} of ${this.capacityBytes} bytes free`,
        );
      }
      const vol: VolumeRecord = {
        id: randomUUID(),
        name,
        capacityBytes: size,
        accessType,
        parameters,
        mutableParameters,
        contentSource: source,
        accessibleTopology: [this.segmentOf(node)],
        node,
        createdAt: Date.now(),
        published: {},
        targets: {},
      };
      await this.backend.createVolume(bv(vol), src);
      this.state.volumes[vol.id] = vol;
      this.volumeByName.set(name, vol.id);
      try {
        await this.persist();
      } catch (e) {
        delete this.state.volumes[vol.id];
        this.volumeByName.delete(name);
        await this.backend.deleteVolume(bv(vol)).catch(() => {});
        throw e;
      }
      return vol;
    });
  }

  async deleteVolume(volumeId?: string): Promise<void> {
    const id = requireId('volume_id', volumeId);
    await this.locks.with([`volume ${id}`], 'DeleteVolume', async () => {
      const v = this.state.volumes[id];
      if (!v) return; // already gone: success, as the spec asks
      const nodes = Object.keys(v.published);
      if (nodes.length > 0)
        throw precondition(`volume ${id} is still published to node(s) ${nodes.join(', ')}`);
      if (v.staged || Object.keys(v.targets).length > 0) {
        throw precondition(`volume ${id} is still staged or published on node ${this.nodeOf(v)}`);
      }
      await this.backend.deleteVolume(bv(v));
      delete this.state.volumes[id];
      this.volumeByName.delete(v.name);
      await this.persist();
    });
  }

  async controllerPublish(args: {
    volumeId?: string;
    nodeId?: string;
    capability?: Capability | null;
    readonly?: boolean;
  }): Promise<Record<string, string>> {
    const id = requireId('volume_id', args.volumeId);
    const nodeId = requireId('node_id', args.nodeId);
    const cap = this.checkCapability(args.capability);
    if (!this.enableAttach)
      throw unimplemented('ControllerPublish/UnpublishVolume need the driver started with --enable-attach');
    return this.locks.with([`volume ${id}`], 'ControllerPublishVolume', async () => {
      const v = this.volume(id);
      if (!this.nodeIds.includes(nodeId)) {
        throw notFound(`node ${nodeId} does not exist (this driver serves ${this.nodeIds.join(', ')})`);
      }
      if (this.nodeOf(v) !== nodeId) {
        throw precondition(
          `volume ${id} lives on node ${this.nodeOf(v)} and cannot be attached to node ${nodeId}`,
        );
      }
      if (cap.accessType !== v.accessType) {
        throw invalid(`volume ${id} is a ${v.accessType} volume; the capability asks for ${cap.accessType}`);
      }
      const readonly = args.readonly ?? false;
      const ctx = { devicePath: this.backend.devicePath(bv(v)), readonly: String(readonly) };
      const cur = v.published[nodeId];
      if (cur) {
        if (cur.readonly !== readonly || !sameCapability(cur.capability, cap)) {
          throw alreadyExists(
            `volume ${id} is already published to node ${nodeId} with a different capability or readonly flag`,
          );
        }
        return ctx;
      }
      const others = Object.keys(v.published);
      if (
        others.length > 0 &&
        (isSingleNode(cap.accessMode) ||
          Object.values(v.published).some((p) => isSingleNode(p.capability.accessMode)))
      ) {
        throw precondition(
          `volume ${id} is published to node ${others[0]} and its access mode allows a single node`,
        );
      }
      if (this.maxVolumesPerNode > 0) {
        const n = Object.values(this.state.volumes).filter((x) => x.published[nodeId]).length;
        if (n >= this.maxVolumesPerNode) {
          throw exhausted(
            `node ${nodeId} already has the maximum of ${this.maxVolumesPerNode} volumes attached`,
          );
        }
      }
      v.published[nodeId] = { readonly, capability: cap };
      await this.persist();
      return ctx;
    });
  }

  async controllerUnpublish(args: { volumeId?: string; nodeId?: string }): Promise<void> {
    const id = requireId('volume_id', args.volumeId);
    if (args.nodeId) checkIdentifier('node_id', args.nodeId);
    if (!this.enableAttach)
      throw unimplemented('ControllerPublish/UnpublishVolume need the driver started with --enable-attach');
    await this.locks.with([`volume ${id}`], 'ControllerUnpublishVolume', async () => {
      const v = this.state.volumes[id];
      if (!v) return; // nothing to detach
      const nodes = args.nodeId ? [args.nodeId] : Object.keys(v.published);
      const home = this.nodeOf(v);
      if (nodes.includes(home) && v.published[home] && (v.staged || Object.keys(v.targets).length)) {
        throw precondition(
          `volume ${id} is still staged or published on node ${home}; unpublish and unstage it first`,
        );
      }
      let changed = false;
      for (const n of nodes) {
        if (v.published[n]) {
          delete v.published[n];
          changed = true;
        }
      }
      if (changed) await this.persist();
    });
  }

  async validateCapabilities(args: {
    volumeId?: string;
    capabilities?: Capability[];
    parameters?: Record<string, string>;
    mutableParameters?: Record<string, string>;
  }): Promise<{ confirmed: boolean; message: string; volume?: VolumeRecord }> {
    const id = requireId('volume_id', args.volumeId);
    const caps = args.capabilities ?? [];
    if (caps.length === 0) throw invalid('volume_capabilities is required');
    const v = this.volume(id);
    for (const [i, c] of caps.entries()) {
      try {
        this.checkCapability(c, `volume_capabilities[${i}]`);
      } catch (e) {
        return { confirmed: false, message: (e as Error).message, volume: v };
      }
      if (c.accessType !== v.accessType) {
        return {
          confirmed: false,
          message: `volume ${id} is a ${v.accessType} volume, not ${c.accessType}`,
          volume: v,
        };
      }
    }
    if (args.parameters && Object.keys(args.parameters).length && !sameMap(args.parameters, v.parameters)) {
      return {
        confirmed: false,
        message: `parameters differ from those volume ${id} was created with`,
        volume: v,
      };
    }
    if (
      args.mutableParameters &&
      Object.keys(args.mutableParameters).length &&
      !sameMap(args.mutableParameters, v.mutableParameters)
    ) {
      return { confirmed: false, message: `mutable parameters differ from those of volume ${id}`, volume: v };
    }
    return { confirmed: true, message: '', volume: v };
  }

  listVolumes(args: PageArgs): { entries: VolumeRecord[]; nextToken: string } {
    return page(Object.values(this.state.volumes), args);
  }

  getCapacity(args: { capabilities?: Capability[]; topology?: Topology | null }): {
    available: number;
    maximumVolumeSize: number;
    minimumVolumeSize: number;
  } {
    const none = { available: 0, maximumVolumeSize: 0, minimumVolumeSize: 0 };
    try {
      for (const [i, c] of (args.capabilities ?? []).entries())
        this.checkCapability(c, `volume_capabilities[${i}]`);
    } catch {
      return none; // no capacity for capabilities this driver cannot provide
    }
    let nodes = this.nodeIds;
    if (args.topology && Object.keys(args.topology).length) {
      const n = this.nodeFor(args.topology);
      if (!n) return none;
      nodes = [n];
    }
    const free = nodes.map((n) => this.freeBytes(n));
    return {
      available: free.reduce((a, b) => a + b, 0),
      maximumVolumeSize: Math.min(Math.max(...free), this.maxVolumeSizeBytes),
      minimumVolumeSize: 1,
    };
  }

  async controllerExpand(args: {
    volumeId?: string;
    capacityRange?: CapacityRange | null;
    capability?: Capability | null;
  }): Promise<{ capacityBytes: number; nodeExpansionRequired: boolean }> {
    const id = requireId('volume_id', args.volumeId);
    const r = args.capacityRange;
    if (!r || (!r.requiredBytes && !r.limitBytes)) throw invalid('capacity_range is required');
    if (args.capability) this.checkCapability(args.capability);
    return this.locks.with([`volume ${id}`], 'ControllerExpandVolume', async () => {
      const v = this.volume(id);
      if (args.capability && args.capability.accessType !== v.accessType) {
        throw invalid(
          `volume ${id} is a ${v.accessType} volume; the capability asks for ${args.capability.accessType}`,
        );
      }
      const want = this.resolveSize(r, 0);
      if (want <= v.capacityBytes) return { capacityBytes: v.capacityBytes, nodeExpansionRequired: false };
      const free = this.freeBytes(this.nodeOf(v));
      if (want - v.capacityBytes > free) {
        throw outOfRange(
          `cannot grow volume ${id} to ${want} bytes: only ${free} bytes of capacity are free`,
        );
      }
      await this.backend.expandVolume(bv(v), want);
      v.capacityBytes = want;
      await this.persist();
      return { capacityBytes: want, nodeExpansionRequired: v.accessType === 'mount' };
    });
  }

  async controllerGetVolume(
    volumeId?: string,
  ): Promise<{ volume: VolumeRecord; condition: VolumeCondition }> {
    const id = requireId('volume_id', volumeId);
    const v = this.volume(id);
    return { volume: v, condition: await this.backend.condition(bv(v)) };
  }

  async controllerModify(args: {
    volumeId?: string;
    mutableParameters?: Record<string, string>;
  }): Promise<void> {
    const id = requireId('volume_id', args.volumeId);
    const params = args.mutableParameters ?? {};
    if (Object.keys(params).length === 0) throw invalid('mutable_parameters is required');
    this.checkParameters(params, 'mutable parameter', true);
    await this.locks.with([`volume ${id}`], 'ControllerModifyVolume', async () => {
      const v = this.volume(id);
      v.mutableParameters = { ...v.mutableParameters, ...params };
      await this.persist();
    });
  }

  // ---------------------------------------------------------------- snapshots

  async createSnapshot(args: {
    name?: string;
    sourceVolumeId?: string;
    parameters?: Record<string, string>;
  }): Promise<SnapshotRecord> {
    const name = requireField('name', args.name);
    checkIdentifier('name', name);
    const src = requireId('source_volume_id', args.sourceVolumeId);
    const parameters = args.parameters ?? {};
    if (Object.keys(parameters).some((k) => !PASSTHROUGH_PREFIXES.some((p) => k.startsWith(p)))) {
      throw invalid(
        `unknown snapshot parameter(s) ${Object.keys(parameters).join(', ')}; this driver takes none`,
      );
    }
    return this.locks.with([`snapshot name ${name}`, `volume ${src}`], 'CreateSnapshot', async () => {
      const existing = Object.values(this.state.snapshots).find((s) => s.name === name);
      if (existing) {
        if (existing.sourceVolumeId !== src) {
          throw alreadyExists(
            `snapshot "${name}" already exists for source volume ${existing.sourceVolumeId}`,
          );
        }
        return existing;
      }
      const v = this.volume(src);
      const snap = await this.snapshotOne(name, v, parameters);
      await this.persist();
      return snap;
    });
  }

  private async snapshotOne(
    name: string,
    v: VolumeRecord,
    parameters: Record<string, string>,
    groupId?: string,
  ) {
    const snap: SnapshotRecord = {
      id: randomUUID(),
      name,
      sourceVolumeId: v.id,
      sizeBytes: v.capacityBytes,
      accessType: v.accessType,
      parameters,
      createdAt: Date.now(),
      readyToUse: true,
      ...(groupId ? { groupSnapshotId: groupId } : {}),
    };
    await this.backend.createSnapshot(snap.id, bv(v));
    this.state.snapshots[snap.id] = snap;
    return snap;
  }

  async deleteSnapshot(snapshotId?: string): Promise<void> {
    const id = requireId('snapshot_id', snapshotId);
    await this.locks.with([`snapshot ${id}`], 'DeleteSnapshot', async () => {
      const s = this.state.snapshots[id];
      if (!s) return;
      if (s.groupSnapshotId && this.state.groupSnapshots[s.groupSnapshotId]) {
        throw precondition(
          `snapshot ${id} belongs to group snapshot ${s.groupSnapshotId}; delete the group snapshot instead`,
        );
      }
      await this.backend.deleteSnapshot(id);
      delete this.state.snapshots[id];
      await this.persist();
    });
  }

  listSnapshots(args: PageArgs & { snapshotId?: string; sourceVolumeId?: string }): {
    entries: SnapshotRecord[];
    nextToken: string;
  } {
    let all = Object.values(this.state.snapshots);
    if (args.snapshotId) all = all.filter((s) => s.id === args.snapshotId);
    if (args.sourceVolumeId) all = all.filter((s) => s.sourceVolumeId === args.sourceVolumeId);
    return page(all, args);
  }

  getSnapshot(snapshotId?: string): SnapshotRecord {
    const id = requireId('snapshot_id', snapshotId);
    const s = this.state.snapshots[id];
    if (!s) throw notFound(`snapshot ${id} does not exist`);
    return s;
  }

  // ---------------------------------------------------------------- group snapshots

  async createGroupSnapshot(args: {
    name?: string;
    sourceVolumeIds?: string[];
    parameters?: Record<string, string>;
  }): Promise<{ group: GroupSnapshotRecord; snapshots: SnapshotRecord[] }> {
    const name = requireField('name', args.name);
    checkIdentifier('name', name);
    const ids = args.sourceVolumeIds ?? [];
    if (ids.length === 0) throw invalid('source_volume_ids is required');
    for (const id of ids) checkIdentifier('source_volume_ids entry', id);
    if (new Set(ids).size !== ids.length) throw invalid('source_volume_ids contains duplicates');
    const parameters = args.parameters ?? {};
    if (Object.keys(parameters).some((k) => !PASSTHROUGH_PREFIXES.some((p) => k.startsWith(p)))) {
      throw invalid(
        `unknown group snapshot parameter(s) ${Object.keys(parameters).join(', ')}; this driver takes none`,
      );
    }
    const keys = [`group snapshot name ${name}`, ...ids.map((id) => `volume ${id}`)];
    return this.locks.with(keys, 'CreateVolumeGroupSnapshot', async () => {
      const existing = Object.values(this.state.groupSnapshots).find((g) => g.name === name);
      if (existing) {
        if ([...existing.sourceVolumeIds].sort().join() !== [...ids].sort().join()) {
          throw alreadyExists(`group snapshot "${name}" already exists for other source volumes`);
        }
        return { group: existing, snapshots: existing.snapshotIds.map((s) => this.state.snapshots[s]!) };
      }
      const vols = ids.map((id) => this.volume(id));
      const group: GroupSnapshotRecord = {
        id: randomUUID(),
        name,
        sourceVolumeIds: ids,
        snapshotIds: [],
        parameters,
        createdAt: Date.now(),
        readyToUse: true,
      };
      const made: SnapshotRecord[] = [];
      try {
        for (const v of vols) made.push(await this.snapshotOne(`${name}-${v.id}`, v, parameters, group.id));
      } catch (e) {
        for (const s of made) {
          await this.backend.deleteSnapshot(s.id).catch(() => {});
          delete this.state.snapshots[s.id];
        }
        throw e;
      }
      group.snapshotIds = made.map((s) => s.id);
      this.state.groupSnapshots[group.id] = group;
      await this.persist();
      return { group, snapshots: made };
    });
  }

  private checkGroupMembers(g: GroupSnapshotRecord, snapshotIds: string[]): void {
    if (snapshotIds.length === 0) throw invalid('snapshot_ids is required');
    if ([...snapshotIds].sort().join() !== [...g.snapshotIds].sort().join()) {
      throw invalid(`snapshot_ids do not match the members of group snapshot ${g.id}`);
    }
  }

  async deleteGroupSnapshot(args: { groupSnapshotId?: string; snapshotIds?: string[] }): Promise<void> {
    const id = requireId('group_snapshot_id', args.groupSnapshotId);
    const snapIds = args.snapshotIds ?? [];
    for (const s of snapIds) checkIdentifier('snapshot_ids entry', s);
    await this.locks.with([`group snapshot ${id}`], 'DeleteVolumeGroupSnapshot', async () => {
      const g = this.state.groupSnapshots[id];
      if (!g) return;
      this.checkGroupMembers(g, snapIds);
      for (const s of g.snapshotIds) {
        await this.backend.deleteSnapshot(s);
        delete this.state.snapshots[s];
      }
      delete this.state.groupSnapshots[id];
      await this.persist();
    });
  }

  getGroupSnapshot(args: { groupSnapshotId?: string; snapshotIds?: string[] }): {
    group: GroupSnapshotRecord;
    snapshots: SnapshotRecord[];
  } {
    const id = requireId('group_snapshot_id', args.groupSnapshotId);
    const g = this.state.groupSnapshots[id];
    if (!g) throw notFound(`group snapshot ${id} does not exist`);
    this.checkGroupMembers(g, args.snapshotIds ?? []);
    return { group: g, snapshots: g.snapshotIds.map((s) => this.state.snapshots[s]!) };
  }

  // ---------------------------------------------------------------- node

  nodeInfo(nodeId = this.nodeId): { nodeId: string; maxVolumesPerNode: number; topology: Topology } {
    return { nodeId, maxVolumesPerNode: this.maxVolumesPerNode, topology: this.segmentOf(nodeId) };
  }

  async nodeStage(args: {
    /** the calling node (default: this driver's node) */
    nodeId?: string;
    volumeId?: string;
    stagingPath?: string;
    capability?: Capability | null;
    publishContext?: Record<string, string>;
  }): Promise<void> {
    const id = requireId('volume_id', args.volumeId);
    const { path: staging, root: stagingRoot } = nodePathIn(
      'staging_target_path',
      requireField('staging_target_path', args.stagingPath),
      this.pathRoots,
    );
    const cap = this.checkCapability(args.capability);
    await this.locks.with([`volume ${id}`], 'NodeStageVolume', async () => {
      const v = this.volume(id);
      const node = args.nodeId ?? this.nodeId;
      this.checkNode(v, node);
      if (cap.accessType !== v.accessType) {
        throw invalid(`volume ${id} is a ${v.accessType} volume; the capability asks for ${cap.accessType}`);
      }
      if (v.staged) {
        if (v.staged.path !== staging) {
          throw precondition(`volume ${id} is already staged at ${v.staged.path}; unstage it first`);
        }
        if (!sameCapability(v.staged.capability, cap)) {
          throw alreadyExists(`volume ${id} is already staged at ${staging} with a different capability`);
        }
        // the backend call is idempotent; repeating it restores a mount lost to a reboot or a manual umount
        await this.backend.stage(bv(v), staging, cap, stagingRoot);
        return;
      }
      if (this.enableAttach && !v.published[node]) {
        throw precondition(
          `volume ${id} is not published to node ${node}; call ControllerPublishVolume first`,
        );
      }
      if (!this.enableAttach && this.maxVolumesPerNode > 0) {
        const n = Object.values(this.state.volumes).filter((x) => x.staged && this.nodeOf(x) === node).length;
        if (n >= this.maxVolumesPerNode) {
          throw exhausted(`node ${node} already has the maximum of ${this.maxVolumesPerNode} volumes staged`);
        }
      }
      await this.backend.stage(bv(v), staging, cap, stagingRoot);
      v.staged = { path: staging, capability: cap };
      try {
        await this.persist();
      } catch (e) {
        delete v.staged;
        await this.backend.unstage(bv(v), staging).catch(() => {});
        throw e;
      }
    });
  }

  async nodeUnstage(args: { nodeId?: string; volumeId?: string; stagingPath?: string }): Promise<void> {
    const id = requireId('volume_id', args.volumeId);
    const staging = checkNodePath(
      'staging_target_path',
      requireField('staging_target_path', args.stagingPath),
      this.pathRoots,
      { followLast: false },
    );
    await this.locks.with([`volume ${id}`], 'NodeUnstageVolume', async () => {
      const v = this.volume(id);
      const node = args.nodeId ?? this.nodeId;
      this.checkNode(v, node);
      if (!v.staged || v.staged.path !== staging) return;
      const targets = Object.keys(v.targets);
      if (targets.length > 0) {
        throw precondition(`volume ${id} is still published at ${targets.join(', ')}; unpublish it first`);
      }
      await this.backend.unstage(bv(v), staging);
      delete v.staged;
      await this.persist();
    });
  }

  async nodePublish(args: {
    /** the calling node (default: this driver's node) */
    nodeId?: string;
    volumeId?: string;
    targetPath?: string;
    stagingPath?: string;
    capability?: Capability | null;
    readonly?: boolean;
  }): Promise<void> {
    const id = requireId('volume_id', args.volumeId);
    // The target's own last component is checked below only for a new publication: a repeated call finds
    // what this driver made there (the mount-less hostpath backend's link leads outside the root).
    const { path: target, root: targetRoot } = nodePathIn(
      'target_path',
      requireField('target_path', args.targetPath),
      this.pathRoots,
      { followLast: false },
    );
    const cap = this.checkCapability(args.capability);
    const staging = checkNodePath(
      'staging_target_path',
      requireField('staging_target_path', args.stagingPath),
      this.pathRoots,
    );
    await this.locks.with([`volume ${id}`], 'NodePublishVolume', async () => {
      const v = this.volume(id);
      const node = args.nodeId ?? this.nodeId;
      this.checkNode(v, node);
      if (cap.accessType !== v.accessType) {
        throw invalid(`volume ${id} is a ${v.accessType} volume; the capability asks for ${cap.accessType}`);
      }
      if (!v.staged || v.staged.path !== staging) {
        throw precondition(`volume ${id} is not staged at ${staging}; call NodeStageVolume first`);
      }
      const readonly = (args.readonly ?? false) || isReaderOnly(cap.accessMode);
      const cur = v.targets[target];
      if (cur) {
        if (cur.readonly !== readonly || !sameCapability(cur.capability, cap)) {
          throw alreadyExists(
            `volume ${id} is already published at ${target} with a different capability or readonly flag`,
          );
        }
        await this.backend.publish(bv(v), {
          targetPath: target,
          pathRoot: targetRoot,
          stagingPath: staging,
          readonly,
          capability: cap,
        });
        return;
      }
      nodePathIn('target_path', target, this.pathRoots);
      for (const other of Object.values(this.state.volumes)) {
        if (other.id !== id && other.targets[target]) {
          throw precondition(`target_path ${target} is in use by volume ${other.id}`);
        }
      }
      const others = Object.keys(v.targets);
      if (others.length > 0 && cap.accessMode === AccessMode.SINGLE_NODE_SINGLE_WRITER) {
        throw precondition(`volume ${id} is SINGLE_NODE_SINGLE_WRITER and already published at ${others[0]}`);
      }
      const pub: NodePublication = { readonly, capability: cap, stagingPath: staging };
      await this.backend.publish(bv(v), {
        targetPath: target,
        pathRoot: targetRoot,
        stagingPath: staging,
        readonly,
        capability: cap,
      });
      v.targets[target] = pub;
      try {
        await this.persist();
      } catch (e) {
        delete v.targets[target];
        await this.backend.unpublish(bv(v), target).catch(() => {});
        throw e;
      }
    });
  }

  async nodeUnpublish(args: { nodeId?: string; volumeId?: string; targetPath?: string }): Promise<void> {
    const id = requireId('volume_id', args.volumeId);
    const target = checkNodePath('target_path', requireField('target_path', args.targetPath), this.pathRoots, {
      followLast: false,
    });
    await this.locks.with([`volume ${id}`], 'NodeUnpublishVolume', async () => {
      const v = this.volume(id);
      const node = args.nodeId ?? this.nodeId;
      this.checkNode(v, node);
      if (!v.targets[target]) return;
      await this.backend.unpublish(bv(v), target);
      delete v.targets[target];
      await this.persist();
    });
  }

  private volumePathOf(v: VolumeRecord, p: string): string {
    const norm = path.isAbsolute(p) ? path.resolve(p) : p;
    if (v.targets[norm] || v.staged?.path === norm) return norm;
    throw notFound(`volume ${v.id} is not published or staged at ${p}`);
  }

  async nodeStats(args: { nodeId?: string; volumeId?: string; volumePath?: string }): Promise<{
    usage: Awaited<ReturnType<Backend['usage']>>;
    condition: VolumeCondition;
  }> {
    const id = requireId('volume_id', args.volumeId);
    const p = requireField('volume_path', args.volumePath);
    if (p.includes('\0')) throw invalid('volume_path must not contain a NUL byte');
    const v = this.volume(id);
    const node = args.nodeId ?? this.nodeId;
    this.checkNode(v, node);
    const where = this.volumePathOf(v, p);
    // a staged block volume has nothing mounted at its staging path; only its data can be checked
    const condition = await this.backend.condition(
      bv(v),
      v.accessType === 'block' && where === v.staged?.path ? undefined : where,
    );
    if (condition.abnormal) {
      return { usage: { bytes: { total: v.capacityBytes, used: 0, available: 0 } }, condition };
    }
    return { usage: await this.backend.usage(bv(v), where), condition };
  }

  async nodeExpand(args: {
    /** the calling node (default: this driver's node) */
    nodeId?: string;
    volumeId?: string;
    volumePath?: string;
    capacityRange?: CapacityRange | null;
    capability?: Capability | null;
  }): Promise<{ capacityBytes: number }> {
    const id = requireId('volume_id', args.volumeId);
    const p = requireField('volume_path', args.volumePath);
    if (p.includes('\0')) throw invalid('volume_path must not contain a NUL byte');
    if (args.capability) this.checkCapability(args.capability);
    return this.locks.with([`volume ${id}`], 'NodeExpandVolume', async () => {
      const v = this.volume(id);
      const node = args.nodeId ?? this.nodeId;
      this.checkNode(v, node);
      this.volumePathOf(v, p);
      const req = args.capacityRange?.requiredBytes ?? 0;
      if (req < 0 || !Number.isSafeInteger(req))
        throw invalid(`capacity_range.required_bytes ${req} is not valid`);
      if (req > v.capacityBytes) {
        throw outOfRange(
          `volume ${id} has ${v.capacityBytes} bytes; call ControllerExpandVolume before growing it to ${req} on the node`,
        );
      }
      return { capacityBytes: v.capacityBytes };
    });
  }
}
