// @kemu/csi-sidecars: the Kubernetes CSI sidecars (external-provisioner with capacity tracking,
// external-attacher, external-resizer, node-driver-registrar) on @kemu/core's store and informers,
// talking CSI to any driver over a unix socket or to service objects in process.
export {
  type CsiConnection,
  type CsiServiceObjects,
  connectCsiSocket,
  DriverInfo,
  describeError,
  grpcCode,
  inProcessCsi,
  isFinalError,
  type SocketConnectionOptions,
  withTimeout,
} from './connection.js';
export {
  ANN_DELETION_SECRET_NAME,
  ANN_DELETION_SECRET_NAMESPACE,
  CLONE_FINALIZER,
  ExternalProvisioner,
  PROVISIONER_FINALIZER,
  PROVISIONER_IDENTITY_KEY,
  type ProvisionerOptions,
  readSecretData,
} from './provisioner.js';
export { ANN_NODE_ID, type AttacherOptions, attacherFinalizer, ExternalAttacher } from './attacher.js';
export { ExternalResizer, FS_RESIZE_PENDING_MESSAGE, type ResizerOptions } from './resizer.js';
export { CapacityPublisher, type CapacityOptions, LABEL_DRIVER_NAME, LABEL_MANAGED_BY } from './capacity.js';
export { NodeDriverRegistrar, type RegistrarOptions, registrationSocket } from './registrar.js';
export {
  type LeaderElectionOptions,
  runWithLeaderElection,
  type RunHandle,
  sanitizeLeaseName,
} from './leader.js';
export { FSTYPE_KEY, ParameterError, parseClassParameters, resolveTemplate, SECRET_KINDS } from './params.js';
export { accessModeToCsi, claimCapabilities, pvCapability } from './capabilities.js';
export {
  type CSIStorageCapacity,
  registerSidecarKinds,
  type Secret,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from './kinds.js';
