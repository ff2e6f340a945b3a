// Schema of apiextensions.k8s.io/v1 CustomResourceDefinition. Served as JSON only here (protobuf numbers 0):
// clients send CRDs as JSON, and a JSONSchemaProps tree is kept as plain JSON (`json`), so it is published
// as an object with unknown fields preserved rather than as upstream's recursive definition.
import { f, META, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1',
  {
    CustomResourceDefinition: type('Defines a new kind, served by the API server like a built-in one.', {
      metadata: f(0, `${META}ObjectMeta`),
      spec: f(0, 'CustomResourceDefinitionSpec', 'The group, names, scope and versions of the new kind.', { required: true }),
      status: f(0, 'CustomResourceDefinitionStatus', 'Whether the definition is established and which names it got.'),
    }),
    CustomResourceDefinitionSpec: type('How the new kind is named and served.', {
      group: f(0, 'string', 'API group of the kind, e.g. stable.example.com.', { required: true }),
      names: f(0, 'CustomResourceDefinitionNames', 'Resource and kind names.', { required: true }),
      scope: f(0, 'string', 'Cluster or Namespaced.', { required: true, enum: ['Cluster', 'Namespaced'] }),
      versions: f(0, '[]CustomResourceDefinitionVersion', 'Served versions; exactly one is the storage version.', { required: true, listType: 'atomic' }),
      conversion: f(0, 'CustomResourceConversion', 'How objects convert between versions (None only here).'),
      preserveUnknownFields: f(0, 'bool', 'Deprecated: keep unknown fields; must be false in v1.'),
    }),
    CustomResourceDefinitionNames: type('The names a custom resource is known by.', {
      plural: f(0, 'string', 'Resource name in URLs, lower case.', { required: true }),
      singular: f(0, 'string', 'Singular name, lower case (default: the kind in lower case).'),
      shortNames: f(0, '[]string', 'Short aliases for kubectl.', { listType: 'atomic' }),
      kind: f(0, 'string', 'CamelCase kind of the objects.', { required: true }),
      listKind: f(0, 'string', 'Kind of lists (default: kind + List).'),
      categories: f(0, '[]string', 'Groups the resource belongs to, e.g. all.', { listType: 'atomic' }),
    }),
    CustomResourceDefinitionVersion: type('One served version of the kind.', {
      name: f(0, 'string', 'Version name, e.g. v1 or v1beta1.', { required: true }),
      served: f(0, 'bool', 'Whether the version is served.', { required: true }),
      storage: f(0, 'bool', 'Whether objects are stored in this version.', { required: true }),
      deprecated: f(0, 'bool', 'Whether the version is deprecated.'),
      deprecationWarning: f(0, 'string', 'Warning returned to clients of a deprecated version.', { pointer: true }),
      schema: f(0, 'CustomResourceValidation', 'The version\'s schema.'),
      subresources: f(0, 'CustomResourceSubresources', 'The status and scale subresources, when enabled.'),
      additionalPrinterColumns: f(0, '[]CustomResourceColumnDefinition', 'Columns `kubectl get` shows.', { listType: 'atomic' }),
      selectableFields: f(0, '[]SelectableField', 'Fields usable in field selectors.', { listType: 'atomic' }),
    }),
    CustomResourceValidation: type('The OpenAPI v3 schema of a version.', {
      openAPIV3Schema: f(0, 'json', 'A structural OpenAPI v3 schema of the objects.'),
    }),
    CustomResourceSubresources: type('Subresources of the custom resource.', {
      status: f(0, 'json', 'Enables /status: updates of the main resource ignore status, and the reverse.'),
      scale: f(0, 'CustomResourceSubresourceScale', 'Enables /scale for autoscalers and kubectl scale.'),
    }),
    CustomResourceSubresourceScale: type('Where the replica counts live.', {
      specReplicasPath: f(0, 'string', 'JSON path of the desired replicas, under .spec.', { required: true }),
      statusReplicasPath: f(0, 'string', 'JSON path of the observed replicas, under .status.', { required: true }),
      labelSelectorPath: f(0, 'string', 'JSON path of the serialized label selector, under .status or .spec.', { pointer: true }),
    }),
    CustomResourceColumnDefinition: type('One printer column.', {
      name: f(0, 'string', 'Column header.', { required: true }),
      type: f(0, 'string', 'integer, number, string, boolean or date.', { required: true }),
      format: f(0, 'string', 'Optional OpenAPI format of the column.'),
      description: f(0, 'string', 'What the column shows.'),
      priority: f(0, 'int32', '0 for default columns, more for -o wide.'),
      jsonPath: f(0, 'string', 'Simple JSON path evaluated against each object.', { required: true }),
    }),
    SelectableField: type('A field usable in field selectors.', {
      jsonPath: f(0, 'string', 'Simple JSON path of the field.', { required: true }),
    }),
    CustomResourceConversion: type('Version conversion strategy.', {
      strategy: f(0, 'string', 'None (only apiVersion changes) or Webhook.', { required: true }),
      webhook: f(0, 'json', 'Webhook settings for the Webhook strategy.'),
    }),
    CustomResourceDefinitionStatus: type('Observed state of the definition.', {
      conditions: f(0, '[]CustomResourceDefinitionCondition', 'NamesAccepted, Established, ...', { listType: 'map', listMapKeys: ['type'] }),
      acceptedNames: f(0, 'CustomResourceDefinitionNames', 'The names actually served.'),
      storedVersions: f(0, '[]string', 'Versions objects have ever been stored in.', { listType: 'atomic' }),
    }),
    CustomResourceDefinitionCondition: type('One condition of a definition.', {
      type: f(0, 'string', 'Established, NamesAccepted, NonStructuralSchema, Terminating, ...', { required: true }),
      status: f(0, 'string', 'True, False or Unknown.', { required: true }),
      lastTransitionTime: f(0, 'time', 'When the condition last changed.'),
      reason: f(0, 'string', 'Machine-readable reason.'),
      message: f(0, 'string', 'Human-readable details.'),
    }),
  },
  [{ kind: 'CustomResourceDefinition', apiVersion: 'apiextensions.k8s.io/v1', type: 'CustomResourceDefinition', protobuf: false }],
);
