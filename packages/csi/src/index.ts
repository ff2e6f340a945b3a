// @kemu/csi: a CSI v1 driver (Identity, Controller, Node, GroupController) with hostpath and sim
// backends and kubelet plugin registration, usable over a unix socket or in process.
export {
  Driver,
  DEFAULT_DRIVER_NAME,
  DEFAULT_TOPOLOGY_KEY,
  DRIVER_VERSION,
  MUTABLE_PARAMETERS,
} from './driver.js';
export type { DriverOptions, CreateVolumeArgs, CapacityRange, PageArgs } from './driver.js';
export type { Backend, BackendVolume, PublishSpec, VolumeUsage } from './backend.js';
export { HostPathBackend, type HostPathBackendOptions } from './backend-hostpath.js';
export {
  SimBackend,
  SIM_OPERATIONS,
  type SimBackendOptions,
  type SimFailure,
  type SimOperation,
} from './backend-sim.js';
export { FileStateStore, MemoryStateStore, type StateStore } from './state-store.js';
export { CsiError, Code, codeName, parseCode } from './errors.js';
export { parseSize, formatSize } from './quantity.js';
export { checkIdentifier, checkNodePath, MAX_NAME_BYTES } from './validate.js';
export { stderrLogger, wrapService, type CallLog, type CallLogger } from './logging.js';
export { createIdentityServer, type IdentityServer } from './identity-server.js';
export { createControllerServer, type ControllerServer } from './controller-server.js';
export {
  ALPHA_CAPABILITIES,
  ALPHA_CAPABILITY_NAMES,
  controllerCapabilities,
  isAlphaCapability,
  nodeCapabilities,
  type AlphaCapability,
} from './capabilities.js';
export { createNodeServer, type NodeServer } from './node-server.js';
export { createGroupControllerServer, type GroupControllerServer } from './group-controller-server.js';
export {
  createRegistrationServer,
  registrationSocketPath,
  serveRegistration,
  type RegistrationOptions,
  type RegistrationServer,
} from './registration-server.js';
export {
  addCsiServices,
  createCsiDriver,
  serveCsiDriver,
  type CsiDriver,
  type CsiDriverOptions,
  type RunningCsiDriver,
  type ServeOptions,
} from './server.js';
export type { UnaryService } from './service-types.js';
export * from './types.js';
