// The kind schemas: the DSL (see dsl.ts for how to add a kind), the registry, and the built-in modules.
import apiextensionsV1 from './apiextensions-v1.js';
import appsV1 from './apps-v1.js';
import authenticationV1 from './authentication-v1.js';
import authorizationV1 from './authorization-v1.js';
import autoscalingV1 from './autoscaling-v1.js';
import autoscalingV2 from './autoscaling-v2.js';
import batchV1 from './batch-v1.js';
import calicoV1 from './calico-v1.js';
import coordinationV1 from './coordination-v1.js';
import coreV1Affinity from './core-v1-affinity.js';
import coreV1Node from './core-v1-node.js';
import coreV1Pod from './core-v1-pod.js';
import coreV1Policy from './core-v1-policy.js';
import coreV1Secret from './core-v1-secret.js';
import coreV1Service from './core-v1-service.js';
import coreV1Volume from './core-v1-volume.js';
import coreV1Workloads from './core-v1-workloads.js';
import coreV1 from './core-v1.js';
import discoveryV1 from './discovery-v1.js';
import eventsV1 from './events-v1.js';
import type { SchemaModule } from './dsl.js';
import metaV1 from './meta-v1.js';
import networkingV1 from './networking-v1.js';
import policyV1 from './policy-v1.js';
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
  coreV1Workloads,
  coreV1Service,
  coreV1Policy,
  appsV1,
  batchV1,
  discoveryV1,
  eventsV1,
  networkingV1,
  policyV1,
  autoscalingV1,
  autoscalingV2,
];

for (const m of BUILTIN_MODULES) registerSchemaModule(m);

export * from './dsl.js';
export * from './registry.js';
