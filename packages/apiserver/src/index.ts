// @kemu/apiserver public surface.
export * from './auth-seams.js';
export { CertificateAuthority, type CertKeyPair, type ClientCertOptions, type ServingCertOptions, userFromCertificate } from './ca.js';
export { ClusterUnreachableError } from './cluster-unreachable.js';
export { type HandlerOptions, RequestHandler } from './handler.js';
export { KUBERNETES_VERSION, versionInfo } from './version.js';
export { defaultImpersonator, HeaderImpersonator } from './authn/impersonation.js';
export { RemoteStore } from './remote-store.js';
export type { Renderers, RequestContext } from './request-context.js';
export { requestInfo } from './request-info.js';
export { resourcePath } from './resource-path.js';
export {
  type ApiExtensions,
  type ApiServer,
  type ApiServerOptions,
  type ExecResult,
  type NodeAddRequest,
  type PodLogOptions,
  startApiServer,
  type StreamOptions,
  type TlsServing,
} from './server.js';
export {
  buildKubeconfig,
  contextName,
  defaultKubeconfigPath,
  type Kubeconfig,
  type KubeconfigInput,
  kubeconfigYaml,
  mergeKubeconfig,
  removeFromKubeconfig,
  writeKubeconfigFile,
} from './kubeconfig.js';
export {
  acceptsTable,
  buildTable,
  humanDuration,
  parseIncludeObject,
  podStatusReason,
  registerPrinter,
  type Table,
  type TableColumnDefinition,
  type TableRow,
} from './tables/index.js';
export { openApiV2, openApiV3, openApiV3Index } from './openapi/index.js';
export { decodeObjectBytes, encodeObject, PROTOBUF_CONTENT_TYPE, supportsProtobuf } from './protobuf/index.js';
export {
  type CustomResourceDefinition,
  registerCustomResource,
  registerCustomResourceDefinitionKind,
  scaleOf,
  servedCustomResource,
  serveStoredCustomResources,
  unregisterCustomResource,
  withScale,
} from './crd/index.js';
export { type ClusterCredentials, clusterCredentials } from './cluster-credentials.js';
export {
  ADMISSION_PLUGINS,
  type AdmissionPluginName,
  type ClusterAuth,
  type ClusterAuthOptions,
  deferredClusterAuth,
  startClusterAuth,
} from './authn/cluster-auth.js';
export { ServiceAccountKeys, ServiceAccountTokens } from './authn/service-account-token.js';
export { userKubeconfig } from './authn/user-kubeconfig.js';
export { type AuditPolicy, loadAuditPolicy, parseAuditPolicy } from './authn/audit-policy.js';
export { AuditLogSink } from './authn/audit-log.js';
export { RBACAuthorizer } from './authz/rbac-authorizer.js';
export { authorizingStore, type AuthorizingStoreOptions } from './authz/authorizing-store.js';
export { controllerUser, KUBE_CONTROLLER_MANAGER, KUBE_PROXY, KUBE_SCHEDULER, nodeUser, serviceAccountUser } from './authz/component-identities.js';
export { DecisionCache } from './authz/decision-cache.js';
export { bootstrapClusterRoleBindings, bootstrapClusterRoles, controllerServiceAccountNames, ensureBootstrapPolicy } from './authz/bootstrap-policy.js';
