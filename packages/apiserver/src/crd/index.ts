// CustomResourceDefinitions (apiextensions.k8s.io/v1): validation, structural schemas, pruning, defaulting,
// printer columns, the scale subresource, and registering each CRD's kind so it is served.
export { validateCustomResourceDefinition } from './crd-validation.js';
export {
  establishedStatus,
  registerCustomResource,
  registerCustomResourceDefinitionKind,
  servedCustomResource,
  serveStoredCustomResources,
  storageVersion,
  unregisterCustomResource,
} from './custom-resources.js';
export { findAll, parseJsonPath } from './jsonpath.js';
export { printerFromColumns } from './printer-columns.js';
export { customResourceScale, type Scale, scaleOf, withScale } from './scale.js';
export { applyDefaults, prune, validateValue } from './schema-walk.js';
export type * from './types.js';
