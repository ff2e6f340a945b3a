// Annotation, finalizer and event-reason names of the Kubernetes storage control loop, spelled as upstream
// spells them so objects written here read the same to kubectl, the scheduler and real sidecars.

/** On a PVC: the binder finished binding it (value "yes"). */
export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
/** On a PV or PVC: the binding was made by the controller, not pre-set by a user (value "yes"). */
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
/** On a PV: the provisioner that created it. */
export const ANN_DYNAMICALLY_PROVISIONED = 'pv.kubernetes.io/provisioned-by';
/** On a PVC: which provisioner is asked to create its volume. */
export const ANN_STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
export const ANN_BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';
/** On a PVC: the node the scheduler picked for a WaitForFirstConsumer claim. */
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
/** Legacy storage class annotation; wins over spec.storageClassName when present. */
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';
/** On a StorageClass: the cluster default. */
export const ANN_DEFAULT_STORAGE_CLASS = 'storageclass.kubernetes.io/is-default-class';
/** On a Node: the kubelet leaves attach/detach to the controller. */
export const ANN_CONTROLLER_MANAGED_ATTACH_DETACH = 'volumes.kubernetes.io/controller-managed-attach-detach';
/** On a PVC: the resizer that handles its expansion. */
export const ANN_STORAGE_RESIZER = 'volume.kubernetes.io/storage-resizer';

export const NOT_SUPPORTED_PROVISIONER = 'kubernetes.io/no-provisioner';

/** Event reasons (pkg/controller/volume/events). */
export const Reasons = {
  FailedBinding: 'FailedBinding',
  VolumeMismatch: 'VolumeMismatch',
  ClaimLost: 'ClaimLost',
  ClaimMisbound: 'ClaimMisbound',
  ProvisioningFailed: 'ProvisioningFailed',
  ExternalProvisioning: 'ExternalProvisioning',
  WaitForFirstConsumer: 'WaitForFirstConsumer',
  VolumeFailedDelete: 'VolumeFailedDelete',
  VolumeFailedRecycle: 'VolumeFailedRecycle',
  FailedAttachVolume: 'FailedAttachVolume',
  SuccessfulAttachVolume: 'SuccessfulAttachVolume',
  SuccessfulDetachVolume: 'SuccessfulDetachVolume',
} as const;
