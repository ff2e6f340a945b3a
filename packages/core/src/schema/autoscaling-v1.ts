// Schema of autoscaling.v1: Scale. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.autoscaling.v1',
  {
    Scale: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'ScaleSpec'),
      status: f(3, 'ScaleStatus'),
    }),
    ScaleSpec: type('', {
      replicas: f(1, 'int32'),
    }),
    ScaleStatus: type('', {
      replicas: f(1, 'int32', '', { required: true }),
      selector: f(2, 'string'),
    }),
  },
  [
    { kind: 'Scale', apiVersion: 'autoscaling/v1', type: 'Scale' },
  ],
);
