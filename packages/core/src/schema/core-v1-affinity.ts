// Schema of core/v1 placement types shared by pods and volumes: affinity, node selectors, tolerations, topology spread.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    NodeSelector: type('Node selector terms, ORed.', {
      nodeSelectorTerms: f(1, '[]NodeSelectorTerm', 'The terms; a node matching any of them is selected.', { required: true, listType: 'atomic' }),
    }, 'atomic'),
    NodeSelectorTerm: type('Requirements on node labels and fields, ANDed.', {
      matchExpressions: f(1, '[]NodeSelectorRequirement', 'Requirements on node labels.', { listType: 'atomic' }),
      matchFields: f(2, '[]NodeSelectorRequirement', 'Requirements on node fields (metadata.name).', { listType: 'atomic' }),
    }, 'atomic'),
    NodeSelectorRequirement: type('A key, an operator (In, NotIn, Exists, DoesNotExist, Gt, Lt) and values.', {
      key: f(1, 'string', 'Label or field key.', { required: true }),
      operator: f(2, 'string', 'In, NotIn, Exists, DoesNotExist, Gt or Lt.', { required: true }),
      values: f(3, '[]string', 'Values for In/NotIn; one integer for Gt/Lt; empty for Exists/DoesNotExist.', { listType: 'atomic' }),
    }),
    TopologySelectorTerm: type('Requirements on topology labels, ANDed.', {
      matchLabelExpressions: f(1, '[]TopologySelectorLabelRequirement', 'Label requirements.'),
    }, 'atomic'),
    TopologySelectorLabelRequirement: type('A label key and the values it may have.', {
      key: f(1, 'string', 'Label key.', { required: true }),
      values: f(2, '[]string', 'Allowed values.', { required: true }),
    }),
    TopologySpreadConstraint: type('How evenly matching pods spread over the domains of a topology key.', {
      maxSkew: f(1, 'int32', 'Largest allowed difference in matching pods between two domains.', { required: true }),
      topologyKey: f(2, 'string', 'Node label whose values are the domains.', { required: true }),
      whenUnsatisfiable: f(3, 'string', 'DoNotSchedule or ScheduleAnyway.'),
      labelSelector: f(4, `${META}LabelSelector`, 'Which pods are counted.'),
      minDomains: f(5, 'int32', 'Fewest eligible domains assumed when computing skew.', { pointer: true }),
      nodeAffinityPolicy: f(6, 'string', 'Honor or Ignore the pod\'s node affinity when counting domains.', { pointer: true }),
      nodeTaintsPolicy: f(7, 'string', 'Honor or Ignore node taints when counting domains.', { pointer: true }),
      matchLabelKeys: f(8, '[]string', 'Label keys whose values are taken from the incoming pod.'),
    }),
    Toleration: type('Lets a pod schedule onto (or stay on) nodes with a matching taint.', {
      key: f(1, 'string', 'Taint key to match; empty with Exists matches every taint.'),
      operator: f(2, 'string', 'Exists or Equal (default).', { required: true }),
      value: f(3, 'string', 'Taint value to match with Equal.'),
      effect: f(4, 'string', 'Taint effect to match; empty matches every effect.'),
      tolerationSeconds: f(5, 'int64', 'For NoExecute: how long the pod stays bound after the taint appears.', { pointer: true }),
    }),
    Affinity: type('Scheduling constraints relative to nodes and to other pods.', {
      nodeAffinity: f(1, 'NodeAffinity', 'Rules about which nodes the pod may or prefers to run on.'),
      podAffinity: f(2, 'PodAffinity', 'Run near pods matching these terms.'),
      podAntiAffinity: f(3, 'PodAntiAffinity', 'Keep away from pods matching these terms.'),
    }),
    PodAntiAffinity: type('Separation rules from other pods.', {
      requiredDuringSchedulingIgnoredDuringExecution: f(1, '[]PodAffinityTerm', 'Terms that must hold for the pod to be scheduled.'),
      preferredDuringSchedulingIgnoredDuringExecution: f(2, '[]WeightedPodAffinityTerm', 'Weighted terms the scheduler prefers to satisfy.'),
    }),
    WeightedPodAffinityTerm: type('A pod affinity term with a weight.', {
      weight: f(1, 'int32', 'Weight 1-100 of the term.', { required: true }),
      podAffinityTerm: f(2, 'PodAffinityTerm', 'The term.', { required: true }),
    }),
    PodAffinityTerm: type('A set of pods (by labels and namespaces) and the topology domain they are counted in.', {
      labelSelector: f(1, `${META}LabelSelector`, 'Labels of the pods the term refers to.'),
      namespaces: f(2, '[]string', 'Namespaces to look in (default: the pod\'s own).'),
      topologyKey: f(3, 'string', 'Node label whose value defines a topology domain, e.g. kubernetes.io/hostname.', { required: true }),
      namespaceSelector: f(4, `${META}LabelSelector`, 'Labels of the namespaces to look in.'),
      matchLabelKeys: f(5, '[]string', 'Label keys whose values are taken from the incoming pod and added to labelSelector.'),
      mismatchLabelKeys: f(6, '[]string', 'Label keys whose values must differ from the incoming pod\'s.'),
    }),
    PodAffinity: type('Co-location rules with other pods.', {
      requiredDuringSchedulingIgnoredDuringExecution: f(1, '[]PodAffinityTerm', 'Terms that must hold for the pod to be scheduled.'),
      preferredDuringSchedulingIgnoredDuringExecution: f(2, '[]WeightedPodAffinityTerm', 'Weighted terms the scheduler prefers to satisfy.'),
    }),
    NodeAffinity: type('Node selection rules: hard requirements and weighted preferences.', {
      requiredDuringSchedulingIgnoredDuringExecution: f(1, 'NodeSelector', 'Terms a node must match for the pod to be scheduled there.'),
      preferredDuringSchedulingIgnoredDuringExecution: f(2, '[]PreferredSchedulingTerm', 'Weighted terms the scheduler prefers nodes to match.'),
    }),
    PreferredSchedulingTerm: type('A node selector term with a weight.', {
      weight: f(1, 'int32', 'Weight 1-100 added to a node\'s score when the term matches.', { required: true }),
      preference: f(2, 'NodeSelectorTerm', 'The term to match.', { required: true }),
    }),
  },
  [
  
  ],
);
