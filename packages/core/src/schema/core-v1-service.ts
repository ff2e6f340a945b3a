// Schema of core.v1: Service, Endpoints. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    Service: type('A stable virtual IP and DNS name in front of a set of pods.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'ServiceSpec', 'How the service is exposed and which pods it routes to.'),
      status: f(3, 'ServiceStatus', 'Load balancer state.'),
    }),
    ServiceSpec: type('Ports, selector and type of a service.', {
      ports: f(1, '[]ServicePort', 'Ports the service exposes.', { patchStrategy: 'merge', patchMergeKey: 'port', listType: 'map', listMapKeys: ['port', 'protocol'] }),
      selector: f(2, 'map[string]string', 'Labels of the pods traffic goes to; empty for manually managed endpoints.'),
      clusterIP: f(3, 'string', 'The virtual IP; None makes a headless service.'),
      clusterIPs: f(18, '[]string', 'Virtual IPs, one per family.', { listType: 'atomic' }),
      type: f(4, 'string', 'ClusterIP (default), NodePort, LoadBalancer or ExternalName.'),
      externalIPs: f(5, '[]string', 'Extra addresses routed to the service.', { listType: 'atomic' }),
      sessionAffinity: f(7, 'string', 'None (default) or ClientIP.'),
      loadBalancerIP: f(8, 'string'),
      loadBalancerSourceRanges: f(9, '[]string'),
      externalName: f(10, 'string', 'DNS name an ExternalName service aliases.'),
      externalTrafficPolicy: f(11, 'string', 'Cluster (default) or Local.'),
      healthCheckNodePort: f(12, 'int32'),
      publishNotReadyAddresses: f(13, 'bool'),
      sessionAffinityConfig: f(14, 'SessionAffinityConfig'),
      ipFamilies: f(19, '[]string', 'IP families of the service.', { listType: 'atomic' }),
      ipFamilyPolicy: f(17, 'string', 'SingleStack, PreferDualStack or RequireDualStack.'),
      allocateLoadBalancerNodePorts: f(20, 'bool', '', { pointer: true }),
      loadBalancerClass: f(21, 'string'),
      internalTrafficPolicy: f(22, 'string', 'Cluster (default) or Local.'),
      trafficDistribution: f(23, 'string'),
    }),
    ServicePort: type('One port of a service.', {
      name: f(1, 'string', 'Port name; required when there are several ports.'),
      protocol: f(2, 'string', 'TCP (default), UDP or SCTP.'),
      appProtocol: f(6, 'string', 'Application protocol of the port.'),
      port: f(3, 'int32', 'Port of the service.', { required: true }),
      targetPort: f(4, 'intOrString', 'Port number or name on the pods (default: port).'),
      nodePort: f(5, 'int32', 'Port on every node for NodePort and LoadBalancer services.'),
    }),
    SessionAffinityConfig: type('', {
      clientIP: f(1, 'ClientIPConfig'),
    }),
    ClientIPConfig: type('', {
      timeoutSeconds: f(1, 'int32', '', { pointer: true }),
    }),
    ServiceStatus: type('Observed state of a service.', {
      loadBalancer: f(1, 'LoadBalancerStatus', 'Addresses of the load balancer.'),
      conditions: f(2, `[]${META}Condition`, '', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
    }),
    LoadBalancerStatus: type('Addresses of a load balancer.', {
      ingress: f(1, '[]LoadBalancerIngress', 'Ingress points.'),
    }),
    LoadBalancerIngress: type('One load balancer ingress point.', {
      ip: f(1, 'string', 'IP address.'),
      hostname: f(2, 'string', 'Host name.'),
      ipMode: f(3, 'string'),
      ports: f(4, '[]PortStatus'),
    }),
    PortStatus: type('', {
      port: f(1, 'int32', '', { required: true }),
      protocol: f(2, 'string', '', { required: true }),
      error: f(3, 'string'),
    }),
    Endpoints: type('The addresses behind a service.', {
      metadata: f(1, `${META}ObjectMeta`),
      subsets: f(2, '[]EndpointSubset', 'Groups of addresses sharing ports.'),
    }),
    EndpointSubset: type('Addresses and the ports they serve.', {
      addresses: f(1, '[]EndpointAddress', 'Ready addresses.'),
      notReadyAddresses: f(2, '[]EndpointAddress', 'Addresses not ready yet.'),
      ports: f(3, '[]EndpointPort', 'Ports of the addresses.'),
    }),
    EndpointAddress: type('One endpoint address.', {
      ip: f(1, 'string', 'The IP.', { required: true }),
      hostname: f(3, 'string'),
      nodeName: f(4, 'string', 'Node of the endpoint.'),
      targetRef: f(2, 'ObjectReference', 'The pod behind the address.'),
    }),
    EndpointPort: type('A port of the endpoints.', {
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
