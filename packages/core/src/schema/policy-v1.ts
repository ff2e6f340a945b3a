// Schema of policy.v1: PodDisruptionBudget, Eviction. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.policy.v1',
  {
    PodDisruptionBudget: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'PodDisruptionBudgetSpec'),
      status: f(3, 'PodDisruptionBudgetStatus'),
    }),
    PodDisruptionBudgetSpec: type('', {
      minAvailable: f(1, 'intOrString'),
      selector: f(2, `${META}LabelSelector`, '', { patchStrategy: 'replace' }),
      maxUnavailable: f(3, 'intOrString'),
      unhealthyPodEvictionPolicy: f(4, 'string'),
    }),
    PodDisruptionBudgetStatus: type('', {
      observedGeneration: f(1, 'int64'),
      disruptedPods: f(2, 'map[string]time'),
      disruptionsAllowed: f(3, 'int32', '', { required: true }),
      currentHealthy: f(4, 'int32', '', { required: true }),
      desiredHealthy: f(5, 'int32', '', { required: true }),
      expectedPods: f(6, 'int32', '', { required: true }),
      conditions: f(7, `[]${META}Condition`, '', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
    }),
    Eviction: type('', {
      metadata: f(1, `${META}ObjectMeta`),
      deleteOptions: f(2, `${META}DeleteOptions`),
    }),
  },
  [
    { kind: 'PodDisruptionBudget', apiVersion: 'policy/v1', type: 'PodDisruptionBudget' },
    { kind: 'Eviction', apiVersion: 'policy/v1', type: 'Eviction' },
  ],
);
