// Schema of core/v1 Namespace, ConfigMap, Event, Binding and object references.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    ObjectReference: type('Enough information to find another object.', {
      kind: f(1, 'string'),
      namespace: f(2, 'string'),
      name: f(3, 'string'),
      uid: f(4, 'string'),
      apiVersion: f(5, 'string'),
      resourceVersion: f(6, 'string'),
      fieldPath: f(7, 'string'),
    }, 'atomic'),
    Binding: type('Binds a pod to a node; posted to the pod\'s binding subresource.', {
      metadata: f(1, `${META}ObjectMeta`),
      target: f(2, 'ObjectReference', 'The node to bind to.', { required: true }),
    }),
    Event: type('A report of something that happened to an object.', {
      metadata: f(1, `${META}ObjectMeta`, '', { required: true }),
      involvedObject: f(2, 'ObjectReference', 'The object the event is about.', { required: true }),
      reason: f(3, 'string', 'Short machine-readable cause.'),
      message: f(4, 'string', 'Human-readable description.'),
      source: f(5, 'EventSource'),
      firstTimestamp: f(6, 'time'),
      lastTimestamp: f(7, 'time'),
      count: f(8, 'int32', 'How many times this event occurred.'),
      type: f(9, 'string', 'Normal or Warning.'),
      eventTime: f(10, 'microTime'),
      series: f(11, 'EventSeries'),
      action: f(12, 'string'),
      related: f(13, 'ObjectReference'),
      reportingComponent: f(14, 'string', '', { required: true }),
      reportingInstance: f(15, 'string', '', { required: true }),
    }),
    EventSeries: type('', {
      count: f(1, 'int32'),
      lastObservedTime: f(2, 'microTime', '', { required: true }),
    }),
    EventSource: type('', {
      component: f(1, 'string'),
      host: f(2, 'string'),
    }),
    ConfigMap: type('Non-secret configuration data for pods to consume.', {
      metadata: f(1, `${META}ObjectMeta`),
      immutable: f(4, 'bool', 'When true, data cannot change; the object can only be deleted.', { pointer: true }),
      data: f(2, 'map[string]string', 'UTF-8 string values by key.'),
      binaryData: f(3, 'map[string]bytes', 'Binary values by key (base64 in JSON).'),
    }),
    Namespace: type('A scope for names; deleting it deletes what it contains.', {
      metadata: f(1, `${META}ObjectMeta`),
      spec: f(2, 'NamespaceSpec'),
      status: f(3, 'NamespaceStatus'),
    }),
    NamespaceStatus: type('Observed state of a namespace.', {
      phase: f(1, 'string', 'Active or Terminating.'),
      conditions: f(2, '[]NamespaceCondition', '', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
    }),
    NamespaceCondition: type('', {
      type: f(1, 'string', '', { required: true }),
      status: f(2, 'string', '', { required: true }),
      lastTransitionTime: f(4, 'time'),
      reason: f(5, 'string'),
      message: f(6, 'string'),
    }),
    NamespaceSpec: type('Desired state of a namespace.', {
      finalizers: f(1, '[]string'),
    }),
    LocalObjectReference: type('Names an object in the same namespace.', {
      name: f(1, 'string'),
    }, 'atomic'),
    ConfigMapKeySelector: type('', {
      localObjectReference: f(1, 'LocalObjectReference', '', { required: true, inline: true }),
      key: f(2, 'string', '', { required: true }),
      optional: f(3, 'bool', '', { pointer: true }),
    }, 'atomic'),
    ConfigMapEnvSource: type('', {
      localObjectReference: f(1, 'LocalObjectReference', '', { required: true, inline: true }),
      optional: f(2, 'bool', '', { pointer: true }),
    }),
  },
  [
    { kind: 'Namespace', apiVersion: 'v1', type: 'Namespace' },
    { kind: 'ConfigMap', apiVersion: 'v1', type: 'ConfigMap' },
    { kind: 'Event', apiVersion: 'v1', type: 'Event' },
    { kind: 'Binding', apiVersion: 'v1', type: 'Binding' },
  ],
);
