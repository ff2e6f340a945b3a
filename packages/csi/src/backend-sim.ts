import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { mkdirWithinAsync, openFileWithin } from '@kemu/safe-fs';
import type { Backend, BackendVolume, PublishSpec, VolumeUsage } from './backend.js';
import { CsiError } from './errors.js';
import type { Capability, VolumeCondition } from './types.js';

export type SimOperation =
  | 'createVolume'
  | 'deleteVolume'
  | 'expandVolume'
  | 'createSnapshot'
  | 'deleteSnapshot'
  | 'stage'
  | 'unstage'
  | 'publish'
  | 'unpublish'
  | 'usage';

export const SIM_OPERATIONS: readonly SimOperation[] = [
  'createVolume',
  'deleteVolume',
  'expandVolume',
  'createSnapshot',
  'deleteSnapshot',
  'stage',
  'unstage',
  'publish',
  'unpublish',
  'usage',
];

export interface SimFailure {
  op: SimOperation;
  /** gRPC status code the call answers with */
  code: number;
  message?: string;
  /** how many calls fail; omitted or negative means every call */
  times?: number;
  /** only calls for this volume id */
  volumeId?: string;
}

export interface SimBackendOptions {
  /** milliseconds added to every operation, or per operation */
  latencyMs?: number | Partial<Record<SimOperation, number>>;
  failures?: SimFailure[];
}

/**
 * Keeps volumes in memory. Latencies and failures are configurable so callers (sidecars, kubelet,
 * controllers) can be tested against slow and failing storage. Injected failures fire before any change.
 */
export class SimBackend implements Backend {
  readonly name = 'sim';
  private readonly volumes = new Map<string, { bytes: number; used: number; abnormal?: string }>();
  private readonly snapshots = new Map<string, number>();
  private readonly mounts = new Map<string, string>();
  private latency: SimBackendOptions['latencyMs'];
  private failures: SimFailure[];
  readonly calls: Record<string, number> = {};

  constructor(opts: SimBackendOptions = {}) {
    this.latency = opts.latencyMs;
    this.failures = [...(opts.failures ?? [])];
  }

  /** Add a failure rule at run time. */
  injectFailure(f: SimFailure): void {
    this.failures.push({ ...f });
  }

  clearFailures(): void {
    this.failures = [];
  }

  setLatency(latency: SimBackendOptions['latencyMs']): void {
    this.latency = latency;
  }

  /** Mark a volume's data as damaged so health checks report it abnormal. */
  damage(volumeId: string, message: string): void {
    const v = this.volumes.get(volumeId);
    if (v) v.abnormal = message;
  }

  private async step(op: SimOperation, volumeId?: string): Promise<void> {
    this.calls[op] = (this.calls[op] ?? 0) + 1;
    const ms = typeof this.latency === 'number' ? this.latency : (this.latency?.[op] ?? 0);
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
    const i = this.failures.findIndex((f) => f.op === op && (!f.volumeId || f.volumeId === volumeId));
    if (i >= 0) {
      const f = this.failures[i]!;
      if (f.times !== undefined && f.times >= 0) {
        f.times -= 1;
        if (f.times <= 0) this.failures.splice(i, 1);
      }
      throw new CsiError(f.code, f.message ?? `injected failure in ${op}`);
    }
  }

  async createVolume(
    vol: BackendVolume,
    source?: { snapshotId: string } | { volume: BackendVolume },
  ): Promise<void> {
    await this.step('createVolume', vol.id);
    let used = 0;
    if (source && 'snapshotId' in source) used = this.snapshots.get(source.snapshotId) ?? 0;
    if (source && 'volume' in source) used = this.volumes.get(source.volume.id)?.used ?? 0;
    this.volumes.set(vol.id, { bytes: vol.capacityBytes, used });
  }

  async deleteVolume(vol: BackendVolume): Promise<void> {
    await this.step('deleteVolume', vol.id);
    this.volumes.delete(vol.id);
  }

  async expandVolume(vol: BackendVolume, newBytes: number): Promise<void> {
    await this.step('expandVolume', vol.id);
    const v = this.volumes.get(vol.id);
    if (v) v.bytes = newBytes;
  }

  async createSnapshot(snapshotId: string, vol: BackendVolume): Promise<void> {
    await this.step('createSnapshot', vol.id);
    this.snapshots.set(snapshotId, this.volumes.get(vol.id)?.used ?? 0);
  }

  async deleteSnapshot(snapshotId: string): Promise<void> {
    await this.step('deleteSnapshot');
    this.snapshots.delete(snapshotId);
  }

  async stage(vol: BackendVolume, stagingPath: string, _cap: Capability): Promise<void> {
    await this.step('stage', vol.id);
    this.mounts.set(stagingPath, vol.id);
  }

  async unstage(vol: BackendVolume, stagingPath: string): Promise<void> {
    await this.step('unstage', vol.id);
    this.mounts.delete(stagingPath);
  }

  async publish(vol: BackendVolume, spec: PublishSpec): Promise<void> {
    await this.step('publish', vol.id);
    // The SP creates target_path (a directory for a mount volume, a file for a block one); nothing is
    // mounted on it, but whoever looks finds what a real driver leaves there.
    if (vol.accessType === 'mount') await mkdirWithinAsync(spec.pathRoot, spec.targetPath, 0o750, 'target_path');
    else fs.closeSync(openFileWithin(spec.pathRoot, spec.targetPath, { mode: 0o660, what: 'target_path' }).fd);
    this.mounts.set(spec.targetPath, vol.id);
  }

  async unpublish(vol: BackendVolume, targetPath: string): Promise<void> {
    await this.step('unpublish', vol.id);
    // A real driver unmounts, so what a workload wrote (into the volume) leaves the target's view, and then
    // removes the mount point. Nothing is mounted here, so what was written sits in the directory itself and
    // goes with it; rm never follows a link it meets, so nothing outside the target is touched.
    const st = await fsp.lstat(targetPath).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (st?.isDirectory()) await fsp.rm(targetPath, { recursive: true });
    else if (st) await fsp.unlink(targetPath);
    this.mounts.delete(targetPath);
  }

  async usage(vol: BackendVolume, _path: string): Promise<VolumeUsage> {
    await this.step('usage', vol.id);
    const v = this.volumes.get(vol.id);
    const total = v?.bytes ?? vol.capacityBytes;
    const used = Math.min(v?.used ?? 0, total);
    const usage: VolumeUsage = { bytes: { total, used, available: total - used } };
    if (vol.accessType === 'mount') usage.inodes = { total: 1_000_000, used: 1, available: 999_999 };
    return usage;
  }

  async condition(vol: BackendVolume, path?: string): Promise<VolumeCondition> {
    const v = this.volumes.get(vol.id);
    if (!v) return { abnormal: true, message: `backing data of volume ${vol.id} is missing` };
    if (v.abnormal) return { abnormal: true, message: v.abnormal };
    if (path !== undefined && this.mounts.get(path) !== vol.id) {
      return { abnormal: true, message: `${path} is not mounted` };
    }
    return { abnormal: false, message: 'volume is healthy' };
  }

  devicePath(vol: BackendVolume): string {
    return `sim://${vol.id}`;
  }

  /** Sim state lives in memory only, so after a restart it is rebuilt from the driver state. */
  async reconcile(): Promise<void> {}

  /** Re-create in-memory backing records for volumes the driver state knows (used on restart). */
  adopt(vols: Array<BackendVolume & { mounts: string[] }>): void {
    for (const v of vols) {
      if (!this.volumes.has(v.id)) this.volumes.set(v.id, { bytes: v.capacityBytes, used: 0 });
      for (const m of v.mounts) this.mounts.set(m, v.id);
    }
  }
}
