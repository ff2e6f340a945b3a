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
    NetworkPolicyIngressRule: type('Traffic allowed in: from these peers, to these ports.', {
      ports: f(1, '[]NetworkPolicyPort', 'Allowed ports; empty allows all.'),
      from: f(2, '[]NetworkPolicyPeer', 'Allowed sources; empty allows all.'),
    }),
    NetworkPolicyPort: type('A port or port range.', {
      protocol: f(1, 'string', 'TCP (default), UDP or SCTP.'),
      port: f(2, 'intOrString', 'Port number or name.', { pointer: true }),
      endPort: f(3, 'int32', 'Last port of a range starting at port.', { pointer: true }),
    }),
    NetworkPolicyPeer: type('Pods, namespaces or an IP block.', {
      podSelector: f(1, `${META}LabelSelector`, 'Pods selected (in the policy\'s namespace unless namespaceSelector is set).'),
      namespaceSelector: f(2, `${META}LabelSelector`, 'Namespaces selected.'),
      ipBlock: f(3, 'IPBlock', 'An address range.'),
    }),
    IPBlock: type('An address range with exceptions.', {
      cidr: f(1, 'string', 'The range.'),
      except: f(2, '[]string', 'Ranges excluded.'),
    }),
    NetworkPolicyEgressRule: type('Traffic allowed out: to these peers, on these ports.', {
      ports: f(1, '[]NetworkPolicyPort', 'Allowed ports; empty allows all.'),
      to: f(2, '[]NetworkPolicyPeer', 'Allowed destinations; empty allows all.'),
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
    IngressBackend: type('A service port, or another resource.', {
      service: f(4, 'IngressServiceBackend', 'A service and its port.'),
      resource: f(3, `io.k8s.api.core.v1.TypedLocalObjectReference`, 'Another object handling the traffic.'),
    }),
    IngressServiceBackend: type('A service and port.', {
      name: f(1, 'string', 'Service name.', { required: true }),
      port: f(2, 'ServiceBackendPort', 'Port by number or name.'),
    }),
    ServiceBackendPort: type('A service port by number or name.', {
      name: f(1, 'string', 'Port name.'),
      number: f(2, 'int32', 'Port number.'),
    }),
    IngressTLS: type('TLS for some hosts.', {
      hosts: f(1, '[]string', 'Hosts the certificate covers.'),
      secretName: f(2, 'string', 'Secret holding the certificate and key.'),
    }),
    IngressRule: type('Paths of one host.', {
      host: f(1, 'string', 'Host name to match; empty matches every host.'),
      ingressRuleValue: f(2, 'IngressRuleValue', '', { required: true, inline: true }),
    }),
    IngressRuleValue: type('', {
      http: f(1, 'HTTPIngressRuleValue'),
    }),
    HTTPIngressRuleValue: type('HTTP paths of a rule.', {
      paths: f(1, '[]HTTPIngressPath', 'Paths and their backends.', { required: true, listType: 'atomic' }),
    }),
    HTTPIngressPath: type('One path and where it goes.', {
      path: f(1, 'string', 'Path to match.'),
      pathType: f(3, 'string', 'Exact, Prefix or ImplementationSpecific.', { required: true }),
      backend: f(2, 'IngressBackend', 'Where matching requests go.', { required: true }),
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
