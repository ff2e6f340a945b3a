// The kind schemas: the DSL (see dsl.ts for how to add a kind), the registry, and the built-in modules.
import apiextensionsV1 from './apiextensions-v1.js';
import authenticationV1 from './authentication-v1.js';
import authorizationV1 from './authorization-v1.js';
import calicoV1 from './calico-v1.js';
import coordinationV1 from './coordination-v1.js';
import coreV1 from './core-v1.js';
import coreV1Affinity from './core-v1-affinity.js';
import coreV1Node from './core-v1-node.js';
import coreV1Pod from './core-v1-pod.js';
import coreV1Secret from './core-v1-secret.js';
import coreV1Volume from './core-v1-volume.js';
import type { SchemaModule } from './dsl.js';
import metaV1 from './meta-v1.js';
import rbacV1 from './rbac-v1.js';
import { registerSchemaModule } from './registry.js';
import schedulingV1 from './scheduling-v1.js';
import storageV1 from './storage-v1.js';

/** Every built-in schema module; adding a kind's module is one line here. */
export const BUILTIN_MODULES: readonly SchemaModule[] = [
  metaV1,
  coreV1,
  coreV1Affinity,
  coreV1Pod,
  coreV1Secret,
  coreV1Node,
  coreV1Volume,
  storageV1,
  schedulingV1,
  coordinationV1,
  calicoV1,
  apiextensionsV1,
  rbacV1,
  authenticationV1,
  authorizationV1,
];

for (const m of BUILTIN_MODULES) registerSchemaModule(m);

export * from './dsl.js';
export * from './registry.js';
