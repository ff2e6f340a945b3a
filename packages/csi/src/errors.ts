import { status } from '@grpc/grpc-js';

/** gRPC status codes used by the CSI spec's error tables (numeric, as on the wire). */
export const Code = {
  OK: status.OK,
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  ALREADY_EXISTS: status.ALREADY_EXISTS,
  RESOURCE_EXHAUSTED: status.RESOURCE_EXHAUSTED,
  FAILED_PRECONDITION: status.FAILED_PRECONDITION,
  ABORTED: status.ABORTED,
  OUT_OF_RANGE: status.OUT_OF_RANGE,
  UNIMPLEMENTED: status.UNIMPLEMENTED,
  INTERNAL: status.INTERNAL,
  UNAVAILABLE: status.UNAVAILABLE,
} as const;
export type CodeValue = (typeof Code)[keyof typeof Code];

/**
 * A protocol error from the driver core. The service layer turns it into a gRPC status with the same
 * code and message; anything else that escapes becomes INTERNAL.
 */
export class CsiError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.name = 'CsiError';
    this.code = code;
  }
}

export const invalid = (msg: string) => new CsiError(Code.INVALID_ARGUMENT, msg);
export const notFound = (msg: string) => new CsiError(Code.NOT_FOUND, msg);
export const alreadyExists = (msg: string) => new CsiError(Code.ALREADY_EXISTS, msg);
export const precondition = (msg: string) => new CsiError(Code.FAILED_PRECONDITION, msg);
export const exhausted = (msg: string) => new CsiError(Code.RESOURCE_EXHAUSTED, msg);
export const outOfRange = (msg: string) => new CsiError(Code.OUT_OF_RANGE, msg);
export const aborted = (msg: string) => new CsiError(Code.ABORTED, msg);
export const unimplemented = (msg: string) => new CsiError(Code.UNIMPLEMENTED, msg);
export const internal = (msg: string) => new CsiError(Code.INTERNAL, msg);

/** Name of a numeric gRPC status code ("NOT_FOUND"), for logs and messages. */
export function codeName(code: number): string {
  for (const [k, v] of Object.entries(status)) if (v === code && Number.isNaN(Number(k))) return k;
  return String(code);
}

/** Parse a code given by name ("NOT_FOUND") or number ("5"); used by failure injection flags. */
export function parseCode(text: string): number {
  const n = Number(text);
  if (Number.isInteger(n) && n > 0 && n <= 16) return n;
  const v = (status as unknown as Record<string, number>)[text.toUpperCase()];
  if (typeof v !== 'number' || v === 0)
    throw new Error(`unknown gRPC status code "${text}" (use a name like NOT_FOUND or a number 1-16)`);
  return v;
}
