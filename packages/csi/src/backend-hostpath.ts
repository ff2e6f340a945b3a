import { execFile } from 'node:child_process';
import { closeSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { mkdirWithin, openFileWithin } from '@kemu/safe-fs';
import * as tar from 'tar';
import type { Backend, BackendVolume, PublishSpec, VolumeUsage } from './backend.js';
import { bindMount, canMount, isMountPoint, unmount } from './mount.js';
import type { Capability, VolumeCondition } from './types.js';

const run = promisify(execFile);

export interface HostPathBackendOptions {
  /** the driver's state directory; volumes and snapshots live below it */
  dir: string;
  /**
   * Bind-mount volumes onto staging and target paths. Defaults to true when running as root. Without
   * mounts the target path becomes a symbolic link to the volume's data (read-only is then not enforced).
   */
  useMounts?: boolean;
  /** Reserve block volume space with fallocate(1) instead of a sparse file. Default true. */
  preallocate?: boolean;
}

const exists = (p: string) =>
  fs.lstat(p).then(
    () => true,
    () => false,
  );

/**
 * Volumes as directories (mount) or files (block) under `<dir>/volumes`, snapshots as tar archives under
 * `<dir>/snapshots`. Every create writes to its final name only after the data is complete, and removes
 * what it wrote when it fails.
 */
export class HostPathBackend implements Backend {
  readonly name = 'hostpath';
  readonly useMounts: boolean;
  private readonly preallocate: boolean;
  readonly volumesDir: string;
  readonly snapshotsDir: string;

  constructor(opts: HostPathBackendOptions) {
    this.useMounts = opts.useMounts ?? canMount;
    this.preallocate = opts.preallocate ?? true;
    this.volumesDir = path.join(opts.dir, 'volumes');
    this.snapshotsDir = path.join(opts.dir, 'snapshots');
  }

  async init(): Promise<void> {
    await fs.mkdir(this.volumesDir, { recursive: true, mode: 0o750 });
    await fs.mkdir(this.snapshotsDir, { recursive: true, mode: 0o750 });
  }

  dataPath(vol: BackendVolume): string {
    return path.join(this.volumesDir, vol.accessType === 'block' ? `${vol.id}.img` : vol.id);
  }

  private snapshotFile(id: string): string {
    return path.join(this.snapshotsDir, `${id}.tar`);
  }

  private async allocate(file: string, bytes: number): Promise<void> {
    const st = await fs.stat(file).catch(() => null);
    if (st && st.size >= bytes) return;
    if (this.preallocate) {
      try {
        await run('fallocate', ['-l', String(bytes), file]);
        return;
      } catch {
        // file systems without fallocate support get a sparse file instead
      }
    }
    const fh = await fs.open(file, 'r+');
    try {
      await fh.truncate(bytes);
    } finally {
      await fh.close();
    }
  }

  async createVolume(
    vol: BackendVolume,
    source?: { snapshotId: string } | { volume: BackendVolume },
  ): Promise<void> {
    const dest = this.dataPath(vol);
    const tmp = path.join(this.volumesDir, `.${vol.id}.creating`);
    await fs.rm(tmp, { recursive: true, force: true });
    try {
      if (vol.accessType === 'mount') {
        await fs.mkdir(tmp, { mode: 0o777 });
        await fs.chmod(tmp, 0o777);
        if (source && 'snapshotId' in source)
          await tar.x({ file: this.snapshotFile(source.snapshotId), cwd: tmp });
        if (source && 'volume' in source) {
          await fs.cp(this.dataPath(source.volume), tmp, { recursive: true, preserveTimestamps: true });
        }
      } else {
        if (source && 'snapshotId' in source) {
          await fs.mkdir(tmp);
          await tar.x({ file: this.snapshotFile(source.snapshotId), cwd: tmp });
          const [entry] = await fs.readdir(tmp);
          if (!entry) throw new Error(`snapshot ${source.snapshotId} holds no block image`);
          const img = `${tmp}.img`;
          await fs.rename(path.join(tmp, entry), img);
          await fs.rm(tmp, { recursive: true, force: true });
          await fs.rename(img, tmp);
        } else if (source && 'volume' in source) {
          await fs.copyFile(this.dataPath(source.volume), tmp);
        } else {
          await fs.writeFile(tmp, '', { mode: 0o660 });
        }
        await this.allocate(tmp, vol.capacityBytes);
      }
      await fs.rename(tmp, dest);
    } catch (e) {
      await fs.rm(tmp, { recursive: true, force: true });
      await fs.rm(`${tmp}.img`, { force: true });
      throw e;
    }
  }

  async deleteVolume(vol: BackendVolume): Promise<void> {
    await fs.rm(this.dataPath(vol), { recursive: true, force: true });
  }

  async expandVolume(vol: BackendVolume, newBytes: number): Promise<void> {
    // a directory has no size of its own; its capacity is the driver's bookkeeping
    if (vol.accessType === 'block') await this.allocate(this.dataPath(vol), newBytes);
  }

  async createSnapshot(snapshotId: string, vol: BackendVolume): Promise<void> {
    const file = this.snapshotFile(snapshotId);
    const tmp = `${file}.tmp`;
    try {
      if (vol.accessType === 'mount') {
        await tar.c({ file: tmp, cwd: this.dataPath(vol), portable: true }, ['.']);
      } else {
        await tar.c({ file: tmp, cwd: this.volumesDir, portable: true }, [`${vol.id}.img`]);
      }
      await fs.rename(tmp, file);
    } catch (e) {
      await fs.rm(tmp, { force: true });
      throw e;
    }
  }

  async deleteSnapshot(snapshotId: string): Promise<void> {
    await fs.rm(this.snapshotFile(snapshotId), { force: true });
  }

  async stage(vol: BackendVolume, stagingPath: string, _cap: Capability, pathRoot: string): Promise<void> {
    // block volumes are published straight from their image file; the staging directory stays empty
    if (vol.accessType !== 'mount') return;
    // mount onto the resolved directory, never through a link planted on the way
    const dir = mkdirWithin(pathRoot, stagingPath, 0o750, 'staging_target_path');
    if (this.useMounts && !(await isMountPoint(dir))) await bindMount(this.dataPath(vol), dir, []);
  }

  async unstage(vol: BackendVolume, stagingPath: string): Promise<void> {
    if (vol.accessType !== 'mount') return;
    if (this.useMounts && (await isMountPoint(stagingPath))) await unmount(stagingPath);
  }

  async publish(vol: BackendVolume, spec: PublishSpec): Promise<void> {
    const { targetPath } = spec;
    const source =
      vol.accessType === 'mount' && spec.stagingPath && this.useMounts
        ? spec.stagingPath
        : this.dataPath(vol);
    const group = spec.capability.volumeMountGroup;
    if (group && vol.accessType === 'mount') {
      const gid = Number(group);
      const st = await fs.stat(this.dataPath(vol));
      await fs.chown(this.dataPath(vol), st.uid, gid);
      await fs.chmod(this.dataPath(vol), 0o2775);
    }
    // Everything below works on the resolved target: created component by component under the allowed
    // root, so a symbolic link planted on the way is refused instead of followed by mkdir or mount.
    const parent = mkdirWithin(spec.pathRoot, path.dirname(targetPath), 0o750, 'target_path');
    const target = path.join(parent, path.basename(targetPath));
    const created = !(await exists(target));
    if (!this.useMounts) {
      // fallback without mount privileges: the target becomes a link to the data
      const st = await fs.lstat(target).catch(() => null);
      if (st?.isSymbolicLink()) return;
      if (st?.isDirectory()) await fs.rmdir(target);
      else if (st) await fs.unlink(target);
      await fs.symlink(source, target);
      return;
    }
    if (!created && (await fs.lstat(target)).isSymbolicLink()) {
      throw new Error(`target_path ${targetPath} is a symbolic link; refusing to mount through it`);
    }
    if (await isMountPoint(target)) return;
    if (vol.accessType === 'mount') mkdirWithin(spec.pathRoot, target, 0o750, 'target_path');
    else if (created) closeSync(openFileWithin(spec.pathRoot, target, { mode: 0o660, what: 'target_path' }).fd);
    const flags = [...(spec.capability.mountFlags ?? [])];
    if (spec.readonly && !flags.includes('ro')) flags.push('ro');
    try {
      await bindMount(source, target, flags);
    } catch (e) {
      if (created) await fs.rm(target, { recursive: false, force: true }).catch(() => {});
      throw e;
    }
  }

  async unpublish(_vol: BackendVolume, targetPath: string): Promise<void> {
    if (this.useMounts) {
      // a target can carry stacked mounts after a crash between mount and bookkeeping
      while (await isMountPoint(targetPath)) await unmount(targetPath);
    }
    const st = await fs.lstat(targetPath).catch(() => null);
    if (!st) return;
    // never remove data: only the empty directory, empty file or link the driver created
    if (st.isDirectory()) await fs.rmdir(targetPath);
    else await fs.unlink(targetPath);
  }

  async usage(vol: BackendVolume, _path: string): Promise<VolumeUsage> {
    const data = this.dataPath(vol);
    if (vol.accessType === 'block') {
      const st = await fs.stat(data);
      const used = Math.min(st.blocks * 512, vol.capacityBytes);
      return { bytes: { total: vol.capacityBytes, used, available: vol.capacityBytes - used } };
    }
    let used = 0;
    let files = 0;
    const walk = async (dir: string): Promise<void> => {
      for (const e of await fs.readdir(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        files += 1;
        if (e.isDirectory()) await walk(p);
        else if (e.isFile()) used += (await fs.lstat(p)).size;
      }
    };
    await walk(data);
    const sfs = await fs.statfs(data);
    return {
      bytes: { total: vol.capacityBytes, used, available: Math.max(0, vol.capacityBytes - used) },
      inodes: { total: sfs.files, used: Math.max(files, sfs.files - sfs.ffree), available: sfs.ffree },
    };
  }

  async condition(vol: BackendVolume, p?: string): Promise<VolumeCondition> {
    if (!(await exists(this.dataPath(vol)))) {
      return { abnormal: true, message: `backing data ${this.dataPath(vol)} is missing` };
    }
    if (p !== undefined) {
      const ok = this.useMounts ? await isMountPoint(p) : await exists(p);
      if (!ok) return { abnormal: true, message: `${p} is not mounted` };
    }
    return { abnormal: false, message: 'volume is healthy' };
  }

  devicePath(vol: BackendVolume): string {
    return this.dataPath(vol);
  }

  async reconcile(volumeIds: Set<string>, snapshotIds: Set<string>): Promise<void> {
    for (const name of await fs.readdir(this.volumesDir)) {
      const id = name.endsWith('.img') ? name.slice(0, -4) : name;
      if (name.startsWith('.') || !volumeIds.has(id)) {
        await fs.rm(path.join(this.volumesDir, name), { recursive: true, force: true });
      }
    }
    for (const name of await fs.readdir(this.snapshotsDir)) {
      if (!name.endsWith('.tar') || !snapshotIds.has(name.slice(0, -4))) {
        await fs.rm(path.join(this.snapshotsDir, name), { force: true });
      }
    }
  }
}
