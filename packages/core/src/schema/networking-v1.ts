// Schema of networking.v1: NetworkPolicy, Ingress, IngressClass. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.networking.v1',
  {
    NetworkPolicy: type('Which traffic may reach and leave a set of pods.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'NetworkPolicySpec'),
    }),
    NetworkPolicySpec: type('The pods selected and the traffic allowed.', {
      podSelector: f(1, `${META}LabelSelector`, 'The pods the policy applies to; empty selects all pods of the namespace.', { required: true }),
      ingress: f(2, '[]NetworkPolicyIngressRule', 'Allowed incoming traffic.', { listType: 'atomic' }),
      egress: f(3, '[]NetworkPolicyEgressRule', 'Allowed outgoing traffic.', { listType: 'atomic' }),
      policyTypes: f(4, '[]string', 'Ingress and/or Egress.', { listType: 'atomic' }),
    }),
    NetworkPolicyIngressRule: type('', {
      ports: f(1, '[]NetworkPolicyPort'),
      from: f(2, '[]NetworkPolicyPeer'),
    }),
    NetworkPolicyPort: type('', {
      protocol: f(1, 'string'),
      port: f(2, 'intOrString'),
      endPort: f(3, 'int32', '', { pointer: true }),
    }),
    NetworkPolicyPeer: type('', {
      podSelector: f(1, `${META}LabelSelector`),
      namespaceSelector: f(2, `${META}LabelSelector`),
      ipBlock: f(3, 'IPBlock'),
    }),
    IPBlock: type('', {
      cidr: f(1, 'string'),
      except: f(2, '[]string'),
    }),
    NetworkPolicyEgressRule: type('', {
      ports: f(1, '[]NetworkPolicyPort'),
      to: f(2, '[]NetworkPolicyPeer'),
    }),
    Ingress: type('HTTP routing from outside the cluster to services.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'IngressSpec'),
      status: f(3, 'IngressStatus'),
    }),
    IngressSpec: type('Rules, TLS and default backend.', {
      ingressClassName: f(4, 'string', 'The IngressClass that implements the ingress.'),
      defaultBackend: f(1, 'IngressBackend', 'Where requests matching no rule go.'),
      tls: f(2, '[]IngressTLS', 'TLS settings.', { listType: 'atomic' }),
      rules: f(3, '[]IngressRule', 'Host and path rules.', { listType: 'atomic' }),
    }),
    IngressBackend: type('', {
      service: f(4, 'IngressServiceBackend'),
      resource: f(3, `io.k8s.api.core.v1.TypedLocalObjectReference`),
    }),
    IngressServiceBackend: type('', {
      name: f(1, 'string', '', { required: true }),
      port: f(2, 'ServiceBackendPort'),
    }),
    ServiceBackendPort: type('', {
      name: f(1, 'string'),
      number: f(2, 'int32'),
    }),
    IngressTLS: type('', {
      hosts: f(1, '[]string'),
      secretName: f(2, 'string'),
    }),
    IngressRule: type('', {
      host: f(1, 'string'),
      ingressRuleValue: f(2, 'IngressRuleValue', '', { required: true, inline: true }),
    }),
    IngressRuleValue: type('', {
      http: f(1, 'HTTPIngressRuleValue'),
    }),
    HTTPIngressRuleValue: type('', {
      paths: f(1, '[]HTTPIngressPath', '', { required: true, listType: 'atomic' }),
    }),
    HTTPIngressPath: type('', {
      path: f(1, 'string'),
      pathType: f(3, 'string', '', { required: true }),
      backend: f(2, 'IngressBackend', '', { required: true }),
    }),
    IngressStatus: type('', {
      loadBalancer: f(1, 'IngressLoadBalancerStatus'),
    }),
    IngressLoadBalancerStatus: type('', {
      ingress: f(1, '[]IngressLoadBalancerIngress'),
    }),
    IngressLoadBalancerIngress: type('', {
      ip: f(1, 'string'),
      hostname: f(2, 'string'),
      ports: f(4, '[]IngressPortStatus'),
    }),
    IngressPortStatus: type('', {
      port: f(1, 'int32', '', { required: true }),
      protocol: f(2, 'string'),
      error: f(3, 'string'),
    }),
    IngressClass: type('A kind of ingress and the controller that implements it.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'IngressClassSpec'),
    }),
    IngressClassSpec: type('', {
      controller: f(1, 'string', 'Name of the controller.'),
      parameters: f(2, 'IngressClassParametersReference', 'Object holding the controller\'s parameters.'),
    }),
    IngressClassParametersReference: type('', {
      aPIGroup: f(1, 'string'),
      kind: f(2, 'string', '', { required: true }),
      name: f(3, 'string', '', { required: true }),
      scope: f(4, 'string'),
      namespace: f(5, 'string'),
    }),
  },
  [
    { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', type: 'NetworkPolicy' },
    { kind: 'Ingress', apiVersion: 'networking.k8s.io/v1', type: 'Ingress' },
    { kind: 'IngressClass', apiVersion: 'networking.k8s.io/v1', type: 'IngressClass' },
  ],
);
