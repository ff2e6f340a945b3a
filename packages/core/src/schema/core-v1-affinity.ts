// Schema of core/v1 placement types shared by pods and volumes: affinity, node selectors, tolerations, topology spread.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    NodeSelector: type('', {
      nodeSelectorTerms: f(1, '[]NodeSelectorTerm', '', { required: true, listType: 'atomic' }),
    }, 'atomic'),
    NodeSelectorTerm: type('', {
      matchExpressions: f(1, '[]NodeSelectorRequirement', '', { listType: 'atomic' }),
      matchFields: f(2, '[]NodeSelectorRequirement', '', { listType: 'atomic' }),
    }, 'atomic'),
    NodeSelectorRequirement: type('', {
      key: f(1, 'string', '', { required: true }),
      operator: f(2, 'string', '', { required: true }),
      values: f(3, '[]string', '', { listType: 'atomic' }),
    }),
    TopologySelectorTerm: type('', {
      matchLabelExpressions: f(1, '[]TopologySelectorLabelRequirement'),
    }, 'atomic'),
    TopologySelectorLabelRequirement: type('', {
      key: f(1, 'string', '', { required: true }),
      values: f(2, '[]string', '', { required: true }),
    }),
    TopologySpreadConstraint: type('', {
      maxSkew: f(1, 'int32', '', { required: true }),
      topologyKey: f(2, 'string', '', { required: true }),
      whenUnsatisfiable: f(3, 'string'),
      labelSelector: f(4, `${META}LabelSelector`),
      minDomains: f(5, 'int32', '', { pointer: true }),
      nodeAffinityPolicy: f(6, 'string', '', { pointer: true }),
      nodeTaintsPolicy: f(7, 'string', '', { pointer: true }),
      matchLabelKeys: f(8, '[]string'),
    }),
    Toleration: type('Lets a pod schedule onto (or stay on) nodes with a matching taint.', {
      key: f(1, 'string'),
      operator: f(2, 'string', '', { required: true }),
      value: f(3, 'string'),
      effect: f(4, 'string'),
      tolerationSeconds: f(5, 'int64', '', { pointer: true }),
    }),
    Affinity: type('', {
      nodeAffinity: f(1, 'NodeAffinity'),
      podAffinity: f(2, 'PodAffinity'),
      podAntiAffinity: f(3, 'PodAntiAffinity'),
    }),
    PodAntiAffinity: type('', {
      requiredDuringSchedulingIgnoredDuringExecution: f(1, '[]PodAffinityTerm'),
      preferredDuringSchedulingIgnoredDuringExecution: f(2, '[]WeightedPodAffinityTerm'),
    }),
    WeightedPodAffinityTerm: type('', {
      weight: f(1, 'int32', '', { required: true }),
      podAffinityTerm: f(2, 'PodAffinityTerm', '', { required: true }),
    }),
    PodAffinityTerm: type('', {
      labelSelector: f(1, `${META}LabelSelector`),
      namespaces: f(2, '[]string'),
      topologyKey: f(3, 'string', '', { required: true }),
      namespaceSelector: f(4, `${META}LabelSelector`),
      matchLabelKeys: f(5, '[]string'),
      mismatchLabelKeys: f(6, '[]string'),
    }),
    PodAffinity: type('', {
      requiredDuringSchedulingIgnoredDuringExecution: f(1, '[]PodAffinityTerm'),
      preferredDuringSchedulingIgnoredDuringExecution: f(2, '[]WeightedPodAffinityTerm'),
    }),
    NodeAffinity: type('', {
      requiredDuringSchedulingIgnoredDuringExecution: f(1, 'NodeSelector'),
      preferredDuringSchedulingIgnoredDuringExecution: f(2, '[]PreferredSchedulingTerm'),
    }),
    PreferredSchedulingTerm: type('', {
      weight: f(1, 'int32', '', { required: true }),
      preference: f(2, 'NodeSelectorTerm', '', { required: true }),
    }),
  },
  [
  
  ],
);
