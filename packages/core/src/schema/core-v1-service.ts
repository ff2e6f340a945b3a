// Schema of core.v1: Service, Endpoints. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    Service: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'ServiceSpec'),
      status: f(3, 'ServiceStatus'),
    }),
    ServiceSpec: type('', {
      ports: f(1, '[]ServicePort', '', { patchStrategy: 'merge', patchMergeKey: 'port', listType: 'map', listMapKeys: ['port', 'protocol'] }),
      selector: f(2, 'map[string]string'),
      clusterIP: f(3, 'string'),
      clusterIPs: f(18, '[]string', '', { listType: 'atomic' }),
      type: f(4, 'string'),
      externalIPs: f(5, '[]string', '', { listType: 'atomic' }),
      sessionAffinity: f(7, 'string'),
      loadBalancerIP: f(8, 'string'),
      loadBalancerSourceRanges: f(9, '[]string'),
      externalName: f(10, 'string'),
      externalTrafficPolicy: f(11, 'string'),
      healthCheckNodePort: f(12, 'int32'),
      publishNotReadyAddresses: f(13, 'bool'),
      sessionAffinityConfig: f(14, 'SessionAffinityConfig'),
      ipFamilies: f(19, '[]string', '', { listType: 'atomic' }),
      ipFamilyPolicy: f(17, 'string'),
      allocateLoadBalancerNodePorts: f(20, 'bool', '', { pointer: true }),
      loadBalancerClass: f(21, 'string'),
      internalTrafficPolicy: f(22, 'string'),
      trafficDistribution: f(23, 'string'),
    }),
    ServicePort: type('', {
      name: f(1, 'string'),
      protocol: f(2, 'string'),
      appProtocol: f(6, 'string'),
      port: f(3, 'int32', '', { required: true }),
      targetPort: f(4, 'intOrString'),
      nodePort: f(5, 'int32'),
    }),
    SessionAffinityConfig: type('', {
      clientIP: f(1, 'ClientIPConfig'),
    }),
    ClientIPConfig: type('', {
      timeoutSeconds: f(1, 'int32', '', { pointer: true }),
    }),
    ServiceStatus: type('', {
      loadBalancer: f(1, 'LoadBalancerStatus'),
      conditions: f(2, `[]${META}Condition`, '', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
    }),
    LoadBalancerStatus: type('', {
      ingress: f(1, '[]LoadBalancerIngress'),
    }),
    LoadBalancerIngress: type('', {
      ip: f(1, 'string'),
      hostname: f(2, 'string'),
      ipMode: f(3, 'string'),
      ports: f(4, '[]PortStatus'),
    }),
    PortStatus: type('', {
      port: f(1, 'int32', '', { required: true }),
      protocol: f(2, 'string', '', { required: true }),
      error: f(3, 'string'),
    }),
    Endpoints: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      subsets: f(2, '[]EndpointSubset'),
    }),
    EndpointSubset: type('', {
      addresses: f(1, '[]EndpointAddress'),
      notReadyAddresses: f(2, '[]EndpointAddress'),
      ports: f(3, '[]EndpointPort'),
    }),
    EndpointAddress: type('', {
      ip: f(1, 'string', '', { required: true }),
      hostname: f(3, 'string'),
      nodeName: f(4, 'string'),
      targetRef: f(2, 'ObjectReference'),
    }),
    EndpointPort: type('', {
      name: f(1, 'string'),
      port: f(2, 'int32', '', { required: true }),
      protocol: f(3, 'string'),
      appProtocol: f(4, 'string'),
    }),
  },
  [
    { kind: 'Service', apiVersion: 'v1', type: 'Service' },
    { kind: 'Endpoints', apiVersion: 'v1', type: 'Endpoints' },
  ],
);
