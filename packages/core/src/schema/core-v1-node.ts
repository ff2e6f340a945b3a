// Schema of core/v1 Node: its spec and status.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    Node: type('A machine that runs pods, registered by its kubelet.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'NodeSpec', 'How the node should be used.'),
      status: f(3, 'NodeStatus', 'What the node reports about itself.'),
    }),
    NodeStatus: type('Observed state of a node.', {
      capacity: f(1, 'map[string]quantity', 'Total resources of the node.'),
      allocatable: f(2, 'map[string]quantity', 'Resources available to pods.'),
      phase: f(3, 'string', 'Deprecated and unused.'),
      conditions: f(4, '[]NodeCondition', 'Ready, MemoryPressure, DiskPressure, PIDPressure, ...', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
      addresses: f(5, '[]NodeAddress', 'Addresses the node is reachable at.', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
      daemonEndpoints: f(6, 'NodeDaemonEndpoints', 'Ports of the daemons on the node (the kubelet\'s).'),
      nodeInfo: f(7, 'NodeSystemInfo', 'Versions and identifiers of the node\'s software.'),
      images: f(8, '[]ContainerImage', 'Images present on the node.', { listType: 'atomic' }),
      volumesInUse: f(9, '[]string', 'Volumes mounted on the node.', { listType: 'atomic' }),
      volumesAttached: f(10, '[]AttachedVolume', 'Volumes attached to the node.', { listType: 'atomic' }),
      config: f(11, 'NodeConfigStatus', 'Status of dynamic kubelet configuration (unused).'),
      runtimeHandlers: f(12, '[]NodeRuntimeHandler', 'Runtime handlers the node offers.'),
      features: f(13, 'NodeFeatures', 'Features the node supports.'),
    }),
    NodeFeatures: type('', {
      supplementalGroupsPolicy: f(1, 'bool'),
    }),
    NodeRuntimeHandler: type('', {
      name: f(1, 'string'),
      features: f(2, 'NodeRuntimeHandlerFeatures'),
    }),
    NodeRuntimeHandlerFeatures: type('', {
      recursiveReadOnlyMounts: f(1, 'bool'),
      userNamespaces: f(2, 'bool'),
    }),
    NodeConfigStatus: type('', {
      assigned: f(1, 'NodeConfigSource'),
      active: f(2, 'NodeConfigSource'),
      lastKnownGood: f(3, 'NodeConfigSource'),
      error: f(4, 'string'),
    }),
    NodeConfigSource: type('', {
      configMap: f(2, 'ConfigMapNodeConfigSource'),
    }),
    ConfigMapNodeConfigSource: type('', {
      namespace: f(1, 'string', '', { required: true }),
      name: f(2, 'string', '', { required: true }),
      uid: f(3, 'string'),
      resourceVersion: f(4, 'string'),
      kubeletConfigKey: f(5, 'string', '', { required: true }),
    }),
    AttachedVolume: type('A volume attached to a node.', {
      name: f(1, 'string', 'Name of the volume.', { required: true }),
      devicePath: f(2, 'string', 'Where the device appears on the node.', { required: true }),
    }),
    ContainerImage: type('An image on a node.', {
      names: f(1, '[]string', 'Names of the image.', { required: true }),
      sizeBytes: f(2, 'int64', 'Size of the image.'),
    }),
    NodeSystemInfo: type('Identifiers and versions reported by the node.', {
      machineID: f(1, 'string', 'Machine ID.', { required: true }),
      systemUUID: f(2, 'string', 'System UUID.', { required: true }),
      bootID: f(3, 'string', 'Boot ID.', { required: true }),
      kernelVersion: f(4, 'string', 'Kernel version (uname -r).', { required: true }),
      osImage: f(5, 'string', 'OS image, e.g. Debian GNU/Linux 12.', { required: true }),
      containerRuntimeVersion: f(6, 'string', 'Container runtime and version, e.g. containerd://1.6.20.', { required: true }),
      kubeletVersion: f(7, 'string', 'Version of the kubelet.', { required: true }),
      kubeProxyVersion: f(8, 'string', 'Deprecated and unreliable.', { required: true }),
      operatingSystem: f(9, 'string', 'linux or windows.', { required: true }),
      architecture: f(10, 'string', 'CPU architecture, e.g. amd64.', { required: true }),
    }),
    NodeDaemonEndpoints: type('Ports of the daemons on a node.', {
      kubeletEndpoint: f(1, 'DaemonEndpoint', 'The kubelet\'s port.'),
    }),
    DaemonEndpoint: type('A daemon\'s port.', {
      Port: f(1, 'int32', 'Port number.', { required: true }),
    }),
    NodeAddress: type('One address of a node.', {
      type: f(1, 'string', 'Hostname, InternalIP, ExternalIP, InternalDNS or ExternalDNS.', { required: true }),
      address: f(2, 'string', 'The address.', { required: true }),
    }),
    NodeCondition: type('One aspect of a node\'s health.', {
      type: f(1, 'string', 'Ready, MemoryPressure, DiskPressure, PIDPressure or NetworkUnavailable.', { required: true }),
      status: f(2, 'string', 'True, False or Unknown.', { required: true }),
      lastHeartbeatTime: f(3, 'time', 'When the kubelet last reported it.'),
      lastTransitionTime: f(4, 'time', 'When the status last changed.'),
      reason: f(5, 'string', 'Machine-readable reason.'),
      message: f(6, 'string', 'Human-readable details.'),
    }),
    NodeSpec: type('Desired configuration of a node.', {
      podCIDR: f(1, 'string', 'Pod address range assigned to the node.'),
      podCIDRs: f(7, '[]string', 'Pod address ranges assigned to the node, one per family.', { patchStrategy: 'merge', listType: 'set' }),
      providerID: f(3, 'string', 'Cloud provider\'s ID of the node.'),
      unschedulable: f(4, 'bool', 'Keep new pods off the node (cordon).'),
      taints: f(5, '[]Taint', 'Taints that repel pods not tolerating them.', { listType: 'atomic' }),
      configSource: f(6, 'NodeConfigSource', 'Deprecated and unused.'),
      externalID: f(2, 'string', 'Deprecated and unused.'),
    }),
    Taint: type('Marks a node so that pods without a matching toleration are kept off or evicted.', {
      key: f(1, 'string', 'Taint key.', { required: true }),
      value: f(2, 'string', 'Taint value.'),
      effect: f(3, 'string', 'NoSchedule, PreferNoSchedule or NoExecute.', { required: true }),
      timeAdded: f(4, 'time', 'When a NoExecute taint was added.'),
    }),
  },
  [
    { kind: 'Node', apiVersion: 'v1', type: 'Node' },
  ],
);
