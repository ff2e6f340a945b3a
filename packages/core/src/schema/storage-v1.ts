// Schema of storage.k8s.io/v1: StorageClass, VolumeAttachment, CSIDriver, CSINode.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.storage.v1',
  {
    CSINode: type('The CSI drivers registered on a node.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'CSINodeSpec', '', { required: true }),
    }),
    CSINodeSpec: type('Drivers present on the node.', {
      drivers: f(1, '[]CSINodeDriver', 'One entry per driver registered by the kubelet.', { required: true, patchStrategy: 'merge', patchMergeKey: 'name', listType: 'map', listMapKeys: ['name'] }),
    }),
    CSINodeDriver: type('One CSI driver on a node and its node ID.', {
      name: f(1, 'string', 'Driver name, as in the CSIDriver object.', { required: true }),
      nodeID: f(2, 'string', 'The node\'s ID as the driver knows it.', { required: true }),
      topologyKeys: f(3, '[]string', 'Topology label keys the driver supports.', { required: true, listType: 'atomic' }),
      allocatable: f(4, 'VolumeNodeResources', 'Volumes the driver can attach on the node.'),
    }),
    VolumeNodeResources: type('Limits of a driver on a node.', {
      count: f(1, 'int32', 'Most volumes the driver can attach on the node.', { pointer: true }),
    }),
    CSIDriver: type('Describes how the cluster talks to a CSI driver installed in it.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'CSIDriverSpec', '', { required: true }),
    }),
    CSIDriverSpec: type('Capabilities and calling conventions of the driver.', {
      attachRequired: f(1, 'bool', 'Whether volumes need a ControllerPublish (attach) step.', { pointer: true }),
      podInfoOnMount: f(2, 'bool', 'Whether pod details are passed at mount time.', { pointer: true }),
      volumeLifecycleModes: f(3, '[]string', 'Persistent and/or Ephemeral.', { listType: 'set' }),
      storageCapacity: f(4, 'bool', 'Whether the scheduler considers reported capacity.', { pointer: true }),
      fsGroupPolicy: f(5, 'string', 'Whether volume ownership follows fsGroup: None, File or ReadWriteOnceWithFSType.', { pointer: true }),
      tokenRequests: f(6, '[]TokenRequest', 'Service account tokens passed at mount time.', { listType: 'atomic' }),
      requiresRepublish: f(7, 'bool', 'Whether NodePublishVolume is called again periodically.', { pointer: true }),
      seLinuxMount: f(8, 'bool', 'Whether the driver supports the SELinux mount option.', { pointer: true }),
    }),
    TokenRequest: type('A token the kubelet passes to the driver.', {
      audience: f(1, 'string', 'Audience of the token.', { required: true }),
      expirationSeconds: f(2, 'int64', 'Lifetime of the token.', { pointer: true }),
    }),
    VolumeAttachment: type('Records the intent to attach a volume to a node.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'VolumeAttachmentSpec', '', { required: true }),
      status: f(3, 'VolumeAttachmentStatus'),
    }),
    VolumeAttachmentStatus: type('Outcome of attaching or detaching.', {
      attached: f(1, 'bool', 'Whether the volume is attached.', { required: true }),
      attachmentMetadata: f(2, 'map[string]string', 'Data the attacher returned, passed on to mount.'),
      attachError: f(3, 'VolumeError', 'Last attach error.'),
      detachError: f(4, 'VolumeError', 'Last detach error.'),
    }),
    VolumeError: type('An error from attaching or detaching.', {
      time: f(1, 'time', 'When it happened.'),
      message: f(2, 'string', 'What went wrong.'),
    }),
    VolumeAttachmentSpec: type('Which volume to attach to which node by which attacher.', {
      attacher: f(1, 'string', 'Name of the driver that attaches the volume.', { required: true }),
      source: f(2, 'VolumeAttachmentSource', 'The volume to attach.', { required: true }),
      nodeName: f(3, 'string', 'The node to attach to.', { required: true }),
    }),
    VolumeAttachmentSource: type('The volume to attach: a persistent volume, or an inline spec.', {
      persistentVolumeName: f(1, 'string', 'Name of the persistent volume.', { pointer: true }),
      inlineVolumeSpec: f(2, `io.k8s.api.core.v1.PersistentVolumeSpec`, 'An inline volume spec (migrated in-tree volumes).'),
    }),
    StorageClass: type('A class of storage and the provisioner that creates it dynamically.', {
      metadata: f(1, `${META}ObjectMeta`),
      provisioner: f(2, 'string', 'Name of the volume provisioner.', { required: true }),
      parameters: f(3, 'map[string]string', 'Provisioner-specific parameters.'),
      reclaimPolicy: f(4, 'string', 'Reclaim policy of volumes it provisions: Delete (default) or Retain.', { pointer: true }),
      mountOptions: f(5, '[]string', 'Mount options of provisioned volumes.', { listType: 'atomic' }),
      allowVolumeExpansion: f(6, 'bool', 'Whether claims of this class may grow.', { pointer: true }),
      volumeBindingMode: f(7, 'string', 'Immediate (default) or WaitForFirstConsumer.', { pointer: true }),
      allowedTopologies: f(8, `[]io.k8s.api.core.v1.TopologySelectorTerm`, 'Where volumes may be provisioned.', { listType: 'atomic' }),
    }),
  },
  [
    { kind: 'StorageClass', apiVersion: 'storage.k8s.io/v1', type: 'StorageClass' },
    { kind: 'VolumeAttachment', apiVersion: 'storage.k8s.io/v1', type: 'VolumeAttachment' },
    { kind: 'CSIDriver', apiVersion: 'storage.k8s.io/v1', type: 'CSIDriver' },
    { kind: 'CSINode', apiVersion: 'storage.k8s.io/v1', type: 'CSINode' },
  ],
);
