// Serving gRPC on unix sockets the way node plugins do: a private socket file, replaced if stale.
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';

export interface ServeUnixOptions {
  /** Permission bits of the socket file (default 0660: owner and group only). */
  mode?: number;
  /** Permission bits for a parent directory that has to be created (default 0750). */
  dirMode?: number;
}

/** Strips `unix://` / `unix:` from an endpoint such as CSI_ENDPOINT or --listen. */
export function socketPathFromEndpoint(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  if (endpoint.startsWith('/')) return endpoint;
  throw new Error(`endpoint ${JSON.stringify(endpoint)} is not a unix socket: use unix:///path/to.sock`);
}

/**
 * Binds `server` on a unix socket. A leftover socket from a previous run is removed; any other kind of
 * file at that path is an error rather than something we delete. The socket is created under a tight
 * umask so it is never reachable by others, then given `mode`.
 */
export async function serveUnix(server: grpc.Server, socketPath: string, options: ServeUnixOptions = {}) {
  const mode = options.mode ?? 0o660;
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: options.dirMode ?? 0o750 });
  const existing = fs.lstatSync(socketPath, { throwIfNoEntry: false });
  if (existing) {
    if (!existing.isSocket()) throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
    fs.unlinkSync(socketPath);
  }
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  } finally {
    process.umask(previous);
  }
  fs.chmodSync(socketPath, mode);
}

/** Stops accepting calls and waits for in-flight ones, forcing shutdown after `graceMs`. */
export function shutdownServer(server: grpc.Server, graceMs = 5000): Promise<void> {
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
