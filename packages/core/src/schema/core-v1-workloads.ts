// Schema of core.v1: ReplicationController, PodTemplate. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    ReplicationController: type('The older form of ReplicaSet, with an equality-only selector.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'ReplicationControllerSpec'),
      status: f(3, 'ReplicationControllerStatus'),
    }),
    ReplicationControllerSpec: type('The pods a ReplicationController keeps running.', {
      replicas: f(1, 'int32', 'Desired number of pods (default 1).', { pointer: true }),
      minReadySeconds: f(4, 'int32'),
      selector: f(2, 'map[string]string', 'Labels of the pods it manages.'),
      template: f(3, 'PodTemplateSpec', 'The pods to create.'),
    }),
    PodTemplateSpec: type('Metadata and spec of pods to create.', {
      metadata: f(1, `${META}ObjectMeta`, 'Labels and annotations of the pods.'),
      spec: f(2, 'PodSpec', 'Spec of the pods.'),
    }),
    ReplicationControllerStatus: type('Observed state of a ReplicationController.', {
      replicas: f(1, 'int32', '', { required: true }),
      fullyLabeledReplicas: f(2, 'int32'),
      readyReplicas: f(4, 'int32'),
      availableReplicas: f(5, 'int32'),
      observedGeneration: f(3, 'int64'),
      conditions: f(6, '[]ReplicationControllerCondition', '', { patchStrategy: 'merge', patchMergeKey: 'type' }),
    }),
    ReplicationControllerCondition: type('', {
      type: f(1, 'string', '', { required: true }),
      status: f(2, 'string', '', { required: true }),
      lastTransitionTime: f(3, 'time'),
      reason: f(4, 'string'),
      message: f(5, 'string'),
    }),
    PodTemplate: type('A reusable pod template.', {
      metadata: f(1, `${META}ObjectMeta`),
      template: f(2, 'PodTemplateSpec'),
    }),
  },
  [
    { kind: 'ReplicationController', apiVersion: 'v1', type: 'ReplicationController' },
    { kind: 'PodTemplate', apiVersion: 'v1', type: 'PodTemplate' },
  ],
);
