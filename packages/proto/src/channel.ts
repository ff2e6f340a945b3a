// How kemu's own callers reach a CRI or CSI server: one channel per endpoint, a promise API per service,
// on either client (the lean node:http2 one by default, or grpc-js), chosen by option or KEMU_GRPC_CLIENT.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Http2GrpcChannel } from './client-http2';
import { type PromiseApi, promiseClient, type ServiceDefinitionOf, type UnaryRequester } from './runtime';
import { socketPathFromEndpoint } from './server';

/** Which gRPC client implementation a channel uses. */
export type GrpcClientEngine = 'grpc-js' | 'http2';

const CLIENTS: readonly GrpcClientEngine[] = ['grpc-js', 'http2'];

/** Reads a client name (e.g. from `KEMU_GRPC_CLIENT`); undefined when unset, an error when unknown. */
export function parseGrpcClient(value: string | undefined): GrpcClientEngine | undefined {
  if (value === undefined || value === '') return undefined;
  if ((CLIENTS as readonly string[]).includes(value)) return value as GrpcClientEngine;
  throw new Error(`unknown gRPC client ${JSON.stringify(value)}: use grpc-js or http2 (KEMU_GRPC_CLIENT)`);
}

/** The client kemu's callers use: `KEMU_GRPC_CLIENT` when set, else the lean `http2` client. */
export function defaultGrpcClient(env: NodeJS.ProcessEnv = process.env): GrpcClientEngine {
  return parseGrpcClient(env.KEMU_GRPC_CLIENT) ?? 'http2';
}

export interface OpenChannelOptions {
  /** Client implementation (default: {@link defaultGrpcClient}). */
  client?: GrpcClientEngine;
  /**
   * grpc-js channel options. The http2 client honours the message size limits, the reconnect backoff,
   * the user agent and the default authority; grpc-js honours them all.
   */
  channelOptions?: grpc.ChannelOptions;
}

/** A connection to one endpoint, shared by every service reached through it. */
export interface GrpcChannel {
  /** `unix:///abs/path` (or `unix:rel/path`) as the channel dials it. */
  readonly target: string;
  readonly client: GrpcClientEngine;
  /** The unary RPCs of a service on this channel, as promises. */
  service<M>(definition: ServiceDefinitionOf<M>): PromiseApi<M>;
  /** Closes the connection; calls still in flight fail, later ones fail UNAVAILABLE. */
  close(): void;
}

/**
 * Opens a channel to a unix-socket endpoint (`unix:///abs`, `unix:rel`, or an absolute path). Nothing
 * is dialled until the first call; calls fail UNAVAILABLE while the socket is absent and work once it
 * appears (after the reconnect backoff).
 */
export function openChannel(endpoint: string, options: OpenChannelOptions = {}): GrpcChannel {
  const socketPath = socketPathFromEndpoint(endpoint);
  const target = path.isAbsolute(socketPath) ? `unix://${socketPath}` : `unix:${socketPath}`;
  const client = options.client ?? defaultGrpcClient();
  const requester: UnaryRequester & { close(): void } =
    client === 'http2'
      ? new Http2GrpcChannel(target, options.channelOptions)
      : (new grpc.Client(target, grpc.credentials.createInsecure(), options.channelOptions) as unknown as UnaryRequester & {
          close(): void;
        });
  return {
    target,
    client,
    service: (definition) => promiseClient(definition, requester),
    close: () => requester.close(),
  };
}
