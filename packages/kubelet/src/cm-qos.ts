// Resource arithmetic of the kubelet's container manager (pkg/kubelet/cm): pod QoS classes, the QoS cgroup
// hierarchy (kubepods, kubepods/burstable, kubepods/besteffort, pod<uid>) under the cgroupfs and systemd
// drivers' naming, and the upstream formulas that turn requests and limits into cgroup settings, for the
// pod cgroup the kubelet makes and the container resources it sends through CRI.
import { type Container, type Pod, parseQuantity, podQOSClass } from '@kemu/core';
import type { cri } from '@kemu/proto';
import type { CgroupDriver } from './kubelet-config.js';

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

export const MIN_SHARES = 2;
export const MAX_SHARES = 262144;
export const SHARES_PER_CPU = 1024;
/** The default CFS period (100 ms) in microseconds. */
export const QUOTA_PERIOD_US = 100_000;
export const MIN_QUOTA_PERIOD_US = 1000;

/** cpu.shares from a CPU request in millicores (upstream MilliCPUToShares). */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU === 0) return MIN_SHARES;
  const shares = Math.floor((milliCPU * SHARES_PER_CPU) / 1000);
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, shares));
}

/** CFS quota from a CPU limit in millicores and a period in microseconds (upstream MilliCPUToQuota). */
export function milliCPUToQuota(milliCPU: number, periodUs: number): number {
  if (milliCPU === 0) return 0;
  return Math.max(MIN_QUOTA_PERIOD_US, Math.floor((milliCPU * periodUs) / 1000));
}

/** cgroup v2 cpu.weight from v1 cpu.shares (the conversion runc and the kubelet use). */
export function sharesToWeight(shares: number): number {
  if (shares === 0) return 0;
  return Math.floor(1 + ((shares - 2) * 9999) / 262142);
}

/** A cgroup's settings, as upstream's ResourceConfig: undefined means "leave as is". */
export interface ResourceConfig {
  cpuShares?: number;
  /** CFS quota in microseconds; -1 for unlimited. */
  cpuQuota?: number;
  cpuPeriod?: number;
  /** Bytes. */
  memoryLimit?: number;
  pidsLimit?: number;
}

function milli(q: string | undefined): number {
  return q === undefined ? 0 : parseQuantity(q).milliValue();
}

function bytes(q: string | undefined): number {
  return q === undefined ? 0 : parseQuantity(q).value();
}

/**
 * A pod's effective requests or limits (upstream PodRequests/PodLimits): the larger of the regular
 * containers' sum (with sidecars) and each init container's own value plus the sidecars started before it.
 */
export function podResourceTotal(pod: Pod, kind: 'requests' | 'limits', resource: string, unit: (q: string | undefined) => number): number {
  const get = (c: Container) => {
    const r = c.resources?.[kind]?.[resource];
    // An unset request defaults to the limit, as API defaulting does.
    return unit(r ?? (kind === 'requests' ? c.resources?.limits?.[resource] : undefined));
  };
  let sidecars = 0;
  let initMax = 0;
  for (const c of pod.spec.initContainers ?? []) {
    if (c.restartPolicy === 'Always') {
      sidecars += get(c);
      initMax = Math.max(initMax, sidecars);
    } else initMax = Math.max(initMax, sidecars + get(c));
  }
  let sum = sidecars;
  for (const c of pod.spec.containers) sum += get(c);
  const overhead = (pod.spec as { overhead?: Record<string, string> }).overhead?.[resource];
  return Math.max(sum, initMax) + unit(overhead);
}

export interface PodCgroupOptions {
  /** CFS period in microseconds (cpuCFSQuotaPeriod). */
  cpuPeriodUs?: number;
  /** cpuCFSQuota: false leaves CPU limits unenforced (quota -1). */
  enforceCPULimits?: boolean;
  /** podPidsLimit; -1 or undefined for none. */
  podPidsLimit?: number;
}

/** The pod cgroup's settings (upstream ResourceConfigForPod plus the pod PIDs limit). */
export function podResourceConfig(pod: Pod, o: PodCgroupOptions = {}): ResourceConfig {
  const period = o.cpuPeriodUs ?? QUOTA_PERIOD_US;
  const all = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  const cpuLimitsDeclared = all.every((c) => c.resources?.limits?.cpu !== undefined);
  const memoryLimitsDeclared = all.every((c) => c.resources?.limits?.memory !== undefined);
  const cpuShares = milliCPUToShares(podResourceTotal(pod, 'requests', 'cpu', milli));
  let cpuQuota = milliCPUToQuota(podResourceTotal(pod, 'limits', 'cpu', milli), period);
  if (o.enforceCPULimits === false) cpuQuota = -1;
  const memoryLimit = podResourceTotal(pod, 'limits', 'memory', bytes);
  const out: ResourceConfig = {};
  const qos = podQOSClass(pod.spec);
  if (qos === 'Guaranteed') Object.assign(out, { cpuShares, cpuQuota, cpuPeriod: period, memoryLimit });
  else if (qos === 'Burstable') {
    out.cpuShares = cpuShares;
    if (cpuLimitsDeclared) Object.assign(out, { cpuQuota, cpuPeriod: period });
    if (memoryLimitsDeclared) out.memoryLimit = memoryLimit;
  } else out.cpuShares = MIN_SHARES;
  if (o.podPidsLimit !== undefined && o.podPidsLimit > 0) out.pidsLimit = o.podPidsLimit;
  return out;
}

/** oom_score_adj of a container (upstream GetContainerOOMScoreAdjust), given the node's memory capacity. */
export function containerOOMScoreAdjust(pod: Pod, container: Container, memoryCapacity: number): number {
  const qos = podQOSClass(pod.spec);
  if (qos === 'Guaranteed') return -997;
  if (qos === 'BestEffort') return 1000;
  const request = bytes(container.resources?.requests?.memory ?? container.resources?.limits?.memory);
  const adj = 1000 - Math.floor((1000 * request) / memoryCapacity);
  // A Burstable container never scores as low as Guaranteed (2) nor as high as BestEffort (999).
  return Math.min(999, Math.max(2, adj));
}

export interface ContainerResourceOptions extends PodCgroupOptions {
  /** Node memory capacity in bytes, for oom_score_adj (omitted when unknown). */
  memoryCapacity?: number;
}

/** A container's CRI LinuxContainerResources, as kuberuntime's generateLinuxContainerResources. */
export function containerLinuxResources(pod: Pod, container: Container, o: ContainerResourceOptions = {}): cri.LinuxContainerResources {
  const period = o.cpuPeriodUs ?? QUOTA_PERIOD_US;
  const req = container.resources?.requests ?? {};
  const lim = container.resources?.limits ?? {};
  const res: cri.LinuxContainerResources = { cpuShares: milliCPUToShares(milli(req.cpu ?? lim.cpu)), cpuPeriod: period };
  if (lim.cpu !== undefined) res.cpuQuota = o.enforceCPULimits === false ? -1 : milliCPUToQuota(milli(lim.cpu), period);
  if (lim.memory !== undefined) res.memoryLimitInBytes = bytes(lim.memory);
  if (o.memoryCapacity) res.oomScoreAdj = containerOOMScoreAdjust(pod, container, o.memoryCapacity);
  return res;
}

/** A cgroup's name as path components below the cgroup root (upstream CgroupName). */
export type CgroupName = string[];

export const KUBEPODS: CgroupName = ['kubepods'];

export function qosCgroupName(qos: QOSClass): CgroupName {
  return qos === 'Guaranteed' ? KUBEPODS : [...KUBEPODS, qos.toLowerCase()];
}

export function podCgroupName(pod: Pod): CgroupName {
  return [...qosCgroupName(podQOSClass(pod.spec)), `pod${pod.metadata.uid ?? ''}`];
}

function systemdEscape(part: string): string {
  // systemd uses "-" to mean nesting: dashes inside a component become underscores.
  return part.replace(/-/g, '_');
}

/**
 * The cgroup's path relative to each controller's mount: `/kubepods/burstable/pod<uid>` under cgroupfs,
 * `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice` under systemd.
 */
export function cgroupPath(name: CgroupName, driver: CgroupDriver, cgroupRoot = '/'): string {
  const root = cgroupRoot === '/' || !cgroupRoot ? '' : cgroupRoot.replace(/\/+$/, '');
  if (driver === 'cgroupfs') return `${root}/${name.join('/')}`;
  const parts: string[] = [];
  for (let i = 1; i <= name.length; i++) parts.push(`${name.slice(0, i).map(systemdEscape).join('-')}.slice`);
  return `${root}/${parts.join('/')}`;
}

/** The cgroup_parent the kubelet puts in a pod sandbox's CRI config: the path, or the leaf slice under systemd. */
export function cgroupParentForCRI(name: CgroupName, driver: CgroupDriver, cgroupRoot = '/'): string {
  if (driver === 'cgroupfs') return cgroupPath(name, driver, cgroupRoot);
  return `${name.map(systemdEscape).join('-')}.slice`;
}

/** One cgroup file and its value: `controller` is the v1 hierarchy (ignored under v2). */
export interface CgroupFile {
  controller: 'cpu' | 'memory' | 'pids';
  file: string;
  value: string;
}

/** The files a ResourceConfig writes, under cgroup v1 or v2 naming. */
export function cgroupFiles(r: ResourceConfig, version: 'v1' | 'v2'): CgroupFile[] {
  const out: CgroupFile[] = [];
  if (version === 'v1') {
    if (r.cpuShares !== undefined) out.push({ controller: 'cpu', file: 'cpu.shares', value: String(r.cpuShares) });
    if (r.cpuPeriod !== undefined) out.push({ controller: 'cpu', file: 'cpu.cfs_period_us', value: String(r.cpuPeriod) });
    if (r.cpuQuota !== undefined) out.push({ controller: 'cpu', file: 'cpu.cfs_quota_us', value: String(r.cpuQuota) });
    if (r.memoryLimit !== undefined) out.push({ controller: 'memory', file: 'memory.limit_in_bytes', value: String(r.memoryLimit) });
    if (r.pidsLimit !== undefined) out.push({ controller: 'pids', file: 'pids.max', value: r.pidsLimit > 0 ? String(r.pidsLimit) : 'max' });
    return out;
  }
  if (r.cpuShares !== undefined) out.push({ controller: 'cpu', file: 'cpu.weight', value: String(sharesToWeight(r.cpuShares)) });
  if (r.cpuQuota !== undefined || r.cpuPeriod !== undefined) {
    const period = r.cpuPeriod ?? QUOTA_PERIOD_US;
    out.push({ controller: 'cpu', file: 'cpu.max', value: `${r.cpuQuota !== undefined && r.cpuQuota > 0 ? r.cpuQuota : 'max'} ${period}` });
  }
  if (r.memoryLimit !== undefined) out.push({ controller: 'memory', file: 'memory.max', value: r.memoryLimit > 0 ? String(r.memoryLimit) : 'max' });
  if (r.pidsLimit !== undefined) out.push({ controller: 'pids', file: 'pids.max', value: r.pidsLimit > 0 ? String(r.pidsLimit) : 'max' });
  return out;
}
