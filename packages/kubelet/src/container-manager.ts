// The kubelet's container manager for resources (upstream pkg/kubelet/cm): the node-allocatable cgroup
// `kubepods`, the QoS cgroups `burstable` and `besteffort` below it, and one cgroup per pod with the pod's
// ResourceConfig, created before the pod's sandbox and named to the runtime as the sandbox's cgroup_parent.
import type { Pod } from '@kemu/core';
import { parseQuantity, podQOSClass } from '@kemu/core';
import type { CgroupManager, CgroupRecord } from './cgroup-manager.js';
import {
  cgroupParentForCRI,
  cgroupPath,
  type CgroupName,
  KUBEPODS,
  MIN_SHARES,
  milliCPUToShares,
  podCgroupName,
  podResourceConfig,
  podResourceTotal,
  type QOSClass,
  qosCgroupName,
  type ResourceConfig,
} from './cm-qos.js';
import { type KubeletConfiguration, parseGoDuration } from './kubelet-config.js';

/** What the kubelet set up for one pod, for status, describe and /stats/summary. */
export interface PodCgroupInfo {
  qosClass: QOSClass;
  /** The cgroup_parent sent in RunPodSandbox. */
  cgroupParent: string;
  cgroup: CgroupRecord;
}

export class ContainerManager {
  private readonly pods = new Map<string, { pod: Pod; name: CgroupName; info: PodCgroupInfo }>();
  private readonly cpuPeriodUs: number;

  constructor(
    readonly cgroups: CgroupManager,
    private readonly config: KubeletConfiguration,
    /** Node capacity (cpu, memory, pid) used to size kubepods. */
    private readonly capacity: Record<string, string>,
  ) {
    this.cpuPeriodUs = Math.round(parseGoDuration(config.cpuCFSQuotaPeriod, 'cpuCFSQuotaPeriod') * 1000);
  }

  path(name: CgroupName): string {
    return cgroupPath(name, this.config.cgroupDriver, this.config.cgroupRoot);
  }

  /** The kubepods cgroup's settings: capacity minus kube and system reserved when allocatable is enforced. */
  nodeAllocatableConfig(): ResourceConfig {
    const enforce = this.config.enforceNodeAllocatable.includes('pods');
    const left = (resource: string, unit: 'milli' | 'value') => {
      const cap = this.capacity[resource];
      if (cap === undefined) return undefined;
      let q = parseQuantity(cap);
      if (enforce) for (const m of [this.config.kubeReserved, this.config.systemReserved]) if (m[resource]) q = q.sub(m[resource]);
      const n = unit === 'milli' ? q.milliValue() : q.value();
      return Math.max(0, n);
    };
    const cpu = left('cpu', 'milli');
    const out: ResourceConfig = {};
    if (cpu !== undefined) out.cpuShares = milliCPUToShares(cpu);
    const memory = left('memory', 'value');
    if (memory !== undefined && enforce) out.memoryLimit = memory;
    const pids = left('pid', 'value');
    if (pids !== undefined && enforce) out.pidsLimit = pids;
    return out;
  }

  /** Creates kubepods and the QoS cgroups (upstream setupNode + QOSContainerManager.Start). */
  start(): void {
    if (!this.config.cgroupsPerQOS) return;
    this.cgroups.ensure(this.path(KUBEPODS), this.nodeAllocatableConfig());
    this.updateQOSCgroups();
  }

  /** burstable gets the shares of its pods' CPU requests, besteffort the minimum (upstream setCPUCgroupConfig). */
  private updateQOSCgroups() {
    if (!this.config.cgroupsPerQOS) return;
    let burstableMilli = 0;
    for (const { pod } of this.pods.values()) {
      if (podQOSClass(pod.spec) === 'Burstable') burstableMilli += podResourceTotal(pod, 'requests', 'cpu', (q) => (q === undefined ? 0 : parseQuantity(q).milliValue()));
    }
    this.cgroups.ensure(this.path(qosCgroupName('Burstable')), { cpuShares: milliCPUToShares(burstableMilli) });
    this.cgroups.ensure(this.path(qosCgroupName('BestEffort')), { cpuShares: MIN_SHARES });
  }

  /**
   * Creates or updates the pod's cgroup; returns what the sandbox's cgroup_parent should be. A pod whose
   * spec is the one its cgroup was made for (same generation) is left alone, as upstream's EnsureExists
   * does: each resync of a running pod comes here.
   */
  ensurePod(pod: Pod): PodCgroupInfo {
    const uid = pod.metadata.uid ?? '';
    const had = this.pods.get(uid);
    const generation = pod.metadata.generation;
    if (had && generation !== undefined && had.pod.metadata.generation === generation) return had.info;
    const name = this.config.cgroupsPerQOS ? podCgroupName(pod) : [`pod${uid}`];
    const config = podResourceConfig(pod, {
      cpuPeriodUs: this.cpuPeriodUs,
      enforceCPULimits: this.config.cpuCFSQuota,
      podPidsLimit: this.config.podPidsLimit,
    });
    const cgroup = this.cgroups.ensure(this.path(name), config);
    const info: PodCgroupInfo = {
      qosClass: podQOSClass(pod.spec),
      cgroupParent: cgroupParentForCRI(name, this.config.cgroupDriver, this.config.cgroupRoot),
      cgroup,
    };
    this.pods.set(uid, { pod, name, info });
    if (!had) this.updateQOSCgroups();
    return info;
  }

  /** Removes a terminated pod's cgroup (upstream pod cgroup cleanup). */
  removePod(uid: string): void {
    const p = this.pods.get(uid);
    if (!p) return;
    this.cgroups.destroy(this.path(p.name));
    this.pods.delete(uid);
    this.updateQOSCgroups();
  }

  pod(uid: string): PodCgroupInfo | undefined {
    return this.pods.get(uid)?.info;
  }

  podUids(): string[] {
    return [...this.pods.keys()];
  }

  /** The node-level cgroups, for /stats/summary's system containers. */
  nodeCgroups(): Record<string, CgroupRecord | undefined> {
    return {
      kubepods: this.cgroups.get(this.path(KUBEPODS)),
      burstable: this.cgroups.get(this.path(qosCgroupName('Burstable'))),
      besteffort: this.cgroups.get(this.path(qosCgroupName('BestEffort'))),
    };
  }

  /** Removes the whole hierarchy (tests, and `kemu down` of a node that made real cgroups). */
  destroyAll(): void {
    for (const uid of [...this.pods.keys()]) this.removePod(uid);
    this.cgroups.destroy(this.path(KUBEPODS));
  }
}
