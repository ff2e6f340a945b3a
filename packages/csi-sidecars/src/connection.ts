// How a sidecar talks CSI: over a unix socket to any driver (the contract real sidecars have), or in
// process to service objects (the composed stack at scale). Both present the same promise API and fail
// with the same gRPC status codes, so every sidecar runs unchanged on either.
import { csi, grpc, type GrpcClientEngine, inProcessApi, openChannel, type PromiseApi, socketPathFromEndpoint } from '@kemu/proto';

export interface CsiConnection {
  /** `unix:///path` for sockets, `in-process` otherwise. */
  readonly address: string;
  readonly identity: PromiseApi<csi.IdentityMethods>;
  readonly controller: PromiseApi<csi.ControllerMethods>;
  readonly node: PromiseApi<csi.NodeMethods>;
  close(): void;
}

export interface SocketConnectionOptions {
  /** Longest wait between reconnect attempts while the socket is absent (default 5 s). */
  maxReconnectBackoffMs?: number;
  /** gRPC client implementation (default: KEMU_GRPC_CLIENT, else @kemu/proto's lean http2 client). */
  client?: GrpcClientEngine;
}

/**
 * A connection to a driver's unix socket: one channel for all three services. Calls fail UNAVAILABLE
 * while the socket is absent and work once it appears.
 */
export function connectCsiSocket(endpoint: string, opts: SocketConnectionOptions = {}): CsiConnection {
  const socketPath = socketPathFromEndpoint(endpoint);
  const address = `unix://${socketPath}`;
  const channel = openChannel(address, {
    client: opts.client,
    channelOptions: {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': opts.maxReconnectBackoffMs ?? 5000,
      'grpc.max_receive_message_length': 16 * 1024 * 1024,
    },
  });
  return {
    address,
    identity: channel.service(csi.IdentityService),
    controller: channel.service(csi.ControllerService),
    node: channel.service(csi.NodeService),
    close() {
      channel.close();
    },
  };
}

/** Service objects of a driver, e.g. what `createCsiDriver` of @kemu/csi returns. */
export interface CsiServiceObjects {
  identity: object;
  controller: object;
  node?: object;
}

/** A connection that calls a driver's service objects directly (requests still pass through protobuf). */
export function inProcessCsi(services: CsiServiceObjects, opts: { serialize?: boolean } = {}): CsiConnection {
  return {
    address: 'in-process',
    identity: inProcessApi(csi.IdentityService, services.identity as never, opts),
    controller: inProcessApi(csi.ControllerService, services.controller as never, opts),
    node: inProcessApi(csi.NodeService, (services.node ?? {}) as never, opts),
    close() {},
  };
}

/** The gRPC status code of an error (UNKNOWN for anything else). */
export function grpcCode(err: unknown): number {
  const c = (err as { code?: unknown })?.code;
  return typeof c === 'number' ? c : grpc.status.UNKNOWN;
}

const GO_CODE_NAMES: Record<number, string> = {
  0: 'OK',
  1: 'Canceled',
  2: 'Unknown',
  3: 'InvalidArgument',
  4: 'DeadlineExceeded',
  5: 'NotFound',
  6: 'AlreadyExists',
  7: 'PermissionDenied',
  8: 'ResourceExhausted',
  9: 'FailedPrecondition',
  10: 'Aborted',
  11: 'OutOfRange',
  12: 'Unimplemented',
  13: 'Internal',
  14: 'Unavailable',
  15: 'DataLoss',
  16: 'Unauthenticated',
};

/** `rpc error: code = NotFound desc = ...`, the form Kubernetes events and statuses carry CSI errors in. */
export function describeError(err: unknown): string {
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  if (typeof e?.code === 'number' && GO_CODE_NAMES[e.code]) {
    const desc = typeof e.details === 'string' && e.details ? e.details : String(e.message ?? '');
    return `rpc error: code = ${GO_CODE_NAMES[e.code]} desc = ${desc}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Errors after which the driver may still be working on the request (the call timed out, the driver was
 * unreachable or asked us to come back): the operation must be repeated until it reaches a final answer.
 */
export function isFinalError(err: unknown): boolean {
  const c = (err as { code?: unknown })?.code;
  if (typeof c !== 'number') return true;
  return ![
    grpc.status.CANCELLED,
    grpc.status.DEADLINE_EXCEEDED,
    grpc.status.UNAVAILABLE,
    grpc.status.RESOURCE_EXHAUSTED,
    grpc.status.ABORTED,
  ].includes(c);
}

/** Rejects with DEADLINE_EXCEEDED when `p` takes longer than `ms` (the in-process path has no deadline of its own). */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  if (!(ms > 0)) return p;
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => {
      reject(
        Object.assign(new Error(`${what}: context deadline exceeded`), {
          code: grpc.status.DEADLINE_EXCEEDED,
          details: 'context deadline exceeded',
        }),
      );
    }, ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** Driver name and controller capabilities, asked once and cached. */
export class DriverInfo {
  private name: string | undefined;
  private caps: Set<number> | undefined;
  private pluginCaps: Set<number> | undefined;

  constructor(
    readonly conn: CsiConnection,
    readonly timeoutMs: number,
  ) {}

  async driverName(): Promise<string> {
    if (this.name === undefined) {
      const r = await withTimeout(
        this.conn.identity.GetPluginInfo({}, { timeoutMs: this.timeoutMs }),
        this.timeoutMs,
        'GetPluginInfo',
      );
      if (!r.name) throw new Error('the driver answered GetPluginInfo without a name');
      this.name = r.name;
    }
    return this.name;
  }

  async controllerCapabilities(): Promise<Set<number>> {
    if (!this.caps) {
      const r = await withTimeout(
        this.conn.controller.ControllerGetCapabilities({}, { timeoutMs: this.timeoutMs }),
        this.timeoutMs,
        'ControllerGetCapabilities',
      );
      this.caps = new Set((r.capabilities ?? []).map((c) => c.rpc?.type ?? 0));
    }
    return this.caps;
  }

  async hasController(cap: csi.ControllerServiceCapability_RPC_Type): Promise<boolean> {
    return (await this.controllerCapabilities()).has(cap);
  }

  async pluginCapabilities(): Promise<Set<number>> {
    if (!this.pluginCaps) {
      const r = await withTimeout(
        this.conn.identity.GetPluginCapabilities({}, { timeoutMs: this.timeoutMs }),
        this.timeoutMs,
        'GetPluginCapabilities',
      );
      this.pluginCaps = new Set((r.capabilities ?? []).map((c) => c.service?.type ?? 0));
    }
    return this.pluginCaps;
  }
}
