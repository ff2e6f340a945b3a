// Per-container cgroups: cgroup v2 when the unified hierarchy has the cpu and memory controllers,
// otherwise the v1 cpu/cpuacct/memory hierarchies, otherwise none (limits are then recorded only).
import fs from 'node:fs';
import path from 'node:path';
import type { cri } from '@kemu/proto';

export type CgroupMode = 'v2' | 'v1' | 'none';

const ROOT = '/sys/fs/cgroup';

function tryWrite(file: string, value: string): boolean {
  try {
    fs.writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function readNum(file: string): number | undefined {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

function readKeyed(file: string): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const [k, v] = line.split(/\s+/);
      if (k && v !== undefined) out[k] = Number(v);
    }
  } catch {
    // missing stat file: report nothing
  }
  return out;
}

/** Where the unified hierarchy is mounted: /sys/fs/cgroup (pure v2) or /sys/fs/cgroup/unified (hybrid). */
function unifiedRoot(): string | undefined {
  for (const dir of [ROOT, path.join(ROOT, 'unified')]) {
    if (fs.existsSync(path.join(dir, 'cgroup.controllers'))) return dir;
  }
  return undefined;
}

export function detectCgroupMode(): CgroupMode {
  const uni = unifiedRoot();
  if (uni) {
    const controllers = fs.readFileSync(path.join(uni, 'cgroup.controllers'), 'utf8').split(/\s+/);
    if (controllers.includes('cpu') && controllers.includes('memory')) return 'v2';
  }
  if (fs.existsSync(path.join(ROOT, 'memory', 'memory.limit_in_bytes')) && fs.existsSync(path.join(ROOT, 'cpu', 'cpu.shares'))) {
    return 'v1';
  }
  return 'none';
}

/** The kubelet/runc conversion from CPU shares (2..262144) to cgroup v2 cpu.weight (1..10000). */
export function sharesToWeight(shares: number): number {
  if (shares <= 0) return 100;
  return Math.min(10000, Math.max(1, Math.floor(1 + ((shares - 2) * 9999) / 262142)));
}

export class ContainerCgroup {
  readonly dirs: string[];

  /** `name` is a container id (placed at `/kemu-cri/<name>`) or, starting with `/`, a cgroup path of its own. */
  constructor(
    readonly mode: CgroupMode,
    readonly name: string,
  ) {
    const rel = name.startsWith('/') ? name.slice(1) : path.join('kemu-cri', name);
    if (mode === 'v2') this.dirs = [path.join(unifiedRoot()!, rel)];
    else if (mode === 'v1') this.dirs = ['cpu', 'cpuacct', 'memory'].map((c) => path.join(ROOT, c, rel));
    else this.dirs = [];
  }

  create(): void {
    if (this.mode === 'v2') {
      // Every ancestor below the root must delegate cpu and memory for the leaf to have them.
      const root = unifiedRoot()!;
      let dir = root;
      for (const part of path.relative(root, path.dirname(this.dirs[0])).split('/').filter(Boolean)) {
        tryWrite(path.join(dir, 'cgroup.subtree_control'), '+cpu +memory');
        dir = path.join(dir, part);
        fs.mkdirSync(dir, { recursive: true });
      }
      tryWrite(path.join(dir, 'cgroup.subtree_control'), '+cpu +memory');
    }
    for (const d of this.dirs) fs.mkdirSync(d, { recursive: true });
    // v1 charges pages to the cgroup a page was first touched in; move them along with the process.
    if (this.mode === 'v1') tryWrite(path.join(this.dirs[2], 'memory.move_charge_at_immigrate'), '3');
  }

  addProcess(pid: number): void {
    for (const d of this.dirs) tryWrite(path.join(d, 'cgroup.procs'), String(pid));
  }

  /** Applies limits; returns the files written (what tests and ContainerStatus verbose info show). */
  apply(r: cri.LinuxContainerResources): Record<string, string> {
    const written: Record<string, string> = {};
    const set = (dir: string, file: string, value: string) => {
      if (tryWrite(path.join(dir, file), value)) written[file] = value;
    };
    if (this.mode === 'v2') {
      const d = this.dirs[0];
      const period = r.cpuPeriod || 100000;
      if (r.cpuQuota && r.cpuQuota > 0) set(d, 'cpu.max', `${r.cpuQuota} ${period}`);
      else if (r.cpuQuota === -1 || r.cpuPeriod) set(d, 'cpu.max', `max ${period}`);
      if (r.cpuShares) set(d, 'cpu.weight', String(sharesToWeight(r.cpuShares)));
      if (r.memoryLimitInBytes && r.memoryLimitInBytes > 0) set(d, 'memory.max', String(r.memoryLimitInBytes));
      for (const [k, v] of Object.entries(r.unified ?? {})) if (/^[a-z]+\.[a-z_.]+$/.test(k)) set(d, k, v);
    } else if (this.mode === 'v1') {
      const [cpu, , mem] = this.dirs;
      if (r.cpuPeriod) set(cpu, 'cpu.cfs_period_us', String(r.cpuPeriod));
      if (r.cpuQuota) set(cpu, 'cpu.cfs_quota_us', String(r.cpuQuota));
      if (r.cpuShares) set(cpu, 'cpu.shares', String(r.cpuShares));
      if (r.memoryLimitInBytes && r.memoryLimitInBytes > 0) set(mem, 'memory.limit_in_bytes', String(r.memoryLimitInBytes));
    }
    return written;
  }

  usage(): { cpuNs?: number; memUsage?: number; workingSet?: number; rss?: number } {
    if (this.mode === 'v2') {
      const d = this.dirs[0];
      const cpu = readKeyed(path.join(d, 'cpu.stat'));
      const memUsage = readNum(path.join(d, 'memory.current'));
      const stat = readKeyed(path.join(d, 'memory.stat'));
      return {
        cpuNs: cpu.usage_usec !== undefined ? cpu.usage_usec * 1000 : undefined,
        memUsage,
        workingSet: memUsage !== undefined ? Math.max(0, memUsage - (stat.inactive_file ?? 0)) : undefined,
        rss: stat.anon,
      };
    }
    if (this.mode === 'v1') {
      const [, acct, mem] = this.dirs;
      const memUsage = readNum(path.join(mem, 'memory.usage_in_bytes'));
      const stat = readKeyed(path.join(mem, 'memory.stat'));
      return {
        cpuNs: readNum(path.join(acct, 'cpuacct.usage')),
        memUsage,
        workingSet: memUsage !== undefined ? Math.max(0, memUsage - (stat.total_inactive_file ?? 0)) : undefined,
        rss: stat.total_rss,
      };
    }
    return {};
  }

  oomKilled(): boolean {
    if (this.mode === 'v2') return (readKeyed(path.join(this.dirs[0], 'memory.events')).oom_kill ?? 0) > 0;
    if (this.mode === 'v1') return (readKeyed(path.join(this.dirs[2], 'memory.oom_control')).oom_kill ?? 0) > 0;
    return false;
  }

  /**
   * Removes the container's cgroups. A killed container's last tasks leave their cgroup a moment after its
   * init is reaped, so a busy cgroup is tried again for up to `graceMs` before it is left to a later removal.
   */
  async remove(graceMs = CGROUP_REMOVE_GRACE_MS): Promise<void> {
    const deadline = Date.now() + graceMs;
    for (const d of this.dirs) await rmdirOnceEmpty(d, deadline);
  }
}

/** How long a cgroup whose processes were just killed may stay busy before its removal is left for later. */
export const CGROUP_REMOVE_GRACE_MS = 5000;

/**
 * Removes cgroup directory `dir`. A killed process leaves its cgroup a moment after it is signalled (later
 * still on a loaded machine), so EBUSY is retried until `deadline`; a cgroup already gone, or still holding
 * processes past the deadline (a recovered container), is left as it is.
 */
export async function rmdirOnceEmpty(dir: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      fs.rmdirSync(dir);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EBUSY' || Date.now() >= deadline) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
