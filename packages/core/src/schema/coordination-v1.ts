// Schema of coordination.k8s.io/v1: Lease.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.coordination.v1',
  {
    Lease: type('A lock with a holder and a renewal time, used for leader election and node heartbeats.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'LeaseSpec'),
    }),
    LeaseSpec: type('Who holds the lease and until when.', {
      holderIdentity: f(1, 'string', 'Current holder.', { pointer: true }),
      leaseDurationSeconds: f(2, 'int32', 'How long other candidates wait after the last renewal before taking over.', { pointer: true }),
      acquireTime: f(3, 'microTime', 'When the current holder acquired the lease.', { pointer: true }),
      renewTime: f(4, 'microTime', 'When the holder last renewed.', { pointer: true }),
      leaseTransitions: f(5, 'int32', 'How many times the lease changed holders.', { pointer: true }),
      strategy: f(6, 'string', 'How the holder is chosen when coordinated leader election is used.', { pointer: true }),
      preferredHolder: f(7, 'string', 'Who should hold the lease next.', { pointer: true }),
    }),
  },
  [
    { kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', type: 'Lease' },
  ],
);
