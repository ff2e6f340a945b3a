// @kemu/proto: our own schemas of the CRI, CSI and kubelet plugin-registration APIs as TypeScript
// types, grpc-js service definitions and typed clients, plus the helpers to serve and call them.
export * as cri from './generated/cri';
export * as csi from './generated/csi';
export * as deviceplugin from './generated/deviceplugin';
export * as pluginregistration from './generated/pluginregistration';
export {
  collectStream,
  decode,
  encode,
  implementService,
  InProcessCallError,
  inProcessApi,
  type InProcessOptions,
  type PromiseApi,
  promiseClient,
  RpcError,
  toServiceError,
  unaryCall,
  type MethodShape,
  type ServiceDefinitionOf,
  type ServiceHandlers,
  type TypedClient,
  type TypedClientConstructor,
  type UnaryCallOptions,
  type UnaryRequester,
} from './runtime';
export {
  createGrpcServer,
  type GrpcEngine,
  type GrpcServer,
  parseGrpcEngine,
  serveUnix,
  type ServeUnixOptions,
  type ServiceRegistration,
  shutdownServer,
  socketPathFromEndpoint,
} from './server';
export * as grpc from '@grpc/grpc-js';
export { encodeGrpcMessage, Http2GrpcServer, type Http2GrpcServerOptions } from './server-http2';
export {
  callError,
  decodeGrpcMessage,
  Http2GrpcChannel,
  type Http2CallOptions,
  type Http2ChannelOptions,
  Http2UnaryCall,
  type StatusObject,
} from './client-http2';
export {
  defaultGrpcClient,
  type GrpcChannel,
  type GrpcClientEngine,
  openChannel,
  type OpenChannelOptions,
  parseGrpcClient,
} from './channel';
