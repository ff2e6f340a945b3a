// Schema of events.k8s.io/v1 Event: the same stored objects as core/v1 Event under the newer field names
// (regarding, note, reportingController, deprecated* for the legacy fields).
// Field names, protobuf numbers, types and list types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

const CORE = 'io.k8s.api.core.v1.';

export default schemaModule(
  'io.k8s.api.events.v1',
  {
    Event: type('A report of an event somewhere in the cluster (the events.k8s.io form of core/v1 Event).', {
      metadata: f(1, `${META}ObjectMeta`),
      eventTime: f(2, 'microTime', 'When the event was first observed.', { required: true }),
      series: f(3, 'EventSeries', 'Data about the series this event is part of, if any.', { pointer: true }),
      reportingController: f(4, 'string', 'Name of the controller that emitted the event, e.g. kubernetes.io/kubelet.'),
      reportingInstance: f(5, 'string', 'ID of the controller instance, e.g. kubelet-xyzf.'),
      action: f(6, 'string', 'What was done, or failed, regarding the object.'),
      reason: f(7, 'string', 'Why the action was taken.'),
      regarding: f(8, `${CORE}ObjectReference`, 'The object this event is about.'),
      related: f(9, `${CORE}ObjectReference`, 'A second object, for more complex actions.', { pointer: true }),
      note: f(10, 'string', 'Human-readable description of the status of this operation.'),
      type: f(11, 'string', 'Normal or Warning.'),
      deprecatedSource: f(12, `${CORE}EventSource`, 'The core/v1 source, kept for compatibility.'),
      deprecatedFirstTimestamp: f(13, 'time', 'The core/v1 firstTimestamp, kept for compatibility.'),
      deprecatedLastTimestamp: f(14, 'time', 'The core/v1 lastTimestamp, kept for compatibility.'),
      deprecatedCount: f(15, 'int32', 'The core/v1 count, kept for compatibility.'),
    }),
    EventSeries: type('A series of events: how many times it happened and when last.', {
      count: f(1, 'int32', 'Occurrences up to the last heartbeat.', { required: true }),
      lastObservedTime: f(2, 'microTime', 'When the last event of the series was seen.', { required: true }),
    }),
  },
  [{ kind: 'Event', apiVersion: 'events.k8s.io/v1', type: 'Event' }],
);
