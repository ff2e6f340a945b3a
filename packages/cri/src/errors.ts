// gRPC status helpers: every protocol error the shim returns is built here, so codes stay consistent.
import * as grpc from '@grpc/grpc-js';
import { RpcError } from '@kemu/proto';

export { RpcError };

export const invalidArgument = (message: string) => new RpcError(grpc.status.INVALID_ARGUMENT, message);
export const notFound = (message: string) => new RpcError(grpc.status.NOT_FOUND, message);
export const alreadyExists = (message: string) => new RpcError(grpc.status.ALREADY_EXISTS, message);
export const failedPrecondition = (message: string) => new RpcError(grpc.status.FAILED_PRECONDITION, message);
export const unavailable = (message: string) => new RpcError(grpc.status.UNAVAILABLE, message);
export const deadlineExceeded = (message: string) => new RpcError(grpc.status.DEADLINE_EXCEEDED, message);
export const unimplemented = (message: string) => new RpcError(grpc.status.UNIMPLEMENTED, message);
export const internal = (message: string) => new RpcError(grpc.status.INTERNAL, message);

export function isRpcError(err: unknown, code?: grpc.status): err is RpcError {
  return err instanceof RpcError && (code === undefined || err.code === code);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
