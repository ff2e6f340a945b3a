// @kemu/kubelet: a kubelet emulator that drives CRI and CSI the way the real kubelet does.
export { Backoff, DEFAULT_BACKOFF } from './backoff.js';
export { containerConfig, containerHash, linuxResources, podLogDirectory, sandboxConfig } from './cri-config.js';
export { type HostDNSConfig, type PodDNSContext, type PodDNSResult, parseResolvConf, podDNSConfig } from './dns-config.js';
export { Kubelet } from './kubelet.js';
export * from './labels.js';
export { CONDITION_TAINTS, NodeLifecycleController, type NodeLifecycleOptions, UNREACHABLE_TAINT } from './node-lifecycle-controller.js';
export {
  allocatable,
  CONTROLLER_MANAGED_ATTACH_DETACH,
  DEFAULT_CAPACITY,
  KUBELET_VERSION,
  NODE_LEASE_NAMESPACE,
  nodeConditions,
} from './node-status.js';
export { PluginWatcher, StaticPluginRegistry, SUPPORTED_CSI_VERSIONS } from './plugin-registry.js';
export { computePodStatus, containerStatus, podPhase } from './pod-status.js';
export { ProbeManager, realProbeTransport } from './prober.js';
export { RuntimeCache } from './runtime-cache.js';
export type * from './types.js';
export { attachmentName, VolumeManager, VolumeWaitError } from './volume-manager.js';
export type { TokenSource } from './volume-sources.js';
export { CsiNodeSync } from './csinode.js';
export {
  allocatableReservation,
  DEFAULT_EVICTION_HARD,
  decodeKubeletConfiguration,
  defaultKubeletConfiguration,
  EVICTION_SIGNALS,
  type EvictionSignal,
  type EvictionThreshold,
  evictionThresholds,
  KUBELET_CONFIG_API_VERSION,
  KubeletConfigError,
  type KubeletConfiguration,
  loadKubeletConfiguration,
  nodeCapacity,
  parseGoDuration,
} from './kubelet-config.js';
export {
  cgroupFiles,
  cgroupParentForCRI,
  cgroupPath,
  containerLinuxResources,
  containerOOMScoreAdjust,
  milliCPUToQuota,
  milliCPUToShares,
  podCgroupName,
  podResourceConfig,
  type QOSClass,
  type ResourceConfig,
  sharesToWeight,
} from './cm-qos.js';
export { type CgroupManager, type CgroupRecord, type CgroupVersion, detectCgroupVersion, RealCgroupManager, SimCgroupManager } from './cgroup-manager.js';
export { ContainerManager, type PodCgroupInfo } from './container-manager.js';
export { EVICTION_REASON, type Eviction, EvictionManager, MESSAGES as EVICTION_MESSAGES, type PressureCondition, SIGNAL_TO_CONDITION, SIGNAL_TO_RESOURCE } from './eviction-manager.js';
export { diskUsage, type FsStats, type PodStats, type Summary, SummaryProvider } from './stats-summary.js';
export { CHECKPOINT_FILE, DeviceAdmissionError, DeviceManager, type DeviceManagerOptions } from './device-manager.js';
export { KubeletServer, type KubeletServerSource } from './kubelet-server.js';
export { cadvisorMetrics, resourceMetrics } from './metrics-resource.js';
export { METRICS_API_VERSION, type NodeMetrics, nodeMetrics, type PodMetrics, podMetrics } from './metrics-api.js';
export { CPU_MANAGER_STATE_FILE, CpuAdmissionError, CpuManager, formatCpuSet, parseCpuSet } from './cpu-manager.js';
