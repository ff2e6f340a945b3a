// Schema of discovery.v1: EndpointSlice. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.discovery.v1',
  {
    EndpointSlice: type('A slice of the endpoints behind a service.', {
      metadata: f(1, `${META}ObjectMeta`),
      addressType: f(4, 'string', 'IPv4, IPv6 or FQDN.', { required: true }),
      endpoints: f(2, '[]Endpoint', 'The endpoints.', { required: true, listType: 'atomic' }),
      ports: f(3, '[]EndpointPort', 'Ports every endpoint serves.', { listType: 'atomic' }),
    }),
    Endpoint: type('One endpoint: addresses, readiness and location.', {
      addresses: f(1, '[]string', 'Addresses of the endpoint.', { required: true, listType: 'set' }),
      conditions: f(2, 'EndpointConditions', 'Ready, serving and terminating.'),
      hostname: f(3, 'string'),
      targetRef: f(4, `io.k8s.api.core.v1.ObjectReference`, 'The pod behind the endpoint.'),
      deprecatedTopology: f(5, 'map[string]string'),
      nodeName: f(6, 'string', 'Node of the endpoint.'),
      zone: f(7, 'string', 'Zone of the endpoint.'),
      hints: f(8, 'EndpointHints'),
    }),
    EndpointConditions: type('Readiness of an endpoint.', {
      ready: f(1, 'bool', 'Ready to receive traffic.', { pointer: true }),
      serving: f(2, 'bool', 'Serving, possibly while terminating.', { pointer: true }),
      terminating: f(3, 'bool', 'Terminating.', { pointer: true }),
    }),
    EndpointHints: type('', {
      forZones: f(1, '[]ForZone'),
    }),
    ForZone: type('', {
      name: f(1, 'string', '', { required: true }),
    }),
    EndpointPort: type('A port of the endpoints.', {
      name: f(1, 'string'),
      protocol: f(2, 'string'),
      port: f(3, 'int32', '', { required: true }),
      appProtocol: f(4, 'string'),
    }),
  },
  [
    { kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', type: 'EndpointSlice' },
  ],
);
