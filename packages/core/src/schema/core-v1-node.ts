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
      phase: f(3, 'string'),
      conditions: f(4, '[]NodeCondition', 'Ready, MemoryPressure, DiskPressure, PIDPressure, ...', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
      addresses: f(5, '[]NodeAddress', 'Addresses the node is reachable at.', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
      daemonEndpoints: f(6, 'NodeDaemonEndpoints'),
      nodeInfo: f(7, 'NodeSystemInfo', 'Versions and identifiers of the node\'s software.'),
      images: f(8, '[]ContainerImage', '', { listType: 'atomic' }),
      volumesInUse: f(9, '[]string', '', { listType: 'atomic' }),
      volumesAttached: f(10, '[]AttachedVolume', '', { listType: 'atomic' }),
      config: f(11, 'NodeConfigStatus'),
      runtimeHandlers: f(12, '[]NodeRuntimeHandler'),
      features: f(13, 'NodeFeatures'),
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
    AttachedVolume: type('', {
      name: f(1, 'string', '', { required: true }),
      devicePath: f(2, 'string', '', { required: true }),
    }),
    ContainerImage: type('', {
      names: f(1, '[]string', '', { required: true }),
      sizeBytes: f(2, 'int64'),
    }),
    NodeSystemInfo: type('', {
      machineID: f(1, 'string', '', { required: true }),
      systemUUID: f(2, 'string', '', { required: true }),
      bootID: f(3, 'string', '', { required: true }),
      kernelVersion: f(4, 'string', '', { required: true }),
      osImage: f(5, 'string', '', { required: true }),
      containerRuntimeVersion: f(6, 'string', '', { required: true }),
      kubeletVersion: f(7, 'string', '', { required: true }),
      kubeProxyVersion: f(8, 'string', '', { required: true }),
      operatingSystem: f(9, 'string', '', { required: true }),
      architecture: f(10, 'string', '', { required: true }),
    }),
    NodeDaemonEndpoints: type('', {
      kubeletEndpoint: f(1, 'DaemonEndpoint'),
    }),
    DaemonEndpoint: type('', {
      Port: f(1, 'int32', '', { required: true }),
    }),
    NodeAddress: type('', {
      type: f(1, 'string', '', { required: true }),
      address: f(2, 'string', '', { required: true }),
    }),
    NodeCondition: type('', {
      type: f(1, 'string', '', { required: true }),
      status: f(2, 'string', '', { required: true }),
      lastHeartbeatTime: f(3, 'time'),
      lastTransitionTime: f(4, 'time'),
      reason: f(5, 'string'),
      message: f(6, 'string'),
    }),
    NodeSpec: type('Desired configuration of a node.', {
      podCIDR: f(1, 'string', 'Pod address range assigned to the node.'),
      podCIDRs: f(7, '[]string', 'Pod address ranges assigned to the node, one per family.', { patchStrategy: 'merge', listType: 'set' }),
      providerID: f(3, 'string'),
      unschedulable: f(4, 'bool', 'Keep new pods off the node (cordon).'),
      taints: f(5, '[]Taint', 'Taints that repel pods not tolerating them.', { listType: 'atomic' }),
      configSource: f(6, 'NodeConfigSource'),
      externalID: f(2, 'string'),
    }),
    Taint: type('Marks a node so that pods without a matching toleration are kept off or evicted.', {
      key: f(1, 'string', '', { required: true }),
      value: f(2, 'string'),
      effect: f(3, 'string', '', { required: true }),
      timeAdded: f(4, 'time'),
    }),
  },
  [
    { kind: 'Node', apiVersion: 'v1', type: 'Node' },
  ],
);
