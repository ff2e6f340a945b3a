// Schema of autoscaling.v1: Scale. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.autoscaling.v1',
  {
    Scale: type('The replica count of a scalable object.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'ScaleSpec'),
      status: f(3, 'ScaleStatus'),
    }),
    ScaleSpec: type('Desired replicas.', {
      replicas: f(1, 'int32', 'Desired replicas.'),
    }),
    ScaleStatus: type('Observed replicas.', {
      replicas: f(1, 'int32', 'Current replicas.', { required: true }),
      selector: f(2, 'string', 'Label selector of the pods, as a string.'),
    }),
  },
  [
    { kind: 'Scale', apiVersion: 'autoscaling/v1', type: 'Scale' },
  ],
);
