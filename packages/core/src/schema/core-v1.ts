// Schema of core/v1 Namespace, ConfigMap, Event, Binding and object references.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    ObjectReference: type('Enough information to find another object.', {
      kind: f(1, 'string', 'Kind of the object.'),
      namespace: f(2, 'string', 'Namespace of the object.'),
      name: f(3, 'string', 'Name of the object.'),
      uid: f(4, 'string', 'UID of the object.'),
      apiVersion: f(5, 'string', 'API version of the object.'),
      resourceVersion: f(6, 'string', 'Version of the object the reference was made for.'),
      fieldPath: f(7, 'string', 'Part of the object meant, e.g. spec.containers{app}.'),
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
      source: f(5, 'EventSource', 'What reported the event.'),
      firstTimestamp: f(6, 'time', 'When it first happened.'),
      lastTimestamp: f(7, 'time', 'When it last happened.'),
      count: f(8, 'int32', 'How many times this event occurred.'),
      type: f(9, 'string', 'Normal or Warning.'),
      eventTime: f(10, 'microTime', 'When it happened, to the microsecond.'),
      series: f(11, 'EventSeries', 'Repeats of the event.'),
      action: f(12, 'string', 'What was done, or failed.'),
      related: f(13, 'ObjectReference', 'A second object involved.'),
      reportingComponent: f(14, 'string', 'Controller that emitted the event.', { required: true }),
      reportingInstance: f(15, 'string', 'Instance of that controller.', { required: true }),
    }),
    EventSeries: type('Repeats of an event.', {
      count: f(1, 'int32', 'How many times it happened.'),
      lastObservedTime: f(2, 'microTime', 'When it last happened.', { required: true }),
    }),
    EventSource: type('What reported an event.', {
      component: f(1, 'string', 'Reporting component, e.g. kubelet.'),
      host: f(2, 'string', 'Node the component ran on.'),
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
      conditions: f(2, '[]NamespaceCondition', 'Conditions of the namespace\'s deletion.', { patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] }),
    }),
    NamespaceCondition: type('One condition of a namespace.', {
      type: f(1, 'string', '', { required: true }),
      status: f(2, 'string', '', { required: true }),
      lastTransitionTime: f(4, 'time'),
      reason: f(5, 'string'),
      message: f(6, 'string'),
    }),
    NamespaceSpec: type('Desired state of a namespace.', {
      finalizers: f(1, '[]string', 'Finalizers that must clear before the namespace is removed.'),
    }),
    LocalObjectReference: type('Names an object in the same namespace.', {
      name: f(1, 'string', 'Name of the object.'),
    }, 'atomic'),
    ConfigMapKeySelector: type('A key of a ConfigMap in the pod\'s namespace.', {
      localObjectReference: f(1, 'LocalObjectReference', '', { required: true, inline: true }),
      key: f(2, 'string', 'The key.', { required: true }),
      optional: f(3, 'bool', 'Whether the ConfigMap or key may be missing.', { pointer: true }),
    }, 'atomic'),
    ConfigMapEnvSource: type('A ConfigMap to take variables from.', {
      localObjectReference: f(1, 'LocalObjectReference', '', { required: true, inline: true }),
      optional: f(2, 'bool', 'Whether the ConfigMap may be missing.', { pointer: true }),
    }),
  },
  [
    { kind: 'Namespace', apiVersion: 'v1', type: 'Namespace' },
    { kind: 'ConfigMap', apiVersion: 'v1', type: 'ConfigMap' },
    { kind: 'Event', apiVersion: 'v1', type: 'Event' },
    { kind: 'Binding', apiVersion: 'v1', type: 'Binding' },
  ],
);
