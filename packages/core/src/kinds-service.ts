// Registration of Service, Endpoints, EndpointSlice and NetworkPolicy: kind registry entries, their
// TypeScript types in KindMap, defaulting and validation hooks.
import type { NetworkPolicy } from './api-networking.js';
import type { Endpoints, EndpointSlice, Service } from './api-service.js';
import { defaultEndpoints, defaultEndpointSlice, defaultNetworkPolicy, defaultService } from './defaults-service.js';
import { registerKindHooks } from './kind-hooks.js';
import { registerKind } from './kinds.js';
import { serviceAfterDelete, serviceBeforeCreate, serviceBeforeUpdate, servicePrepareForUpdate } from './service-allocation.js';
import { validateNetworkPolicy } from './validation-networking.js';
import {
  validateEndpoints,
  validateEndpointSlice,
  validateEndpointSliceUpdate,
  validateService,
  validateServiceUpdate,
} from './validation-service.js';

declare module './kinds.js' {
  interface KindMap {
    Service: Service;
    Endpoints: Endpoints;
    EndpointSlice: EndpointSlice;
    NetworkPolicy: NetworkPolicy;
  }
}

const str = (v: unknown): string => (v === undefined || v === null ? '' : String(v));

/** The kinds this module registers (importing it registers them). */
export const SERVICE_KINDS = ['Service', 'Endpoints', 'EndpointSlice', 'NetworkPolicy'] as const;

registerKind({
  kind: 'Service',
  apiVersion: 'v1',
  resource: 'services',
  namespaced: true,
  hasStatus: true,
  fields: {
    'spec.clusterIP': (o: Service) => str(o.spec?.clusterIP),
    'spec.type': (o: Service) => str(o.spec?.type),
  },
});
registerKind({ kind: 'Endpoints', apiVersion: 'v1', resource: 'endpoints', namespaced: true, hasStatus: false });
registerKind({ kind: 'EndpointSlice', apiVersion: 'discovery.k8s.io/v1', resource: 'endpointslices', namespaced: true, hasStatus: false });
registerKind({ kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies', namespaced: true, hasStatus: false });

registerKindHooks('Service', {
  defaults: (o) => defaultService(o as Service),
  initialStatus: (o) => {
    o.status = { loadBalancer: {} };
  },
  validate: validateService,
  validateUpdate: validateServiceUpdate,
  prepareForUpdate: servicePrepareForUpdate,
  beforeCreate: serviceBeforeCreate,
  beforeUpdate: serviceBeforeUpdate,
  afterDelete: serviceAfterDelete,
});
registerKindHooks('Endpoints', { defaults: (o) => defaultEndpoints(o as Endpoints), validate: validateEndpoints });
registerKindHooks('EndpointSlice', {
  defaults: (o) => defaultEndpointSlice(o as EndpointSlice),
  validate: validateEndpointSlice,
  validateUpdate: validateEndpointSliceUpdate,
});
registerKindHooks('NetworkPolicy', { defaults: (o) => defaultNetworkPolicy(o as NetworkPolicy), validate: validateNetworkPolicy });
