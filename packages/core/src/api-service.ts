// Service and Endpoints (core/v1) and EndpointSlice (discovery.k8s.io/v1), with the field names of the
// Kubernetes JSON API.
import type { ObjectReference } from './api-core.js';
import type { Condition, KubeObject, ObjectMeta } from './api-meta.js';

export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type ServiceType = 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
export type IPFamily = 'IPv4' | 'IPv6';
export type IPFamilyPolicy = 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';

export interface ServicePort {
  name?: string;
  protocol?: Protocol;
  appProtocol?: string;
  port: number;
  /** A number or the name of a container port (IANA_SVC_NAME); defaults to `port`. */
  targetPort?: number | string;
  nodePort?: number;
}

export interface ServiceSpec {
  type?: ServiceType;
  ports?: ServicePort[];
  selector?: Record<string, string>;
  /** `None` makes the service headless; empty asks for an allocation. */
  clusterIP?: string;
  clusterIPs?: string[];
  ipFamilies?: IPFamily[];
  ipFamilyPolicy?: IPFamilyPolicy;
  externalName?: string;
  externalIPs?: string[];
  sessionAffinity?: 'None' | 'ClientIP';
  sessionAffinityConfig?: { clientIP?: { timeoutSeconds?: number } };
  externalTrafficPolicy?: 'Cluster' | 'Local';
  internalTrafficPolicy?: 'Cluster' | 'Local';
  healthCheckNodePort?: number;
  publishNotReadyAddresses?: boolean;
  loadBalancerIP?: string;
  loadBalancerSourceRanges?: string[];
  loadBalancerClass?: string;
  allocateLoadBalancerNodePorts?: boolean;
  trafficDistribution?: string;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  ipMode?: 'VIP' | 'Proxy';
  ports?: { port: number; protocol: Protocol; error?: string }[];
}

export interface Service extends KubeObject {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ObjectMeta;
  spec: ServiceSpec;
  status?: { loadBalancer?: { ingress?: LoadBalancerIngress[] }; conditions?: Condition[] };
}

export interface EndpointAddress {
  ip: string;
  hostname?: string;
  nodeName?: string;
  targetRef?: ObjectReference;
}

export interface EndpointPort {
  name?: string;
  port: number;
  protocol?: Protocol;
  appProtocol?: string;
}

export interface EndpointSubset {
  addresses?: EndpointAddress[];
  notReadyAddresses?: EndpointAddress[];
  ports?: EndpointPort[];
}

export interface Endpoints extends KubeObject {
  apiVersion: 'v1';
  kind: 'Endpoints';
  metadata: ObjectMeta;
  subsets?: EndpointSubset[];
}

export type AddressType = 'IPv4' | 'IPv6' | 'FQDN';

export interface EndpointConditions {
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}

export interface Endpoint {
  addresses: string[];
  conditions?: EndpointConditions;
  hostname?: string;
  targetRef?: ObjectReference;
  nodeName?: string;
  zone?: string;
  hints?: { forZones?: { name: string }[]; forNodes?: { name: string }[] };
  deprecatedTopology?: Record<string, string>;
}

export interface EndpointSlice extends KubeObject {
  apiVersion: 'discovery.k8s.io/v1';
  kind: 'EndpointSlice';
  metadata: ObjectMeta;
  addressType: AddressType;
  endpoints: Endpoint[];
  ports?: EndpointPort[] | null;
}

/** Label naming the Service an EndpointSlice belongs to. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Label naming the controller that manages an EndpointSlice. */
export const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
