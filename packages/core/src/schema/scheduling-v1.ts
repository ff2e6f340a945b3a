// Schema of scheduling.k8s.io/v1: PriorityClass.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.scheduling.v1',
  {
    PriorityClass: type('Maps a class name to a scheduling priority value.', {
      metadata: f(1, `${META}ObjectMeta`),
      value: f(2, 'int32', 'Priority of pods using this class; higher goes first.', { required: true }),
      globalDefault: f(3, 'bool', 'Use this class for pods naming none.'),
      description: f(4, 'string', 'What the class is for.'),
      preemptionPolicy: f(5, 'string', 'PreemptLowerPriority (default) or Never.', { pointer: true }),
    }),
  },
  [
    { kind: 'PriorityClass', apiVersion: 'scheduling.k8s.io/v1', type: 'PriorityClass' },
  ],
);
