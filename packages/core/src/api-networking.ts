// networking.k8s.io/v1: NetworkPolicy, Ingress, IngressClass, with the field names of the Kubernetes JSON API.
import type { Protocol } from './api-service.js';
import type { Condition, KubeObject, LabelSelector, ObjectMeta } from './api-meta.js';

export interface IPBlock {
  cidr: string;
  except?: string[];
}

export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: IPBlock;
}

export interface NetworkPolicyPort {
  protocol?: Protocol;
  /** A number or a named container port. */
  port?: number | string;
  /** With a numeric `port`: the range port..endPort. */
  endPort?: number;
}

export interface NetworkPolicyIngressRule {
  ports?: NetworkPolicyPort[];
  from?: NetworkPolicyPeer[];
}

export interface NetworkPolicyEgressRule {
  ports?: NetworkPolicyPort[];
  to?: NetworkPolicyPeer[];
}

export type PolicyType = 'Ingress' | 'Egress';

export interface NetworkPolicy extends KubeObject {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: ObjectMeta;
  spec: {
    podSelector: LabelSelector;
    ingress?: NetworkPolicyIngressRule[];
    egress?: NetworkPolicyEgressRule[];
    policyTypes?: PolicyType[];
  };
}

export interface IngressServiceBackend {
  name: string;
  port?: { name?: string; number?: number };
}

export interface IngressBackend {
  service?: IngressServiceBackend;
  resource?: { apiGroup?: string; kind: string; name: string };
}

export interface HTTPIngressPath {
  path?: string;
  pathType: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  backend: IngressBackend;
}

export interface IngressRule {
  host?: string;
  http?: { paths: HTTPIngressPath[] };
}

export interface Ingress extends KubeObject {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'Ingress';
  metadata: ObjectMeta;
  spec?: {
    ingressClassName?: string;
    defaultBackend?: IngressBackend;
    tls?: { hosts?: string[]; secretName?: string }[];
    rules?: IngressRule[];
  };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] }; conditions?: Condition[] };
}

export interface IngressClass extends KubeObject {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'IngressClass';
  metadata: ObjectMeta;
  spec?: {
    controller?: string;
    parameters?: { apiGroup?: string; kind: string; name: string; scope?: 'Cluster' | 'Namespace'; namespace?: string };
  };
}
