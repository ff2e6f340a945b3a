// Core group (`v1`) kinds: Pod, Node, Namespace, ConfigMap, Event, PersistentVolume(Claim), Binding.
import type { Condition, KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';

/** A quantity in its string form (`100m`, `1.5Gi`); numbers are accepted on input. */
export type QuantityString = string;
export type ResourceList = Record<string, QuantityString>;

export interface ResourceRequirements {
  requests?: ResourceList;
  limits?: ResourceList;
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
}

export interface ObjectFieldSelector {
  apiVersion?: string;
  fieldPath: string;
}

export interface ResourceFieldSelector {
  containerName?: string;
  resource: string;
  divisor?: QuantityString;
}

export interface KeySelector {
  name: string;
  key: string;
  optional?: boolean;
}

export interface EnvVarSource {
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  configMapKeyRef?: KeySelector;
  secretKeyRef?: KeySelector;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

/** One lifecycle hook or probe action; exactly one field is set. */
export interface LifecycleHandler {
  exec?: { command?: string[] };
  httpGet?: { path?: string; port: number | string; host?: string; scheme?: 'HTTP' | 'HTTPS'; httpHeaders?: { name: string; value: string }[] };
  tcpSocket?: { port: number | string; host?: string };
  sleep?: { seconds: number };
}

export interface Lifecycle {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
  stopSignal?: string;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  subPathExpr?: string;
  recursiveReadOnly?: 'Disabled' | 'IfPossible' | 'Enabled';
  mountPropagation?: 'None' | 'HostToContainer' | 'Bidirectional';
}

export interface VolumeDevice {
  name: string;
  devicePath: string;
}

export interface Probe {
  exec?: { command?: string[] };
  httpGet?: { path?: string; port: number | string; host?: string; scheme?: string };
  tcpSocket?: { port: number | string; host?: string };
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
}

export interface SecurityContext {
  privileged?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
}

export interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  resources?: ResourceRequirements;
  lifecycle?: Lifecycle;
  volumeMounts?: VolumeMount[];
  volumeDevices?: VolumeDevice[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** `Always` on an init container makes it a sidecar. */
  restartPolicy?: 'Always';
  securityContext?: SecurityContext;
  stdin?: boolean;
  tty?: boolean;
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
}

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  mode?: number;
}

export interface ConfigMapProjection {
  name: string;
  items?: KeyToPath[];
  optional?: boolean;
}

export interface SecretProjection {
  name: string;
  items?: KeyToPath[];
  optional?: boolean;
}

export interface ServiceAccountTokenProjection {
  audience?: string;
  expirationSeconds?: number;
  path: string;
}

export interface ClusterTrustBundleProjection {
  name?: string;
  signerName?: string;
  labelSelector?: LabelSelector;
  optional?: boolean;
  path: string;
}

export interface VolumeProjection {
  secret?: SecretProjection;
  configMap?: ConfigMapProjection;
  downwardAPI?: { items?: DownwardAPIVolumeFile[] };
  serviceAccountToken?: ServiceAccountTokenProjection;
  clusterTrustBundle?: ClusterTrustBundleProjection;
}

export interface Volume {
  name: string;
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  emptyDir?: { medium?: '' | 'Memory'; sizeLimit?: QuantityString };
  hostPath?: {
    path: string;
    type?:
      | ''
      | 'DirectoryOrCreate'
      | 'Directory'
      | 'FileOrCreate'
      | 'File'
      | 'Socket'
      | 'CharDevice'
      | 'BlockDevice';
  };
  configMap?: { name: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  secret?: { secretName: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  csi?: {
    driver: string;
    readOnly?: boolean;
    fsType?: string;
    volumeAttributes?: Record<string, string>;
  };
  projected?: { sources?: VolumeProjection[]; defaultMode?: number };
  downwardAPI?: { items?: DownwardAPIVolumeFile[]; defaultMode?: number };
  /** Generic ephemeral volume: a PVC named `<pod>-<volume>`, owned by the pod. */
  ephemeral?: { volumeClaimTemplate?: { metadata?: Partial<ObjectMeta>; spec: PersistentVolumeClaimSpec } };
}

export type NodeSelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';

export interface NodeSelectorRequirement {
  key: string;
  operator: NodeSelectorOperator;
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** Terms are ORed; requirements inside one term are ANDed. */
export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}

export interface PreferredSchedulingTerm {
  weight: number;
  preference: NodeSelectorTerm;
}

export interface NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector;
  preferredDuringSchedulingIgnoredDuringExecution?: PreferredSchedulingTerm[];
}

export interface PodAffinityTerm {
  labelSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  namespaces?: string[];
  topologyKey: string;
  matchLabelKeys?: string[];
  mismatchLabelKeys?: string[];
}

export interface WeightedPodAffinityTerm {
  weight: number;
  podAffinityTerm: PodAffinityTerm;
}

export interface PodAffinity {
  requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
  preferredDuringSchedulingIgnoredDuringExecution?: WeightedPodAffinityTerm[];
}

export interface Affinity {
  nodeAffinity?: NodeAffinity;
  podAffinity?: PodAffinity;
  podAntiAffinity?: PodAffinity;
}

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: TaintEffect | '';
  tolerationSeconds?: number;
}

export interface TopologySpreadConstraint {
  maxSkew: number;
  topologyKey: string;
  whenUnsatisfiable: 'DoNotSchedule' | 'ScheduleAnyway';
  labelSelector?: LabelSelector;
  minDomains?: number;
  nodeAffinityPolicy?: 'Honor' | 'Ignore';
  nodeTaintsPolicy?: 'Honor' | 'Ignore';
  matchLabelKeys?: string[];
}

/** A container added to a running pod (`kubectl debug`); no ports, probes or resources. */
export interface EphemeralContainer extends Container {
  targetContainerName?: string;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  ephemeralContainers?: EphemeralContainer[];
  volumes?: Volume[];
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  tolerations?: Toleration[];
  topologySpreadConstraints?: TopologySpreadConstraint[];
  schedulerName?: string;
  schedulingGates?: { name: string }[];
  priority?: number;
  priorityClassName?: string;
  preemptionPolicy?: 'PreemptLowerPriority' | 'Never';
  restartPolicy?: 'Always' | 'OnFailure' | 'Never';
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  dnsPolicy?: 'ClusterFirst' | 'ClusterFirstWithHostNet' | 'Default' | 'None';
  /** DNS settings merged into (or, with dnsPolicy None, making up) the pod's resolv.conf. */
  dnsConfig?: PodDNSConfig;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  /** Secrets (dockerconfigjson/dockercfg) whose credentials the kubelet passes to PullImage. */
  imagePullSecrets?: { name: string }[];
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  hostname?: string;
  subdomain?: string;
  securityContext?: Record<string, unknown>;
  runtimeClassName?: string;
  enableServiceLinks?: boolean;
  shareProcessNamespace?: boolean;
  hostAliases?: { ip: string; hostnames?: string[] }[];
  readinessGates?: { conditionType: string }[];
  overhead?: ResourceList;
}

export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';

export interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: {
    exitCode: number;
    signal?: number;
    reason?: string;
    message?: string;
    startedAt?: string;
    finishedAt?: string;
    containerID?: string;
  };
}

export interface ContainerStatus {
  name: string;
  state?: ContainerState;
  lastState?: ContainerState;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  started?: boolean;
}

export interface PodStatus {
  phase?: PodPhase;
  conditions?: Condition[];
  message?: string;
  reason?: string;
  nominatedNodeName?: string;
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
  qosClass?: 'Guaranteed' | 'Burstable' | 'BestEffort';
}

export interface PodDNSConfigOption {
  name?: string;
  value?: string;
}

export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: PodDNSConfigOption[];
}

export interface Pod extends KubeObject {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded?: string;
}

export interface NodeSpec {
  podCIDR?: string;
  podCIDRs?: string[];
  providerID?: string;
  unschedulable?: boolean;
  taints?: Taint[];
}

export interface NodeAddress {
  type: 'Hostname' | 'InternalIP' | 'ExternalIP' | 'InternalDNS' | 'ExternalDNS';
  address: string;
}

export interface NodeStatus {
  capacity?: ResourceList;
  allocatable?: ResourceList;
  phase?: string;
  conditions?: Condition[];
  addresses?: NodeAddress[];
  daemonEndpoints?: { kubeletEndpoint?: { Port: number } };
  nodeInfo?: {
    machineID?: string;
    systemUUID?: string;
    bootID?: string;
    kernelVersion?: string;
    osImage?: string;
    containerRuntimeVersion?: string;
    kubeletVersion?: string;
    kubeProxyVersion?: string;
    operatingSystem?: string;
    architecture?: string;
  };
  images?: { names?: string[]; sizeBytes?: number }[];
  volumesInUse?: string[];
  volumesAttached?: { name: string; devicePath: string }[];
}

/**
 * On a Node: the URL of its kubelet's HTTP server (/stats/summary, /metrics/*), set when the kubelet
 * registers; the API server's nodes/proxy and the resource-metrics API read it (node IPs are simulated).
 */
export const KUBELET_ENDPOINT_ANNOTATION = 'kemu.io/kubelet-endpoint';

export interface Node extends KubeObject {
  apiVersion: 'v1';
  kind: 'Node';
  metadata: ObjectMeta;
  spec?: NodeSpec;
  status?: NodeStatus;
}

export interface Namespace extends KubeObject {
  apiVersion: 'v1';
  kind: 'Namespace';
  metadata: ObjectMeta;
  spec?: { finalizers?: string[] };
  status?: { phase?: 'Active' | 'Terminating'; conditions?: Condition[] };
}

export interface ConfigMap extends KubeObject {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: ObjectMeta;
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  immutable?: boolean;
}

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

export interface Event extends KubeObject {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: ObjectMeta;
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  source?: { component?: string; host?: string };
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
  count?: number;
  type?: 'Normal' | 'Warning';
  action?: string;
  reportingComponent?: string;
  reportingInstance?: string;
  related?: ObjectReference;
}

export type PersistentVolumeAccessMode = 'ReadWriteOnce' | 'ReadOnlyMany' | 'ReadWriteMany' | 'ReadWriteOncePod';

export interface PersistentVolumeSpec {
  capacity?: ResourceList;
  accessModes?: PersistentVolumeAccessMode[];
  claimRef?: ObjectReference;
  persistentVolumeReclaimPolicy?: 'Retain' | 'Delete' | 'Recycle';
  storageClassName?: string;
  mountOptions?: string[];
  volumeMode?: 'Filesystem' | 'Block';
  nodeAffinity?: { required?: NodeSelector };
  csi?: {
    driver: string;
    volumeHandle: string;
    readOnly?: boolean;
    fsType?: string;
    volumeAttributes?: Record<string, string>;
    nodeStageSecretRef?: { name: string; namespace: string };
    nodePublishSecretRef?: { name: string; namespace: string };
    controllerPublishSecretRef?: { name: string; namespace: string };
  };
  hostPath?: { path: string; type?: string };
  local?: { path: string; fsType?: string };
}

export interface PersistentVolume extends KubeObject {
  apiVersion: 'v1';
  kind: 'PersistentVolume';
  metadata: ObjectMeta;
  spec: PersistentVolumeSpec;
  status?: {
    phase?: 'Pending' | 'Available' | 'Bound' | 'Released' | 'Failed';
    message?: string;
    reason?: string;
    lastPhaseTransitionTime?: string;
  };
}

export interface PersistentVolumeClaimSpec {
  accessModes?: PersistentVolumeAccessMode[];
  selector?: LabelSelector;
  resources?: ResourceRequirements;
  volumeName?: string;
  storageClassName?: string;
  volumeMode?: 'Filesystem' | 'Block';
  dataSource?: { apiGroup?: string; kind: string; name: string };
}

export interface PersistentVolumeClaim extends KubeObject {
  apiVersion: 'v1';
  kind: 'PersistentVolumeClaim';
  metadata: ObjectMeta;
  spec: PersistentVolumeClaimSpec;
  status?: {
    phase?: 'Pending' | 'Bound' | 'Lost';
    accessModes?: PersistentVolumeAccessMode[];
    capacity?: ResourceList;
    conditions?: Condition[];
    allocatedResources?: ResourceList;
  };
}

/** The pods/binding subresource body: assigns a pod to a node. */
export interface Binding extends KubeObject {
  apiVersion: 'v1';
  kind: 'Binding';
  metadata: ObjectMeta;
  target: ObjectReference;
}
