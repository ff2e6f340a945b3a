// Schema of core/v1 Secret. Field names, protobuf numbers and types follow upstream's API (1.32).
import { META, f, schemaModule, type } from './dsl.js';

export default schemaModule(
  'io.k8s.api.core.v1',
  {
    Secret: type('Sensitive data (passwords, tokens, keys) for pods to consume, of a given type.', {
      metadata: f(1, `${META}ObjectMeta`),
      immutable: f(5, 'bool', 'When true, data cannot change; the object can only be deleted.', { pointer: true }),
      data: f(2, 'map[string]bytes', 'Values by key (base64 in JSON); at most 1 MiB in all.'),
      stringData: f(4, 'map[string]string', 'Write-only plain-text values, merged into data on write and never returned.'),
      type: f(3, 'string', 'How the data is to be used (Opaque, kubernetes.io/tls, ...); fixed once created.'),
    }),
  },
  [{ kind: 'Secret', apiVersion: 'v1', type: 'Secret' }],
);
