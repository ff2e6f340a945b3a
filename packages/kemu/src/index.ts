// kemu: the composed cluster, its API server and client, and the kubectl-style printers.
export { ApiClient, ClusterUnreachableError, resourcePath } from './api-client.js';
export { type ApiExtensions, type ApiServer, type ExecResult, startApiServer } from '@kemu/apiserver';
export { type BenchResult, benchPods } from './bench.js';
export { checkSupported, storageKind, Cluster, type ClusterNode, type ClusterOptions, openStore, type StoreKind, subnet } from './cluster.js';
export { CsiRouter, type NodeDriver } from './csi-router.js';
export { demoManifestPath, leftovers, runDemo } from './demo.js';
export { describeObject } from './describe.js';
export { humanDuration, KIND_ALIASES, podStatusReason, printTable, resolveKind, table } from './printers.js';
export {
  type ClusterNetwork,
  type ClusterNetworkOptions,
  createClusterNetwork,
  type NodeNetwork,
  type ProbeResult,
} from './cluster-network.js';
export { LinuxClusterNetwork, linuxUnsupportedReason } from './linux-network.js';
export { SimClusterNetwork, UNDERLAY_NS } from './sim-network.js';
export { defaultStateDir, paths } from './state.js';
export { clusterV8Flags, runWithV8Flags } from './v8-flags.js';
export { collectMetrics, top, type TopOptions } from './top.js';
export { deploymentStatus, RolloutError, rolloutHistory, rolloutPause, rolloutRestart, rolloutStatus, rolloutUndo, scale } from './rollout.js';
