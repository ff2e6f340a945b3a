// @kemu/cri: a CRI runtime.v1 shim (RuntimeService + ImageService) with `sim`, `runc` and `process` backends.
export { ProcessBackend, type ProcessBackendOptions } from './backend-process.js';
export { RuncBackend, type RuncBackendOptions } from './backend-runc.js';
export { ContentStore } from './content-store.js';
export { buildSpec, type OciSpec } from './oci-spec.js';
export { SIM_ANNOTATIONS, SimBackend, type SimBackendOptions, type SimCall } from './backend-sim.js';
export { type CgroupMode, detectCgroupMode, sharesToWeight } from './cgroups.js';
export { ImageStore, type ImageStoreOptions, loadImageSource, syntheticImage } from './image-store.js';
export { normalizeRef, parseImageRef } from './image-ref.js';
export { CriLogWriter, formatLogRecord, parseCriLog, type ParsedLogRecord } from './log-writer.js';
export { CniNetwork, type CniNetworkOptions, createCniNetwork } from './network-cni.js';
export { NoNetwork } from './network-none.js';
export { PodCidrIpam, type PodCidrIpamOptions } from './network-pod-cidr.js';
export { SIM_NETWORK_NAME, SimDefaultNetwork, type SimNetworkOptions, simNetnsHooks } from './network-sim.js';
export { CRI_API_VERSION, CriRuntime, type CriRuntimeOptions, RUNTIME_NAME, RUNTIME_VERSION } from './runtime.js';
export {
  type CniOptions,
  createCri,
  type CriInstance,
  type CriRuntimeConfig,
  type CriServer,
  startCriServer,
} from './server.js';
export { createImageService, type ImageServiceHandlers } from './service-image.js';
export { createRuntimeService, type RuntimeServiceHandlers } from './service-runtime.js';
export { FileStateStore, MemoryStateStore, type StateStore } from './state-store.js';
export { REMOTE_COMMAND_PROTOCOLS, StreamingServer, type StreamingServerOptions } from './streaming-server.js';
export type * from './types.js';
