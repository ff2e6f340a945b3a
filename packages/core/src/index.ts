// @kemu/core public surface.
export * from './api-meta.js';
export type * from './api-core.js';
export { KUBELET_ENDPOINT_ANNOTATION } from './api-core.js';
export type * from './api-storage.js';
export type * from './api-misc.js';
export * from './api-rbac.js';
export * from './api-authentication.js';
export * from './api-authorization.js';
export { MAX_SECRET_SIZE, prepareSecret, SECRET_KEYS, SECRET_TYPES, type Secret, secretValue } from './api-secret.js';
export { configKeyErrors } from './validation-secret.js';
export { ephemeralClaimName, isPodOwnedClaim, notCreatedForPodMessage, podVolumeClaimName } from './pod-volume-claims.js';
export { SECRET_KIND } from './kinds-secret.js';
export * from './api-service.js';
export type * from './api-networking.js';
export { SERVICE_KINDS } from './kinds-service.js';
export { DEFAULT_SERVICE_CIDR } from './service-allocation.js';
export type * from './api-apps.js';
export type * from './api-batch.js';
export type * from './api-policy.js';
export type * from './api-quota.js';
export { WORKLOAD_KINDS } from './kinds-workloads.js';
export { JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL, podTemplateOf } from './defaults-apps.js';
export { isTimeZone, parseSchedule, type Schedule } from './cron-schedule.js';
export { type KindHooks, kindHooks, registerKindHooks, type WriteEffect, type WriteHookContext } from './kind-hooks.js';
export * from './errors.js';
export { FieldErrors } from './field-errors.js';
export {
  type BuiltinKind,
  type FieldGetter,
  type KindInfo,
  type KindMap,
  type ObjectOf,
  fieldGetter,
  kindForResource,
  kindInfo,
  lookupKind,
  registerKind,
  storedKinds,
  unregisterKind,
} from './kinds.js';
export * from './quantity.js';
export * from './labels.js';
export * from './fields.js';
export { dns1123Label, dns1123Subdomain, labelValue, portName, qualifiedName } from './names.js';
export { applyDefaults, defaultPullPolicy, podQOSClass } from './defaults.js';
export { assertValid, updateErrors, validationErrors } from './validation.js';
export { MAX_DNS_NAMESERVERS, MAX_DNS_SEARCH_LIST_CHARS, MAX_DNS_SEARCH_PATHS } from './validation-pod-dns.js';
export { defaultRBAC, isRBACKind, rbacName } from './validation-rbac.js';
export { RBAC_KINDS } from './kinds-rbac.js';
export * from './api-admissionregistration.js';
export { ADMISSIONREGISTRATION_KINDS } from './kinds-admissionregistration.js';
export { ManifestError, type ParseManifestOptions, parseManifests, parseManifestsEach, toYaml } from './manifest.js';
export { applyPatch, jsonPatch, mergePatch, strategicMerge } from './patch.js';
export type * from './store.js';
export { BaseStore, type BaseStoreOptions } from './store-base.js';
export { jsonEqual } from './json-equal.js';
export { createMemoryStore, MemoryStore, type MemoryStoreOptions } from './store-memory.js';
export { deepFreeze } from './deep-freeze.js';
export { DEFAULT_WATCH_QUEUE_LIMIT, WatchQueue } from './watch-queue.js';
export {
  Indexer,
  type IndexFunc,
  Lister,
  NAMESPACE_INDEX,
  namespaceIndexFunc,
  NODE_NAME_INDEX,
  nodeNameIndexFunc,
} from './indexer.js';
export { type EventHandler, InformerFactory, type InformerOptions, setInformerErrorHandler, SharedInformer } from './informer.js';
export * from './rate-limiter.js';
export { DelayingQueue, RateLimitingQueue, WorkQueue } from './workqueue.js';
export { Controller, type ControllerOptions, type ReconcileResult } from './controller.js';
export { DEFAULT_SLICE_MS, TimeSlice } from './time-slice.js';
export { type LeaderCallbacks, type LeaderElectionConfig, LeaderElector } from './leader-election.js';
export { createFileStore, FileStore, FileStoreError, type FileStoreOptions } from './store-file.js';
export { createEtcdStore, EtcdStore, type EtcdStoreOptions } from './store-etcd.js';
