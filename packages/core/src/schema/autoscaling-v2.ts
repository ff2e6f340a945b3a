// Schema of autoscaling.v2: HorizontalPodAutoscaler. Facts from upstream's API as kubectl 1.32 carries it.
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.autoscaling.v2',
  {
    HorizontalPodAutoscaler: type('Scales a workload\'s replicas to keep metrics at targets.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'HorizontalPodAutoscalerSpec'),
      status: f(3, 'HorizontalPodAutoscalerStatus'),
    }),
    HorizontalPodAutoscalerSpec: type('What is scaled, within which bounds, on which metrics.', {
      scaleTargetRef: f(1, 'CrossVersionObjectReference', 'The scaled object.', { required: true }),
      minReplicas: f(2, 'int32', 'Fewest replicas (default 1).', { pointer: true }),
      maxReplicas: f(3, 'int32', 'Most replicas.', { required: true }),
      metrics: f(4, '[]MetricSpec', 'Metrics and their targets.', { listType: 'atomic' }),
      behavior: f(5, 'HorizontalPodAutoscalerBehavior', 'Scaling speed limits.'),
    }),
    CrossVersionObjectReference: type('The object an autoscaler scales.', {
      kind: f(1, 'string', 'Kind of the object.', { required: true }),
      name: f(2, 'string', 'Name of the object.', { required: true }),
      apiVersion: f(3, 'string', 'API version of the object.'),
    }),
    MetricSpec: type('One metric to scale on.', {
      type: f(1, 'string', 'Resource, ContainerResource, Pods, Object or External.', { required: true }),
      object: f(2, 'ObjectMetricSource', 'A metric of another object.'),
      pods: f(3, 'PodsMetricSource', 'A custom metric of the pods.'),
      resource: f(4, 'ResourceMetricSource', 'A resource of the pods, e.g. cpu.'),
      containerResource: f(7, 'ContainerResourceMetricSource'),
      external: f(5, 'ExternalMetricSource', 'A metric from outside the cluster.'),
    }),
    ObjectMetricSource: type('', {
      describedObject: f(1, 'CrossVersionObjectReference'),
      target: f(2, 'MetricTarget', '', { required: true }),
      metric: f(3, 'MetricIdentifier'),
    }),
    MetricTarget: type('The target value of a metric.', {
      type: f(1, 'string', 'Utilization, Value or AverageValue.', { required: true }),
      value: f(2, 'quantity', 'Target value.'),
      averageValue: f(3, 'quantity', 'Target value per pod.'),
      averageUtilization: f(4, 'int32', 'Target percentage of the requests.', { pointer: true }),
    }),
    MetricIdentifier: type('', {
      name: f(1, 'string', '', { required: true }),
      selector: f(2, `${META}LabelSelector`),
    }),
    PodsMetricSource: type('', {
      metric: f(1, 'MetricIdentifier'),
      target: f(2, 'MetricTarget', '', { required: true }),
    }),
    ResourceMetricSource: type('A resource metric of the pods.', {
      name: f(1, 'string', 'Resource name, e.g. cpu.', { required: true }),
      target: f(2, 'MetricTarget', 'Target value.', { required: true }),
    }),
    ContainerResourceMetricSource: type('', {
      name: f(1, 'string', '', { required: true }),
      target: f(2, 'MetricTarget', '', { required: true }),
      container: f(3, 'string', '', { required: true }),
    }),
    ExternalMetricSource: type('', {
      metric: f(1, 'MetricIdentifier'),
      target: f(2, 'MetricTarget', '', { required: true }),
    }),
    HorizontalPodAutoscalerBehavior: type('', {
      scaleUp: f(1, 'HPAScalingRules'),
      scaleDown: f(2, 'HPAScalingRules'),
    }),
    HPAScalingRules: type('', {
      stabilizationWindowSeconds: f(3, 'int32', '', { pointer: true }),
      selectPolicy: f(1, 'string'),
      policies: f(2, '[]HPAScalingPolicy'),
    }),
    HPAScalingPolicy: type('', {
      type: f(1, 'string', '', { required: true }),
      value: f(2, 'int32', '', { required: true }),
      periodSeconds: f(3, 'int32', '', { required: true }),
    }),
    HorizontalPodAutoscalerStatus: type('Observed state of an autoscaler.', {
      observedGeneration: f(1, 'int64', '', { pointer: true }),
      lastScaleTime: f(2, 'time', 'When it last scaled.'),
      currentReplicas: f(3, 'int32', 'Current replicas.'),
      desiredReplicas: f(4, 'int32', 'Replicas the autoscaler wants.', { required: true }),
      currentMetrics: f(5, '[]MetricStatus', 'Last read metric values.', { required: true, listType: 'atomic' }),
      conditions: f(6, '[]HorizontalPodAutoscalerCondition', 'AbleToScale, ScalingActive, ScalingLimited.', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
    }),
    MetricStatus: type('', {
      type: f(1, 'string', '', { required: true }),
      object: f(2, 'ObjectMetricStatus'),
      pods: f(3, 'PodsMetricStatus'),
      resource: f(4, 'ResourceMetricStatus'),
      containerResource: f(7, 'ContainerResourceMetricStatus'),
      external: f(5, 'ExternalMetricStatus'),
    }),
    ObjectMetricStatus: type('', {
      metric: f(1, 'MetricIdentifier'),
      current: f(2, 'MetricValueStatus'),
      describedObject: f(3, 'CrossVersionObjectReference'),
    }),
    MetricValueStatus: type('', {
      value: f(1, 'quantity'),
      averageValue: f(2, 'quantity'),
      averageUtilization: f(3, 'int32', '', { pointer: true }),
    }),
    PodsMetricStatus: type('', {
      metric: f(1, 'MetricIdentifier'),
      current: f(2, 'MetricValueStatus'),
    }),
    ResourceMetricStatus: type('', {
      name: f(1, 'string', '', { required: true }),
      current: f(2, 'MetricValueStatus'),
    }),
    ContainerResourceMetricStatus: type('', {
      name: f(1, 'string', '', { required: true }),
      current: f(2, 'MetricValueStatus'),
      container: f(3, 'string', '', { required: true }),
    }),
    ExternalMetricStatus: type('', {
      metric: f(1, 'MetricIdentifier'),
      current: f(2, 'MetricValueStatus'),
    }),
    HorizontalPodAutoscalerCondition: type('', {
      type: f(1, 'string', '', { required: true }),
      status: f(2, 'string', '', { required: true }),
      lastTransitionTime: f(3, 'time'),
      reason: f(4, 'string'),
      message: f(5, 'string'),
    }),
  },
  [
    { kind: 'HorizontalPodAutoscaler', apiVersion: 'autoscaling/v2', type: 'HorizontalPodAutoscaler' },
  ],
);
