// Run-time support for the generated modules: protobufjs codecs, grpc-js service definitions and
// typed clients. Everything protocol-specific lives in generated/*; this file knows only protobuf + gRPC.
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { Http2GrpcChannel } from './client-http2';
import { checkWireFormat } from './protobuf-wire';

/** One RPC as the generated `<Service>Methods` interfaces describe it. */
export interface MethodShape {
  request: object;
  response: object;
  requestStream: boolean;
  responseStream: boolean;
}

export type ServiceDefinitionOf<M> = {
  [K in keyof M]: M[K] extends MethodShape ? grpc.MethodDefinition<M[K]['request'], M[K]['response']> : never;
} & grpc.ServiceDefinition;

type Awaitable<T> = T | Promise<T>;

/**
 * Async-friendly handlers: unary RPCs return (a promise of) the response; server-streaming RPCs are
 * async iterables whose items are written to the stream. Throw {@link RpcError} for a gRPC status.
 */
export type ServiceHandlers<M> = {
  [K in keyof M]?: M[K] extends MethodShape
    ? M[K]['responseStream'] extends true
      ? (
          request: M[K]['request'],
          call: grpc.ServerWritableStream<M[K]['request'], M[K]['response']>,
        ) => AsyncIterable<M[K]['response']>
      : (
          request: M[K]['request'],
          call: grpc.ServerUnaryCall<M[K]['request'], M[K]['response']>,
        ) => Awaitable<M[K]['response']>
    : never;
};

interface UnaryMethod<Req, Res> {
  (request: Req, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (request: Req, metadata: grpc.Metadata, callback: grpc.requestCallback<Res>): grpc.ClientUnaryCall;
  (
    request: Req,
    metadata: grpc.Metadata,
    options: Partial<grpc.CallOptions>,
    callback: grpc.requestCallback<Res>,
  ): grpc.ClientUnaryCall;
}

interface ServerStreamMethod<Req, Res> {
  (request: Req, options?: Partial<grpc.CallOptions>): grpc.ClientReadableStream<Res>;
  (request: Req, metadata?: grpc.Metadata, options?: Partial<grpc.CallOptions>): grpc.ClientReadableStream<Res>;
}

export type TypedClient<M> = grpc.Client & {
  /** Type-level only: lets helpers such as {@link unaryCall} recover the method table. Never set. */
  readonly __methods?: M;
} & {
  [K in keyof M]: M[K] extends MethodShape
    ? M[K]['responseStream'] extends true
      ? ServerStreamMethod<M[K]['request'], M[K]['response']>
      : UnaryMethod<M[K]['request'], M[K]['response']>
    : never;
};

export type TypedClientConstructor<M> = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ClientOptions,
) => TypedClient<M>;

/** How decoded messages are presented: camelCase fields, proto3 defaults filled, int64 as number. */
const toObjectOptions: protobuf.IConversionOptions = {
  longs: Number,
  enums: Number,
  bytes: Buffer as unknown as typeof String,
  defaults: true,
  arrays: true,
  objects: true,
  oneofs: true,
};

export function loadRoot(descriptor: object): protobuf.Root {
  const root = protobuf.Root.fromJSON(descriptor as protobuf.INamespace);
  root.resolveAll();
  return root;
}

function isDefault(field: protobuf.Field, value: unknown): boolean {
  if (value === null || value === undefined) return true;
  if (field.resolvedType instanceof protobuf.Type) return false;
  if (field.resolvedType instanceof protobuf.Enum) return value === 0;
  switch (typeof value) {
    case 'number':
      return value === 0 && !Object.is(value, -0);
    case 'string':
      return value === '';
    case 'boolean':
      return value === false;
    default:
      if (value instanceof Uint8Array) return value.length === 0;
      // Long from protobufjs for 64-bit fields
      return typeof (value as { isZero?: () => boolean }).isZero === 'function' && (value as { isZero: () => boolean }).isZero();
  }
}

/**
 * Drops fields with implicit presence that hold their default value, so output is the canonical proto3
 * form (protobufjs would otherwise write every field a caller set, e.g. `false` as `08 00`). Oneof members
 * and proto3 `optional` fields have explicit presence and are kept.
 */
function canonicalize(type: protobuf.Type, message: Record<string, unknown>): void {
  for (const field of type.fieldsArray) {
    if (!Object.hasOwn(message, field.name)) continue;
    const value = message[field.name];
    const explicit = field.partOf !== null || field.options?.proto3_optional === true;
    if (field.map) {
      const entries = value as Record<string, unknown>;
      if (Object.keys(entries).length === 0) delete message[field.name];
      else if (field.resolvedType instanceof protobuf.Type)
        for (const v of Object.values(entries)) canonicalize(field.resolvedType, v as Record<string, unknown>);
    } else if (field.repeated) {
      const items = value as unknown[];
      if (items.length === 0) delete message[field.name];
      else if (field.resolvedType instanceof protobuf.Type)
        for (const v of items) canonicalize(field.resolvedType, v as Record<string, unknown>);
    } else if (field.resolvedType instanceof protobuf.Type) {
      if (value) canonicalize(field.resolvedType, value as Record<string, unknown>);
    } else if (!explicit && isDefault(field, value)) {
      delete message[field.name];
    }
  }
}

/** Encodes a plain object as the given message type, in canonical proto3 form. */
export function encode(type: protobuf.Type, value: object): Buffer {
  const message = type.fromObject(value as Record<string, unknown>) as unknown as Record<string, unknown>;
  canonicalize(type, message);
  return Buffer.from(type.encode(message).finish());
}

/**
 * Decodes bytes into a plain object with every field present (proto3 defaults). Malformed wire data (a
 * length past the end of its message, a bad tag, invalid UTF-8 in a string) throws; a server answers
 * such a request INTERNAL, as grpc-go and grpc-js do for a request that fails to deserialize.
 */
export function decode<T>(type: protobuf.Type, bytes: Uint8Array): T {
  checkWireFormat(type, bytes);
  return type.toObject(type.decode(bytes), toObjectOptions) as T;
}

export function makeServiceDefinition<M>(root: protobuf.Root, serviceName: string): ServiceDefinitionOf<M> {
  const service = root.lookupService(serviceName);
  const definition: Record<string, grpc.MethodDefinition<object, object>> = {};
  for (const method of service.methodsArray) {
    const req = method.resolvedRequestType!;
    const res = method.resolvedResponseType!;
    definition[method.name] = {
      path: `/${serviceName}/${method.name}`,
      requestStream: !!method.requestStream,
      responseStream: !!method.responseStream,
      requestSerialize: (value: object) => encode(req, value),
      requestDeserialize: (bytes: Buffer) => decode(req, bytes),
      responseSerialize: (value: object) => encode(res, value),
      responseDeserialize: (bytes: Buffer) => decode(res, bytes),
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    };
  }
  return definition as ServiceDefinitionOf<M>;
}

export function makeClientConstructor<M>(
  definition: ServiceDefinitionOf<M>,
  serviceName: string,
): TypedClientConstructor<M> {
  return grpc.makeGenericClientConstructor(
    definition,
    serviceName,
  ) as unknown as TypedClientConstructor<M>;
}

/** A protocol error: the handler's way to answer with a specific gRPC status. */
export class RpcError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
    readonly metadata?: grpc.Metadata,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

function isStatusLike(err: unknown): err is { code: number; details?: string; message?: string } {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { code?: unknown }).code === 'number' &&
    (err as { code: number }).code >= 0 &&
    (err as { code: number }).code <= 16
  );
}

/** Maps anything a handler threw to a gRPC status object; never leaks a stack trace to the peer. */
export function toServiceError(err: unknown): Partial<grpc.StatusObject> {
  if (err instanceof RpcError) return { code: err.code, details: err.message, metadata: err.metadata };
  if (isStatusLike(err)) return { code: err.code, details: err.details ?? err.message ?? '' };
  const message = err instanceof Error ? err.message : String(err);
  return { code: grpc.status.INTERNAL, details: message };
}

/**
 * Adapts async handlers to a grpc-js service implementation. RPCs without a handler answer
 * UNIMPLEMENTED naming the method.
 */
export function implementService<M>(
  definition: ServiceDefinitionOf<M>,
  handlers: ServiceHandlers<M>,
): grpc.UntypedServiceImplementation {
  const impl: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition as grpc.ServiceDefinition)) {
    const handler = (handlers as Record<string, ((...args: any[]) => any) | undefined>)[name];
    if (method.requestStream) {
      // No API we generate has client-streaming RPCs; refuse honestly rather than guess.
      impl[name] = (call: grpc.ServerDuplexStream<unknown, unknown>) =>
        call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: `${name} is not implemented` });
      continue;
    }
    if (!handler) {
      impl[name] = method.responseStream
        ? (call: grpc.ServerWritableStream<unknown, unknown>) =>
            call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: `${name} is not implemented` })
        : (_call: unknown, callback: grpc.sendUnaryData<unknown>) =>
            callback({ code: grpc.status.UNIMPLEMENTED, details: `${name} is not implemented` });
      continue;
    }
    if (method.responseStream) {
      impl[name] = async (call: grpc.ServerWritableStream<unknown, unknown>) => {
        let cancelled = false;
        call.on('cancelled', () => {
          cancelled = true;
        });
        try {
          for await (const item of handler(call.request, call) as AsyncIterable<unknown>) {
            if (cancelled) break;
            if (!call.write(item)) await new Promise((resolve) => call.once('drain', resolve));
          }
          if (!cancelled) call.end();
        } catch (err) {
          if (!cancelled) call.emit('error', toServiceError(err));
        }
      };
    } else {
      impl[name] = (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        let result: unknown;
        try {
          result = handler(call.request, call);
        } catch (err) {
          callback(toServiceError(err));
          return;
        }
        Promise.resolve(result).then(
          (response) => callback(null, response ?? {}),
          (err) => callback(toServiceError(err)),
        );
      };
    }
  }
  return impl;
}

export interface UnaryCallOptions {
  metadata?: grpc.Metadata;
  /** Deadline in milliseconds from now. */
  timeoutMs?: number;
  /** Cancels the call when aborted (the call fails CANCELLED). */
  signal?: AbortSignal;
  /** Receives the response headers as metadata (not called for a trailers-only response). */
  onMetadata?: (metadata: grpc.Metadata) => void;
  /** Receives the final status with the trailing metadata, OK included. */
  onStatus?: (status: grpc.StatusObject) => void;
}

/** Calls a unary RPC on a typed client and returns a promise of the response. */
export function unaryCall<M, K extends keyof M & string>(
  client: grpc.Client & { readonly __methods?: M },
  method: K,
  request: M[K] extends MethodShape ? M[K]['request'] : never,
  options: UnaryCallOptions = {},
): Promise<M[K] extends MethodShape ? M[K]['response'] : never> {
  const fn = (client as unknown as Record<string, UnaryMethod<unknown, unknown>>)[method];
  if (typeof fn !== 'function') return Promise.reject(new TypeError(`no RPC named ${method}`));
  const callOptions: Partial<grpc.CallOptions> = {};
  if (options.timeoutMs !== undefined) callOptions.deadline = Date.now() + options.timeoutMs;
  return new Promise((resolve, reject) => {
    fn.call(client, request, options.metadata ?? new grpc.Metadata(), callOptions, (err, response) => {
      if (err) reject(err);
      else resolve(response as never);
    });
  });
}

/** Collects every message of a server-streaming call. */
export function collectStream<T>(stream: grpc.ClientReadableStream<T>): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const items: T[] = [];
    stream.on('data', (item: T) => items.push(item));
    stream.on('error', reject);
    stream.on('end', () => resolve(items));
  });
}

/** The unary RPCs of a service as promise-returning functions: one calling convention for both paths. */
export type PromiseApi<M> = {
  [K in keyof M as M[K] extends MethodShape ? (M[K]['responseStream'] extends true ? never : K) : never]: M[K] extends MethodShape
    ? (request: M[K]['request'], options?: UnaryCallOptions) => Promise<M[K]['response']>
    : never;
};

/**
 * What promiseClient drives: a grpc-js client (any generated one, or a bare `grpc.Client`) or an
 * {@link Http2GrpcChannel}; both have grpc-js's `makeUnaryRequest`.
 */
export interface UnaryRequester {
  makeUnaryRequest(
    path: string,
    serialize: (value: any) => Buffer,
    deserialize: (bytes: Buffer) => any,
    request: any,
    metadata: grpc.Metadata | undefined,
    options: Partial<grpc.CallOptions>,
    callback: (err: grpc.ServiceError | null, value?: any) => void,
  ): UnaryCallHandle;
}

/** The parts of a started call promiseClient uses (grpc-js ClientUnaryCall or Http2UnaryCall). */
interface UnaryCallHandle {
  cancel(): void;
  on?(event: string, listener: (...args: any[]) => void): unknown;
  onMetadata?: ((md: grpc.Metadata) => void) | undefined;
  onStatus?: ((st: grpc.StatusObject) => void) | undefined;
}

const NO_CALL_OPTIONS: Partial<grpc.CallOptions> = {};

/** A promise API over a socket client: a grpc-js client or an Http2GrpcChannel. Streaming RPCs are left out. */
export function promiseClient<M>(definition: ServiceDefinitionOf<M>, client: UnaryRequester): PromiseApi<M> {
  const api: Record<string, unknown> = {};
  // grpc-js insists on a Metadata object; the http2 client takes none, and an empty one costs it headers work.
  const lean = client instanceof Http2GrpcChannel;
  for (const [name, method] of Object.entries(definition as grpc.ServiceDefinition)) {
    if (method.responseStream || method.requestStream) continue;
    const { path, requestSerialize, responseDeserialize } = method;
    api[name] = (request: object, options?: UnaryCallOptions) =>
      new Promise((resolve, reject) => {
        const signal = options?.signal;
        if (signal?.aborted) {
          reject(Object.assign(new Error(`${grpc.status.CANCELLED} CANCELLED: Cancelled on client`), {
            code: grpc.status.CANCELLED,
            details: 'Cancelled on client',
            metadata: new grpc.Metadata(),
          }));
          return;
        }
        const callOptions =
          options?.timeoutMs !== undefined ? { deadline: Date.now() + options.timeoutMs } : NO_CALL_OPTIONS;
        const onAbort = () => call.cancel();
        const call = client.makeUnaryRequest(
          path,
          requestSerialize,
          responseDeserialize,
          request,
          options?.metadata ?? (lean ? undefined : new grpc.Metadata()),
          callOptions,
          (err, response) => {
            signal?.removeEventListener('abort', onAbort);
            if (err) reject(err);
            else resolve(response);
          },
        );
        if (options?.onMetadata || options?.onStatus) {
          if ('onStatus' in call) {
            call.onMetadata = options.onMetadata;
            call.onStatus = options.onStatus;
          } else {
            if (options.onMetadata) call.on!('metadata', options.onMetadata);
            if (options.onStatus) call.on!('status', options.onStatus);
          }
        }
        signal?.addEventListener('abort', onAbort, { once: true });
      });
  }
  return api as PromiseApi<M>;
}

/** The error an in-process call rejects with: shaped like grpc-js's ServiceError (code, details). */
export class InProcessCallError extends Error {
  readonly details: string;
  constructor(
    readonly code: grpc.status,
    details: string,
    readonly method: string,
  ) {
    super(`${code} ${grpc.status[code]}: ${details}`);
    this.name = 'InProcessCallError';
    this.details = details;
  }
}

export interface InProcessOptions {
  /**
   * Pass requests and responses through the protobuf encoder and decoder, exactly as a socket would
   * (defaults filled, unknown fields dropped, callers and servers never share objects). Default true.
   */
  serialize?: boolean;
}

/**
 * A promise API that calls service handlers directly in this process: the path the composed cluster takes
 * at scale, with the same message semantics and status codes as the socket path.
 */
export function inProcessApi<M>(
  definition: ServiceDefinitionOf<M>,
  handlers: ServiceHandlers<M>,
  options: InProcessOptions = {},
): PromiseApi<M> {
  const serialize = options.serialize ?? true;
  const fakeCall = { metadata: new grpc.Metadata(), getPeer: () => 'in-process', cancelled: false } as unknown;
  const api: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(definition as grpc.ServiceDefinition)) {
    if (method.responseStream || method.requestStream) continue;
    const handler = (handlers as Record<string, ((req: unknown, call: unknown) => unknown) | undefined>)[name];
    api[name] = async (request: object) => {
      if (!handler) throw new InProcessCallError(grpc.status.UNIMPLEMENTED, `${name} is not implemented`, name);
      const req = serialize ? method.requestDeserialize(method.requestSerialize(request)) : request;
      let response: unknown;
      try {
        response = await handler(req, fakeCall);
      } catch (err) {
        const status = toServiceError(err);
        throw new InProcessCallError(status.code ?? grpc.status.UNKNOWN, status.details ?? '', name);
      }
      return serialize ? method.responseDeserialize(method.responseSerialize(response ?? {})) : (response ?? {});
    };
  }
  return api as PromiseApi<M>;
}
