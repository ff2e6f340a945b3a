// The kubelet's Summary API (stats/v1alpha1, served at /stats/summary) built the way the CRI stats provider
// builds it: CPU, memory and process counts from the runtime's ListPodSandboxStats (the sim runtime's
// usage model or the process runtime's cgroups), writable layers from ListContainerStats, the image
// filesystem from ImageFsInfo, and logs and emptyDir volumes measured on disk. The node is the emulated
// machine of the kubelet's capacity: its usage is what its pods use.
import fs from 'node:fs';
import path from 'node:path';
import { type Pod, parseQuantity, rfc3339 } from '@kemu/core';
import type { cri } from '@kemu/proto';
import type { ContainerManager } from './container-manager.js';
import { podLogDirectory } from './cri-config.js';
import type { ImageApi, RuntimeApi } from './types.js';

export interface CPUStats {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
}
export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}
export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}
export interface ContainerStats {
  name: string;
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  rootfs?: FsStats;
  logs?: FsStats;
}
export interface VolumeStats extends FsStats {
  name: string;
}
export interface PodStats {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers: ContainerStats[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  volume?: VolumeStats[];
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count?: number };
}
export interface NodeStats {
  nodeName: string;
  systemContainers?: ContainerStats[];
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  fs?: FsStats;
  runtime?: { imageFs?: FsStats; containerFs?: FsStats };
  rlimit?: { time: string; maxpid?: number; curproc?: number };
}
/** The Summary object of /stats/summary. */
export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

/** Bytes (in allocated blocks) and inodes under a directory, walking at most `maxEntries` entries. */
export function diskUsage(dir: string, maxEntries = 100_000): { bytes: number; inodes: number } {
  let bytes = 0;
  let inodes = 0;
  const walk = (d: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (inodes >= maxEntries) return;
      const full = path.join(d, e.name);
      try {
        const st = fs.lstatSync(full);
        bytes += st.blocks * 512;
        inodes++;
        if (e.isDirectory()) walk(full);
      } catch {
        // removed while walking
      }
    }
  };
  walk(dir);
  return { bytes, inodes };
}

export interface SummaryDeps {
  nodeName: string;
  runtime: RuntimeApi;
  images: ImageApi;
  /** The node's capacity (cpu, memory, ephemeral-storage). */
  capacity: Record<string, string>;
  /** The pods bound to this node the kubelet knows. */
  pods: () => Pod[];
  podLogsDir: string;
  /** Kubelet root with pods/<uid>/volumes (emptyDir usage is measured when given). */
  rootDir?: string;
  containerManager?: ContainerManager;
  /** The node's PID limit (rlimit.maxpid). */
  maxPid?: number;
  startTime?: string;
}

const num = (v: { value?: number } | null | undefined) => (v?.value === undefined || v.value === null ? undefined : Number(v.value));

export class SummaryProvider {
  private readonly prevCpu = new Map<string, { ts: number; ns: number }>();
  private readonly startTime: string;

  constructor(private readonly d: SummaryDeps) {
    this.startTime = d.startTime ?? rfc3339();
  }

  /**
   * usageNanoCores from two samples of cumulative CPU time, as cAdvisor derives it; on the first sample,
   * the average since `startNs` (the container's or pod's start).
   */
  private nanoCores(key: string, ns: number | undefined, nowNs: number, startNs?: number): number | undefined {
    if (ns === undefined) return undefined;
    const prev = this.prevCpu.get(key) ?? (startNs !== undefined && startNs < nowNs ? { ts: startNs, ns: 0 } : undefined);
    this.prevCpu.set(key, { ts: nowNs, ns });
    if (!prev || nowNs <= prev.ts || ns < prev.ns) return 0;
    return Math.round(((ns - prev.ns) / (nowNs - prev.ts)) * 1e9);
  }

  async summary(): Promise<Summary> {
    const time = rfc3339();
    const nowNs = Date.now() * 1e6;
    const [sandboxes, containers, imageFs] = await Promise.all([
      this.d.runtime.ListPodSandboxStats({ filter: {} }),
      this.d.runtime.ListContainerStats({ filter: {} }),
      this.d.images.ImageFsInfo({}),
    ]);
    const writable = new Map<string, cri.ContainerStats>();
    for (const c of containers.stats ?? []) if (c.attributes?.id) writable.set(c.attributes.id, c);
    const byUid = new Map<string, Pod>();
    for (const p of this.d.pods()) byUid.set(p.metadata.uid ?? '', p);

    // Only the pods the kubelet knows; of a pod's sandboxes (an old one may linger stopped), the one running most containers.
    const best = new Map<string, cri.PodSandboxStats>();
    for (const sb of sandboxes.stats ?? []) {
      const uid = sb.attributes?.metadata?.uid ?? '';
      if (!byUid.has(uid)) continue;
      const cur = best.get(uid);
      if (!cur || (sb.linux?.containers?.length ?? 0) > (cur.linux?.containers?.length ?? 0)) best.set(uid, sb);
    }
    const pods: PodStats[] = [...best].map(([uid, sb]) => this.podStats(byUid.get(uid)!, sb, writable, time, nowNs));
    const sum = (f: (p: PodStats) => number | undefined) => pods.reduce((a, p) => a + (f(p) ?? 0), 0);

    const memCap = parseQuantity(this.d.capacity.memory ?? '0').value();
    const ws = sum((p) => p.memory?.workingSetBytes);
    const fsCap = parseQuantity(this.d.capacity['ephemeral-storage'] ?? '0').value();
    const imgUsed = Number(imageFs.imageFilesystems?.[0]?.usedBytes?.value ?? 0);
    const imgInodes = Number(imageFs.imageFilesystems?.[0]?.inodesUsed?.value ?? 0);
    // One filesystem holds pods' ephemeral data and images (the common layout): nodefs and imagefs agree.
    const fsUsed = sum((p) => p['ephemeral-storage']?.usedBytes) + imgUsed;
    const inodes = Math.floor(fsCap / 16384);
    const inodesUsed = sum((p) => p['ephemeral-storage']?.inodesUsed) + imgInodes;
    const nodeFs: FsStats = {
      time,
      capacityBytes: fsCap,
      usedBytes: fsUsed,
      availableBytes: Math.max(0, fsCap - fsUsed),
      inodes,
      inodesUsed,
      inodesFree: Math.max(0, inodes - inodesUsed),
    };
    const cpuNs = sum((p) => p.cpu?.usageCoreNanoSeconds);
    const node: NodeStats = {
      nodeName: this.d.nodeName,
      startTime: this.startTime,
      cpu: { time, usageCoreNanoSeconds: cpuNs, usageNanoCores: sum((p) => p.cpu?.usageNanoCores) },
      memory: {
        time,
        availableBytes: Math.max(0, memCap - ws),
        usageBytes: sum((p) => p.memory?.usageBytes),
        workingSetBytes: ws,
        rssBytes: sum((p) => p.memory?.rssBytes),
        pageFaults: 0,
        majorPageFaults: 0,
      },
      fs: nodeFs,
      runtime: { imageFs: { ...nodeFs } },
      rlimit: { time, maxpid: this.d.maxPid ?? 4_194_304, curproc: sum((p) => p.process_stats?.process_count) },
      systemContainers: [{ name: 'pods', startTime: this.startTime, cpu: { time, usageCoreNanoSeconds: cpuNs }, memory: { time, workingSetBytes: ws, availableBytes: Math.max(0, memCap - ws) } }],
    };
    return { node, pods };
  }

  private podStats(pod: Pod, sb: cri.PodSandboxStats, writable: Map<string, cri.ContainerStats>, time: string, nowNs: number): PodStats {
    const uid = pod.metadata.uid ?? '';
    const logDir = podLogDirectory(this.d.podLogsDir, pod);
    const containers: ContainerStats[] = [];
    const statuses = new Map<string, string>();
    for (const cs of pod.status?.containerStatuses ?? []) if (cs.state?.running?.startedAt) statuses.set(cs.name, cs.state.running.startedAt);
    let ephemeral = 0;
    let ephemeralInodes = 0;
    for (const c of sb.linux?.containers ?? []) {
      const name = c.attributes?.metadata?.name ?? '';
      const id = c.attributes?.id ?? '';
      const rootUsed = num(writable.get(id)?.writableLayer?.usedBytes) ?? 0;
      const rootInodes = num(writable.get(id)?.writableLayer?.inodesUsed) ?? 0;
      const logs = diskUsage(path.join(logDir, name));
      ephemeral += rootUsed + logs.bytes;
      ephemeralInodes += rootInodes + logs.inodes;
      const coreNs = num(c.cpu?.usageCoreNanoSeconds);
      const started = statuses.get(name);
      containers.push({
        name,
        startTime: started ?? pod.status?.startTime ?? this.startTime,
        // The runtime's own sample time, so that the rate is over the interval the runtime measured.
        cpu: { time, usageCoreNanoSeconds: coreNs, usageNanoCores: this.nanoCores(`c/${id}`, coreNs, Number(c.cpu?.timestamp) || nowNs, started ? Date.parse(started) * 1e6 : undefined) },
        memory: {
          time,
          workingSetBytes: num(c.memory?.workingSetBytes),
          usageBytes: num(c.memory?.usageBytes),
          rssBytes: num(c.memory?.rssBytes),
          pageFaults: num(c.memory?.pageFaults),
          majorPageFaults: num(c.memory?.majorPageFaults),
        },
        rootfs: { time, usedBytes: rootUsed, inodesUsed: rootInodes },
        logs: { time, usedBytes: logs.bytes, inodesUsed: logs.inodes },
      });
    }
    const volume: VolumeStats[] = [];
    if (this.d.rootDir) {
      for (const v of pod.spec.volumes ?? []) {
        if (!v.emptyDir) continue;
        const du = diskUsage(path.join(this.d.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', v.name));
        // emptyDir on tmpfs (medium Memory) is charged to memory, not to ephemeral storage.
        if (v.emptyDir.medium !== 'Memory') {
          ephemeral += du.bytes;
          ephemeralInodes += du.inodes;
        }
        volume.push({ time, name: v.name, usedBytes: du.bytes, inodesUsed: du.inodes });
      }
    }
    const podCoreNs = num(sb.linux?.cpu?.usageCoreNanoSeconds) ?? containers.reduce((a, c) => a + (c.cpu?.usageCoreNanoSeconds ?? 0), 0);
    const mem = (f: (m: MemoryStats) => number | undefined) => containers.reduce((a, c) => a + (f(c.memory!) ?? 0), 0);
    return {
      podRef: { name: pod.metadata.name ?? '', namespace: pod.metadata.namespace ?? 'default', uid },
      startTime: pod.status?.startTime ?? this.startTime,
      containers,
      cpu: { time, usageCoreNanoSeconds: podCoreNs, usageNanoCores: containers.reduce((a, c) => a + (c.cpu?.usageNanoCores ?? 0), 0) },
      memory: {
        time,
        workingSetBytes: num(sb.linux?.memory?.workingSetBytes) ?? mem((m) => m.workingSetBytes),
        usageBytes: num(sb.linux?.memory?.usageBytes) ?? mem((m) => m.usageBytes),
        rssBytes: num(sb.linux?.memory?.rssBytes) ?? mem((m) => m.rssBytes),
      },
      volume,
      'ephemeral-storage': { time, usedBytes: ephemeral, inodesUsed: ephemeralInodes },
      process_stats: { process_count: num(sb.linux?.process?.processCount) ?? containers.length },
    };
  }
}
