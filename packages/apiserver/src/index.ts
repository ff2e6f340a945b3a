// @kemu/apiserver public surface.
export * from './auth-seams.js';
export { ClusterUnreachableError } from './cluster-unreachable.js';
export { RemoteStore } from './remote-store.js';
export { resourcePath } from './resource-path.js';
export { type ApiExtensions, type ApiServer, type ExecResult, startApiServer } from './server.js';
export { CertificateAuthority, type CertKeyPair, type ClientCertOptions, type ServingCertOptions, userFromCertificate } from './ca.js';
