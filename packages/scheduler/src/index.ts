// @kemu/scheduler public surface.
export { SchedulerCache, type Snapshot } from './cache.js';
export { MemoryClient, type RecordedEvent } from './client-memory.js';
export { ensureSchedulingKinds } from './kinds.js';
export { connectStore, SCHEDULER_COMPONENT, StoreClient, WATCHED_KINDS } from './client-store.js';
export { ClusterState } from './cluster-state.js';
export {
  CONFIG_API_VERSION,
  ConfigError,
  DEFAULT_SCHEDULER_NAME,
  numFeasibleNodesToFind,
  parseConfig,
  type PluginRef,
  type PluginSet,
  type Plugins,
  type Profile,
  type SchedulerConfig,
} from './config.js';
export {
  type BindPlugin,
  type ClusterEvent,
  CycleState,
  EXTENSION_POINTS,
  type ExtensionPoint,
  type FilterPlugin,
  Framework,
  type Handle,
  MAX_NODE_SCORE,
  type Nominator,
  type PermitPlugin,
  type Plugin,
  type PluginFactory,
  type PostBindPlugin,
  type PostFilterPlugin,
  type PostFilterResult,
  type PreBindPlugin,
  type PreEnqueuePlugin,
  type PreFilterPlugin,
  type PreScorePlugin,
  type QueuedPodInfo,
  type QueueSortPlugin,
  type ReservePlugin,
  type SchedulerClient,
  type ScoreBreakdown,
  type ScorePlugin,
  WaitingPod,
} from './framework.js';
export { type NodeCheckpoint, NodeInfo } from './node-info.js';
export { NodeStatusMap, tallyStatuses } from './node-statuses.js';
export { newPodInfo, type PodInfo, podKey } from './pod-info.js';
export { DEFAULT_MULTI_POINT, inTreeRegistry, PluginNames } from './plugins/index.js';
export { SchedulingQueue } from './queue.js';
export { registerPlugin, unregisterPlugin } from './registry.js';
export { parseQuantity, podRequests } from './resources.js';
export {
  type FilterRecord,
  EXPLAIN_ANNOTATION,
  NO_NODES_AVAILABLE,
  type ScheduleResult,
  Scheduler,
  type SchedulerOptions,
} from './scheduler.js';
export {
  type Placement,
  SimulationInputError,
  seededRandom,
  type SimulateOptions,
  type SimulationResult,
  simulate,
} from './simulate.js';
export { Code, type MaybeStatus, Status } from './status.js';
export type { CSIStorageCapacity, PodDisruptionBudget } from './types.js';
// Node eligibility predicates, shared with the DaemonSet controller (which places pods as the scheduler would).
export { mapMatches, nodeSelectorMatches } from './labels.js';
export { tolerates, untoleratedTaint } from './plugins/taint-toleration.js';
