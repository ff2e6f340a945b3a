// The kubelet's cgroup manager (upstream cgroup_manager_linux.go): creates, updates and removes the cgroups
// of the QoS hierarchy. `RealCgroupManager` writes the files under the host's cgroup mounts, v1 (one
// hierarchy per controller) or v2 (the unified hierarchy); `SimCgroupManager` records what it would write,
// for the simulated runtime. Both report what each cgroup holds, for status and /stats/summary.
import fs from 'node:fs';
import path from 'node:path';
import { type CgroupFile, cgroupFiles, type ResourceConfig } from './cm-qos.js';

export type CgroupVersion = 'v1' | 'v2';

/** What a cgroup was set to: its path below the controllers' mounts and each file written. */
export interface CgroupRecord {
  path: string;
  version: CgroupVersion;
  files: Record<string, string>;
}

export interface CgroupManager {
  readonly version: CgroupVersion;
  /** Creates the cgroup (and missing parents) if absent and applies the config. */
  ensure(cgroupPath: string, config: ResourceConfig): CgroupRecord;
  /** Removes the cgroup; a missing one is not an error. */
  destroy(cgroupPath: string): void;
  get(cgroupPath: string): CgroupRecord | undefined;
  /** Memory and CPU usage of a cgroup, when the backend can read them. */
  usage(cgroupPath: string): { memoryWorkingSetBytes?: number; cpuUsageNanos?: number } | undefined;
}

export class SimCgroupManager implements CgroupManager {
  private readonly cgroups = new Map<string, CgroupRecord>();
  constructor(readonly version: CgroupVersion = 'v2') {}
  ensure(cgroupPath: string, config: ResourceConfig): CgroupRecord {
    const rec = this.cgroups.get(cgroupPath) ?? { path: cgroupPath, version: this.version, files: {} };
    for (const f of cgroupFiles(config, this.version)) rec.files[f.file] = f.value;
    this.cgroups.set(cgroupPath, rec);
    return rec;
  }
  destroy(cgroupPath: string): void {
    for (const p of [...this.cgroups.keys()]) if (p === cgroupPath || p.startsWith(`${cgroupPath}/`)) this.cgroups.delete(p);
  }
  get(cgroupPath: string) {
    return this.cgroups.get(cgroupPath);
  }
  usage() {
    return undefined;
  }
}

/** A cgroup operation that failed, naming the file. */
export class CgroupError extends Error {
  override readonly name = 'CgroupError';
}

const V1_CONTROLLERS = ['cpu', 'cpuacct', 'memory', 'pids'] as const;

/** Which cgroup version the host runs: v2 when the unified mount has cpu and memory, else v1, else none. */
export function detectCgroupVersion(mount = '/sys/fs/cgroup'): CgroupVersion | undefined {
  for (const dir of [mount, path.join(mount, 'unified')]) {
    try {
      const controllers = fs.readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').split(/\s+/);
      if (controllers.includes('cpu') && controllers.includes('memory')) return 'v2';
    } catch {
      // not a v2 mount
    }
  }
  if (fs.existsSync(path.join(mount, 'cpu', 'cpu.shares')) && fs.existsSync(path.join(mount, 'memory', 'memory.limit_in_bytes'))) return 'v1';
  return undefined;
}

function validCgroupPath(p: string): string {
  if (!p.startsWith('/') || p.split('/').some((s) => s === '..' || s === '.') || p.includes('\0')) {
    throw new CgroupError(`invalid cgroup path ${JSON.stringify(p)}`);
  }
  return p;
}

export class RealCgroupManager implements CgroupManager {
  readonly version: CgroupVersion;
  private readonly records = new Map<string, CgroupRecord>();

  constructor(
    readonly mount = '/sys/fs/cgroup',
    version?: CgroupVersion,
  ) {
    const v = version ?? detectCgroupVersion(mount);
    if (!v) throw new CgroupError(`no usable cgroup hierarchy under ${mount} (need v2 with cpu and memory, or v1 cpu and memory)`);
    this.version = v;
  }

  private unified(): string {
    return fs.existsSync(path.join(this.mount, 'cgroup.controllers')) ? this.mount : path.join(this.mount, 'unified');
  }

  /** The directories of one cgroup: one per v1 controller, or the one unified directory. */
  dirs(cgroupPath: string): { controller: string; dir: string }[] {
    validCgroupPath(cgroupPath);
    if (this.version === 'v2') return [{ controller: 'unified', dir: path.join(this.unified(), cgroupPath) }];
    return V1_CONTROLLERS.filter((c) => fs.existsSync(path.join(this.mount, c))).map((c) => ({ controller: c, dir: path.join(this.mount, c, cgroupPath) }));
  }

  private dirFor(cgroupPath: string, f: CgroupFile): string {
    if (this.version === 'v2') return path.join(this.unified(), cgroupPath);
    return path.join(this.mount, f.controller, cgroupPath);
  }

  ensure(cgroupPath: string, config: ResourceConfig): CgroupRecord {
    const dirs = this.dirs(cgroupPath);
    if (this.version === 'v2') this.enableControllers(cgroupPath);
    for (const { dir } of dirs) fs.mkdirSync(dir, { recursive: true });
    const rec = this.records.get(cgroupPath) ?? { path: cgroupPath, version: this.version, files: {} };
    for (const f of cgroupFiles(config, this.version)) {
      const file = path.join(this.dirFor(cgroupPath, f), f.file);
      if (this.version === 'v1' && !fs.existsSync(path.dirname(file))) continue; // controller not mounted
      try {
        fs.writeFileSync(file, f.value);
      } catch (err) {
        throw new CgroupError(`failed to write ${JSON.stringify(f.value)} to ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      rec.files[f.file] = f.value;
    }
    this.records.set(cgroupPath, rec);
    return rec;
  }

  /** v2: a child's cpu/memory/pids files exist only when every ancestor delegates those controllers. */
  private enableControllers(cgroupPath: string) {
    const root = this.unified();
    const parts = cgroupPath.split('/').filter(Boolean);
    let dir = root;
    for (const part of parts) {
      try {
        fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), '+cpu +memory +pids');
      } catch {
        // already enabled, or not delegable here: the writes below report what is missing
      }
      dir = path.join(dir, part);
      fs.mkdirSync(dir, { recursive: true });
    }
  }

  /**
   * Every directory of a cgroup, as upstream's Destroy removes it: on v1 from each mounted hierarchy, not only
   * those it configures, since the runtime (runc) makes the pod's path in all of them (blkio, devices, ...).
   */
  private allDirs(cgroupPath: string): string[] {
    if (this.version === 'v2') return this.dirs(cgroupPath).map((d) => d.dir);
    validCgroupPath(cgroupPath);
    return fs
      .readdirSync(this.mount, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => path.join(this.mount, e.name, cgroupPath));
  }

  destroy(cgroupPath: string): void {
    for (const dir of this.allDirs(cgroupPath)) {
      if (!fs.existsSync(dir)) continue;
      // Children first: a cgroup directory is removed with rmdir once it has no children and no tasks.
      const walk = (d: string) => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) walk(path.join(d, e.name));
        try {
          fs.rmdirSync(d);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new CgroupError(`failed to remove cgroup ${d}: ${(err as NodeJS.ErrnoException).code}`);
        }
      };
      walk(dir);
    }
    for (const p of [...this.records.keys()]) if (p === cgroupPath || p.startsWith(`${cgroupPath}/`)) this.records.delete(p);
  }

  get(cgroupPath: string) {
    return this.records.get(cgroupPath);
  }

  /** Reads a cgroup file directly (for tests and status). */
  read(cgroupPath: string, controller: 'cpu' | 'memory' | 'pids' | 'cpuacct', file: string): string | undefined {
    const dir = this.version === 'v2' ? path.join(this.unified(), validCgroupPath(cgroupPath)) : path.join(this.mount, controller, validCgroupPath(cgroupPath));
    try {
      return fs.readFileSync(path.join(dir, file), 'utf8').trim();
    } catch {
      return undefined;
    }
  }

  usage(cgroupPath: string) {
    const num = (s: string | undefined) => (s === undefined ? undefined : Number(s));
    if (this.version === 'v2') {
      const usage = num(this.read(cgroupPath, 'memory', 'memory.current'));
      const stat = this.read(cgroupPath, 'memory', 'memory.stat') ?? '';
      const inactive = Number(/^inactive_file (\d+)/m.exec(stat)?.[1] ?? 0);
      const cpu = Number(/^usage_usec (\d+)/m.exec(this.read(cgroupPath, 'cpu', 'cpu.stat') ?? '')?.[1] ?? NaN);
      return { memoryWorkingSetBytes: usage === undefined ? undefined : Math.max(0, usage - inactive), cpuUsageNanos: Number.isNaN(cpu) ? undefined : cpu * 1000 };
    }
    const usage = num(this.read(cgroupPath, 'memory', 'memory.usage_in_bytes'));
    const stat = this.read(cgroupPath, 'memory', 'memory.stat') ?? '';
    const inactive = Number(/^total_inactive_file (\d+)/m.exec(stat)?.[1] ?? 0);
    return { memoryWorkingSetBytes: usage === undefined ? undefined : Math.max(0, usage - inactive), cpuUsageNanos: num(this.read(cgroupPath, 'cpuacct', 'cpuacct.usage')) };
  }
}
