// Schema of policy.v1: PodDisruptionBudget, Eviction. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.policy.v1',
  {
    PodDisruptionBudget: type('How many pods of a set may be down at once through voluntary disruptions.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'PodDisruptionBudgetSpec'),
      status: f(3, 'PodDisruptionBudgetStatus'),
    }),
    PodDisruptionBudgetSpec: type('The pods and the budget.', {
      minAvailable: f(1, 'intOrString', 'Pods (or percentage) that must stay available.', { pointer: true }),
      selector: f(2, `${META}LabelSelector`, 'The pods the budget covers.', { patchStrategy: 'replace' }),
      maxUnavailable: f(3, 'intOrString', 'Pods (or percentage) that may be unavailable.', { pointer: true }),
      unhealthyPodEvictionPolicy: f(4, 'string', 'IfHealthyBudget (default) or AlwaysAllow eviction of unhealthy pods.'),
    }),
    PodDisruptionBudgetStatus: type('Observed state of the budget.', {
      observedGeneration: f(1, 'int64'),
      disruptedPods: f(2, 'map[string]time'),
      disruptionsAllowed: f(3, 'int32', 'Pods that may be disrupted now.', { required: true }),
      currentHealthy: f(4, 'int32', 'Healthy pods.', { required: true }),
      desiredHealthy: f(5, 'int32', 'Healthy pods needed.', { required: true }),
      expectedPods: f(6, 'int32', 'Pods counted.', { required: true }),
      conditions: f(7, `[]${META}Condition`, '', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
    }),
    Eviction: type('A request to evict a pod, subject to disruption budgets.', {
      metadata: f(1, `${META}ObjectMeta`),
      deleteOptions: f(2, `${META}DeleteOptions`, 'Options of the deletion.'),
    }),
  },
  [
    { kind: 'PodDisruptionBudget', apiVersion: 'policy/v1', type: 'PodDisruptionBudget' },
    { kind: 'Eviction', apiVersion: 'policy/v1', type: 'Eviction' },
  ],
);
