// Where a pod's cgroups go, from the CRI cgroup_parent the kubelet sends in RunPodSandbox, named as containerd
// names them. A cgroupfs parent is a path (`/kubepods/burstable/pod<uid>`); a systemd parent is a slice name
// (`kubepods-burstable-pod<uid_>.slice`) that systemd nests by its dashes, and each container is a
// `<prefix>-<id>.scope` in it. runc is driven with its cgroupfs manager in both cases (systemd need not run),
// at the path systemd itself would use, so the kubelet's pod cgroup holds the pod's processes and its limits apply.
import fs from 'node:fs';
import path from 'node:path';
import { CGROUP_REMOVE_GRACE_MS, type CgroupMode, rmdirOnceEmpty } from './cgroups.js';
import { invalidArgument } from './errors.js';

/** The scope-name prefix of our containers under a systemd parent (containerd's is `cri-containerd`). */
export const SCOPE_PREFIX = 'kemu-cri';

export interface PodCgroup {
  /** The pod's cgroup path, relative to each hierarchy's root. */
  dir: string;
  driver: 'cgroupfs' | 'systemd';
  /** True when the runtime made `dir` itself (no cgroup_parent given), so it removes it too. */
  own: boolean;
}

/** A systemd slice name as the path systemd gives it: `a-b-c.slice` → `/a.slice/a-b.slice/a-b-c.slice`. */
export function expandSlice(slice: string): string {
  if (!slice.endsWith('.slice') || slice.includes('/')) throw invalidArgument(`cgroup_parent ${JSON.stringify(slice)} is not a systemd slice name`);
  if (slice === '-.slice') return '/';
  const name = slice.slice(0, -'.slice'.length);
  const parts = name.split('-');
  if (parts.some((p) => p === '' || !/^[A-Za-z0-9_.:]+$/.test(p))) throw invalidArgument(`cgroup_parent ${JSON.stringify(slice)} is not a valid systemd slice name`);
  const levels: string[] = [];
  for (let i = 1; i <= parts.length; i++) levels.push(`${parts.slice(0, i).join('-')}.slice`);
  return `/${levels.join('/')}`;
}

/** Resolves a sandbox's cgroup_parent; an empty one puts the pod under the runtime's own `/kemu-cri/<sandbox>`. */
export function podCgroupOf(cgroupParent: string | undefined, sandboxId: string): PodCgroup {
  if (!cgroupParent) return { dir: `/${SCOPE_PREFIX}/${sandboxId}`, driver: 'cgroupfs', own: true };
  if (cgroupParent.endsWith('.slice') && !cgroupParent.includes('/')) return { dir: expandSlice(cgroupParent), driver: 'systemd', own: false };
  if (!/^\/[A-Za-z0-9_.:@/-]*$/.test(cgroupParent) || cgroupParent.split('/').some((p) => p === '.' || p === '..')) {
    throw invalidArgument(`cgroup_parent ${JSON.stringify(cgroupParent)} must be an absolute cgroup path without "." or ".." (cgroupfs) or a systemd slice name`);
  }
  const dir = cgroupParent.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
  return { dir, driver: 'cgroupfs', own: false };
}

/** The cgroup of one container (or of the sandbox's holder) inside the pod's cgroup. */
export function leafCgroupPath(pod: PodCgroup, id: string): string {
  const leaf = pod.driver === 'systemd' ? `${SCOPE_PREFIX}-${id}.scope` : id;
  return path.posix.join(pod.dir, leaf);
}

/** The hierarchies a process is placed in: v2's unified root, or v1's per-controller mounts that need no setup. */
export function hierarchyRoots(mode: CgroupMode): string[] {
  if (mode === 'v2') return ['/sys/fs/cgroup'];
  if (mode !== 'v1') return [];
  // cpuset and devices are left out: a new cpuset cgroup has no cpus until configured, and devices only narrows.
  return ['cpu', 'cpuacct', 'memory', 'pids', 'blkio', 'freezer', 'systemd']
    .map((h) => path.join('/sys/fs/cgroup', h))
    .filter((d) => fs.existsSync(path.join(d, 'cgroup.procs')));
}

/** Creates `rel` in each hierarchy and moves `pid` into it (what runc does for a container, for a holder process). */
export function joinCgroup(mode: CgroupMode, rel: string, pid: number): string[] {
  const joined: string[] = [];
  for (const root of hierarchyRoots(mode)) {
    const dir = path.join(root, rel);
    try {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
      joined.push(dir);
    } catch {
      // a hierarchy that refuses (no controller delegated, a v2 parent with processes): the others still hold it
    }
  }
  return joined;
}

/**
 * Removes each of `rels` (in order: a holder's cgroup before the pod cgroup it sits in) from each hierarchy
 * once empty, waiting out the moment a just-killed holder still occupies it; one still busy after the grace
 * (a container that outlived its removal) is left for the next removal.
 */
export async function removeCgroup(mode: CgroupMode, rels: string[]): Promise<void> {
  const roots = mode === 'v1' ? fs.readdirSync('/sys/fs/cgroup').map((h) => path.join('/sys/fs/cgroup', h)) : hierarchyRoots(mode);
  const deadline = Date.now() + CGROUP_REMOVE_GRACE_MS;
  for (const root of roots) for (const rel of rels) await rmdirOnceEmpty(path.join(root, rel), deadline);
}
