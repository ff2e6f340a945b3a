import type { AccessType, Capability, VolumeCondition } from './types.js';

export interface BackendVolume {
  id: string;
  accessType: AccessType;
  capacityBytes: number;
}

export interface PublishSpec {
  targetPath: string;
  /** The allowed root targetPath lies under: whatever the backend creates for it stays below this root. */
  pathRoot: string;
  /** set when the volume was staged; publish binds from there */
  stagingPath?: string;
  readonly: boolean;
  capability: Capability;
}

export interface VolumeUsage {
  bytes: { total: number; used: number; available: number };
  inodes?: { total: number; used: number; available: number };
}

/**
 * The data plane behind the driver: where volume bytes live and how they appear at a path. The driver
 * core owns all bookkeeping and protocol rules; a backend only does the work and undoes partial work
 * when it fails, so a failed call leaves nothing behind.
 */
export interface Backend {
  readonly name: 'hostpath' | 'sim' | string;
  /** Create the backing store, optionally filled from a snapshot or another volume. */
  createVolume(
    vol: BackendVolume,
    source?: { snapshotId: string } | { volume: BackendVolume },
  ): Promise<void>;
  deleteVolume(vol: BackendVolume): Promise<void>;
  expandVolume(vol: BackendVolume, newBytes: number): Promise<void>;
  createSnapshot(snapshotId: string, vol: BackendVolume): Promise<void>;
  deleteSnapshot(snapshotId: string): Promise<void>;
  /** `pathRoot` is the allowed root stagingPath lies under; nothing is created outside it. */
  stage(vol: BackendVolume, stagingPath: string, cap: Capability, pathRoot: string): Promise<void>;
  unstage(vol: BackendVolume, stagingPath: string): Promise<void>;
  /** Creates targetPath (a directory for mount volumes, a file for block ones), as the spec asks of the SP. */
  publish(vol: BackendVolume, spec: PublishSpec): Promise<void>;
  /** Removes what publish created at targetPath. */
  unpublish(vol: BackendVolume, targetPath: string): Promise<void>;
  usage(vol: BackendVolume, path: string): Promise<VolumeUsage>;
  condition(vol: BackendVolume, path?: string): Promise<VolumeCondition>;
  /** Where a controller-attached volume is reachable on the node (goes into publish_context). */
  devicePath(vol: BackendVolume): string;
  /** Drop backing data of volumes/snapshots the state no longer knows (after a crash mid-create). */
  reconcile?(volumeIds: Set<string>, snapshotIds: Set<string>): Promise<void>;
}
