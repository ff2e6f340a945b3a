// Serving gRPC on unix sockets the way node plugins do: a private socket file, replaced if stale.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { listenUnixFrontEnd, type UnixFrontEnd } from './server-front-end';
import { Http2GrpcServer } from './server-http2';

/**
 * Which gRPC server engine serves a socket: `grpc-js` (the reference implementation) or `http2`, the
 * lean engine in this package built directly on node:http2 (unary and server-streaming only).
 */
export type GrpcEngine = 'grpc-js' | 'http2';

/** Either engine's server: both register services and shut down the grpc-js way. */
export type GrpcServer = grpc.Server | Http2GrpcServer;

/** One service to serve: its definition and its grpc-js style implementation (see implementService). */
export type ServiceRegistration = readonly [grpc.ServiceDefinition, grpc.UntypedServiceImplementation];

const ENGINES: readonly GrpcEngine[] = ['grpc-js', 'http2'];

/** Reads an engine name (e.g. from `KEMU_GRPC_ENGINE`); undefined when unset, an error when unknown. */
export function parseGrpcEngine(value: string | undefined): GrpcEngine | undefined {
  if (value === undefined || value === '') return undefined;
  if ((ENGINES as readonly string[]).includes(value)) return value as GrpcEngine;
  throw new Error(`unknown gRPC engine ${JSON.stringify(value)}: use grpc-js or http2`);
}

/**
 * Creates an empty server of the given engine with grpc-js style options. A grpc-js server is built
 * without channelz (per-call and per-session bookkeeping nobody here reads) unless the options ask for it.
 */
export function createGrpcServer(engine: GrpcEngine = 'grpc-js', options: grpc.ServerOptions = {}): GrpcServer {
  return engine === 'http2' ? new Http2GrpcServer(options) : new grpc.Server({ 'grpc.enable_channelz': 0, ...options });
}

export interface ServeUnixOptions {
  /** Permission bits of the socket file (default 0660: owner and group only). */
  mode?: number;
  /** Permission bits for a parent directory that has to be created (default 0750). */
  dirMode?: number;
  /** Engine to build when serveUnix is given a list of services (default `grpc-js`). */
  engine?: GrpcEngine;
  /** grpc-js style server options for a server serveUnix builds (message size limits, ...). */
  serverOptions?: grpc.ServerOptions;
}

/** Strips `unix://` / `unix:` from an endpoint such as CSI_ENDPOINT or --listen. */
export function socketPathFromEndpoint(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  if (endpoint.startsWith('/')) return endpoint;
  throw new Error(`endpoint ${JSON.stringify(endpoint)} is not a unix socket: use unix:///path/to.sock`);
}

/**
 * Binds a server on a unix socket: either a server you built, or a list of services from which one is
 * built with `options.engine`. A leftover socket from a previous run is removed; any other kind of
 * file at that path is an error rather than something we delete. The socket is created under a tight
 * umask so it is never reachable by others, then given `mode`. Given services, resolves to the server it
 * built and bound.
 *
 * The socket is served through the front end of server-front-end.ts, so clients that send the socket path
 * as `:authority` (grpc-go before 1.58, grpc-java, grpcio) are answered like any other; the server's
 * `tryShutdown` and `forceShutdown` close that front end too.
 */
export async function serveUnix(server: GrpcServer, socketPath: string, options?: ServeUnixOptions): Promise<void>;
export async function serveUnix(
  services: readonly ServiceRegistration[],
  socketPath: string,
  options?: ServeUnixOptions,
): Promise<GrpcServer>;
export async function serveUnix(
  target: GrpcServer | readonly ServiceRegistration[],
  socketPath: string,
  options: ServeUnixOptions = {},
): Promise<GrpcServer | void> {
  let server: GrpcServer;
  if (Array.isArray(target)) {
    server = createGrpcServer(options.engine, options.serverOptions);
    for (const [definition, implementation] of target as readonly ServiceRegistration[])
      server.addService(definition, implementation);
  } else {
    server = target as GrpcServer;
  }
  const mode = options.mode ?? 0o660;
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: options.dirMode ?? 0o750 });
  const existing = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (existing) {
    if (!existing.isSocket()) throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
    fs.unlinkSync(socketPath);
  }
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const previous = process.umask(0o177);
  let frontEnd: UnixFrontEnd;
  try {
    frontEnd = await listenUnixFrontEnd(socketPath, (connection) => injector.injectConnection(connection));
  } finally {
    process.umask(previous);
  }
  fs.chmodSync(socketPath, mode);
  closeWithServer(server, frontEnd);
  return Array.isArray(target) ? server : undefined;
}

/** Makes the server's own shutdown methods close the front end in front of it as well. */
function closeWithServer(server: GrpcServer, frontEnd: UnixFrontEnd): void {
  const tryShutdown = server.tryShutdown.bind(server);
  const forceShutdown = server.forceShutdown.bind(server);
  server.tryShutdown = (callback: (err?: Error) => void) => {
    let pending = 2;
    let failure: Error | undefined;
    const step = (err?: Error) => {
      failure ??= err;
      if (--pending === 0) callback(failure);
    };
    frontEnd.close(() => step());
    tryShutdown(step);
  };
  server.forceShutdown = () => {
    frontEnd.close();
    forceShutdown();
  };
}

/** Stops accepting calls and waits for in-flight ones, forcing shutdown after `graceMs`. */
export function shutdownServer(server: GrpcServer, graceMs = 5000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
