// Schema of meta/v1: object and list metadata, label selectors, Status, conditions, delete options and watch events.
// Field names, protobuf numbers, types, patch strategies and list types follow upstream's API (1.32).
import { f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.apimachinery.pkg.apis.meta.v1',
  {
    Status: type('The outcome of an operation that returns no object, and the shape of every error.', {
      metadata: f(1, 'ListMeta'),
      status: f(2, 'string', 'Success or Failure.'),
      message: f(3, 'string', 'Human-readable description of the outcome.'),
      reason: f(4, 'string', 'Machine-readable reason for a failure (NotFound, AlreadyExists, Conflict, Invalid, ...).'),
      details: f(5, 'StatusDetails', 'Data about the failed object and the fields at fault.'),
      code: f(6, 'int32', 'HTTP status code of the response.'),
    }),
    StatusDetails: type('Identifies the object an error is about and its causes.', {
      name: f(1, 'string', 'Name of the object.'),
      group: f(2, 'string', 'API group of the object.'),
      kind: f(3, 'string', 'Kind of the object.'),
      uid: f(6, 'string', 'UID of the object.'),
      causes: f(4, '[]StatusCause', 'Causes of the error.'),
      retryAfterSeconds: f(5, 'int32', 'Seconds to wait before retrying.'),
    }),
    StatusCause: type('One cause of an error, often a field path with its problem.', {
      reason: f(1, 'string', 'Machine-readable cause.'),
      message: f(2, 'string', 'Human-readable cause.'),
      field: f(3, 'string', 'Field at fault, e.g. spec.containers[0].name.'),
    }),
    ListMeta: type('Metadata of a list response: its version and paging token.', {
      selfLink: f(1, 'string'),
      resourceVersion: f(2, 'string', 'Version of the collection at which the list was read.'),
      continue: f(3, 'string', 'Token to fetch the next page; empty on the last page.'),
      remainingItemCount: f(4, 'int64', 'Items after this page, when the server can count them.', { pointer: true }),
    }),
    ObjectMeta: type('Metadata every persisted object carries: identity, labels, annotations, ownership and lifecycle stamps.', {
      name: f(1, 'string', 'Unique name within the namespace (or cluster, for cluster-scoped kinds); cannot change after creation.'),
      generateName: f(2, 'string', 'Prefix from which the server builds a unique name when name is empty.'),
      namespace: f(3, 'string', 'Namespace the object lives in; empty for cluster-scoped kinds.'),
      selfLink: f(4, 'string', 'Deprecated and never set.'),
      uid: f(5, 'string', 'Server-assigned identifier, unique across the object\'s whole history.'),
      resourceVersion: f(6, 'string', 'Opaque version of this object, used for optimistic concurrency and watches.'),
      generation: f(7, 'int64', 'Sequence number of changes to the desired state (spec); set by the server.'),
      creationTimestamp: f(8, 'time', 'When the server created the object.'),
      deletionTimestamp: f(9, 'time', 'When graceful deletion will complete; set by the server when deletion is requested.'),
      deletionGracePeriodSeconds: f(10, 'int64', 'Seconds of grace left for graceful deletion.', { pointer: true }),
      labels: f(11, 'map[string]string', 'Key/value pairs that selectors match against.'),
      annotations: f(12, 'map[string]string', 'Arbitrary non-identifying key/value metadata for tools.'),
      ownerReferences: f(13, '[]OwnerReference', 'Objects this one depends on; the garbage collector deletes it after all owners are gone.', { patchStrategy: 'merge', patchMergeKey: 'uid', listType: 'map', listMapKeys: ['uid'] }),
      finalizers: f(14, '[]string', 'Keys that must be cleared before the object is removed from storage.', { patchStrategy: 'merge', listType: 'set' }),
      managedFields: f(17, '[]ManagedFieldsEntry', 'Which manager owns which fields, as recorded by server-side apply.', { listType: 'atomic' }),
    }),
    ManagedFieldsEntry: type('One manager\'s claim on a set of fields.', {
      manager: f(1, 'string', 'Name of the manager.'),
      operation: f(2, 'string', 'Apply or Update.'),
      apiVersion: f(3, 'string', 'Version the field set is written in.'),
      time: f(4, 'time', 'When the manager last changed the fields.'),
      fieldsType: f(6, 'string', 'Format of fieldsV1 (FieldsV1).'),
      fieldsV1: f(7, 'fieldsV1', 'The fields owned.'),
      subresource: f(8, 'string', 'Subresource the fields were written through.'),
    }),
    OwnerReference: type('Points at an owning object in the same namespace.', {
      apiVersion: f(5, 'string', 'API version of the owner.', { required: true }),
      kind: f(1, 'string', 'Kind of the owner.', { required: true }),
      name: f(3, 'string', 'Name of the owner.', { required: true }),
      uid: f(4, 'string', 'UID of the owner.', { required: true }),
      controller: f(6, 'bool', 'Whether the owner is the managing controller (at most one owner is).', { pointer: true }),
      blockOwnerDeletion: f(7, 'bool', 'With foreground deletion, the owner is not removed until this object is.', { pointer: true }),
    }),
    LabelSelector: type('A label query: matchLabels and matchExpressions, ANDed; empty matches everything.', {
      matchLabels: f(1, 'map[string]string', 'Labels that must all be present with these values.'),
      matchExpressions: f(2, '[]LabelSelectorRequirement', 'Requirements that must all hold.', { listType: 'atomic' }),
    }, 'atomic'),
    LabelSelectorRequirement: type('A key, an operator (In, NotIn, Exists, DoesNotExist) and values.', {
      key: f(1, 'string', 'Label key.', { required: true }),
      operator: f(2, 'string', 'In, NotIn, Exists or DoesNotExist.', { required: true }),
      values: f(3, '[]string', 'Values for In and NotIn.', { listType: 'atomic' }),
    }),
    Condition: type('One aspect of an object\'s state and when it last changed.', {
      type: f(1, 'string', 'Condition type, CamelCase.', { required: true }),
      status: f(2, 'string', 'True, False or Unknown.', { required: true }),
      observedGeneration: f(3, 'int64', 'metadata.generation the condition was set for.'),
      lastTransitionTime: f(4, 'time', 'When the status last changed.', { required: true }),
      reason: f(5, 'string', 'Machine-readable reason, CamelCase.', { required: true }),
      message: f(6, 'string', 'Human-readable details.', { required: true }),
    }),
    DeleteOptions: type('Options of a delete.', {
      gracePeriodSeconds: f(1, 'int64', 'Seconds before the object is removed; 0 deletes at once.', { pointer: true }),
      preconditions: f(2, 'Preconditions', 'Conditions the object must meet to be deleted.'),
      orphanDependents: f(3, 'bool', 'Deprecated: use propagationPolicy.', { pointer: true }),
      propagationPolicy: f(4, 'string', 'Orphan, Background or Foreground deletion of dependents.', { pointer: true }),
      dryRun: f(5, '[]string', 'All: check without deleting.'),
      ignoreStoreReadErrorWithClusterBreakingPotential: f(6, 'bool', 'Delete even an object that cannot be read from storage.', { pointer: true }),
    }),
    Preconditions: type('What must hold for a delete to proceed.', {
      uid: f(1, 'string', 'Expected UID.', { pointer: true }),
      resourceVersion: f(2, 'string', 'Expected resource version.', { pointer: true }),
    }),
    WatchEvent: type('One event of a watch stream.', {
      type: f(1, 'string', 'ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.', { required: true }),
      object: f(2, 'rawExtension', 'The object, or a Status for ERROR.', { required: true }),
    }),
  },
  [
  
  ],
);
