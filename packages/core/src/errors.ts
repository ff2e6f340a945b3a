// Typed API errors. Each class carries the Kubernetes Status `reason` and HTTP `code` it stands for, so
// callers branch on the class (or `reason`) and the HTTP layer maps one-to-one without a lookup table.

export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'Gone'
  | 'Expired'
  | 'Forbidden'
  | 'BadRequest'
  | 'Unauthorized'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'TooManyRequests'
  | 'Timeout'
  | 'ServiceUnavailable'
  | 'InternalError';

/** Machine-readable type of one field error (Kubernetes `field.ErrorType`). */
export type CauseType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueDuplicate'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueNotFound';

export interface StatusCause {
  /** Dotted path with indices, e.g. `spec.containers[0].image`. */
  field: string;
  type: CauseType;
  /** Human text, e.g. `Required value` or `Invalid value: "x": must be ...`. */
  message: string;
}

/** Kubernetes `metav1.Status` as JSON. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: StatusReason;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: { reason: CauseType; message: string; field: string }[];
  };
  code: number;
}

export interface ResourceRef {
  /** Plural resource name, e.g. `pods`. */
  resource: string;
  /** API group, '' for core. */
  group: string;
  name: string;
  /** Kind, used by Invalid (`Pod "web" is invalid`). */
  kind?: string;
}

export function qualifiedResource(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}

export class StatusError extends Error {
  readonly reason: StatusReason;
  readonly code: number;
  readonly details: Status['details'];

  constructor(reason: StatusReason, code: number, message: string, details?: Status['details']) {
    super(message);
    this.name = `${reason}Error`;
    this.reason = reason;
    this.code = code;
    this.details = details;
  }

  /** The error as a Kubernetes Status object (what the API server would send). */
  toStatus(): Status {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

export class NotFoundError extends StatusError {
  constructor(ref: ResourceRef) {
    super('NotFound', 404, `${qualifiedResource(ref.resource, ref.group)} "${ref.name}" not found`, {
      name: ref.name,
      group: ref.group,
      kind: ref.resource,
    });
  }
}

export class AlreadyExistsError extends StatusError {
  constructor(ref: ResourceRef) {
    super('AlreadyExists', 409, `${qualifiedResource(ref.resource, ref.group)} "${ref.name}" already exists`, {
      name: ref.name,
      group: ref.group,
      kind: ref.resource,
    });
  }
}

export class ConflictError extends StatusError {
  constructor(ref: ResourceRef, why = 'the object has been modified; please apply your changes to the latest version and try again') {
    super(
      'Conflict',
      409,
      `Operation cannot be fulfilled on ${qualifiedResource(ref.resource, ref.group)} "${ref.name}": ${why}`,
      { name: ref.name, group: ref.group, kind: ref.resource },
    );
  }
}

export class InvalidError extends StatusError {
  readonly causes: StatusCause[];

  constructor(kind: string, name: string, group: string, causes: StatusCause[]) {
    const detail = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
    const joined = detail.length === 1 ? `: ${detail[0]}` : detail.length ? `: [${detail.join(', ')}]` : '';
    // The kind qualified by its group, as a GroupKind prints: `Deployment.apps`, but `Pod` for the core group.
    super('Invalid', 422, `${group ? `${kind}.${group}` : kind} "${name}" is invalid${joined}`, {
      name,
      group,
      kind,
      causes: causes.map((c) => ({ reason: c.type, message: c.message, field: c.field })),
    });
    this.causes = causes;
  }
}

/** 410: the requested data is no longer available. */
export class GoneError extends StatusError {
  constructor(message: string, reason: 'Gone' | 'Expired' = 'Gone') {
    super(reason, 410, message);
  }
}

/** 410 Expired: a watch or list asked for a resourceVersion older than the retained history. */
export class ExpiredError extends GoneError {
  constructor(message: string) {
    super(message, 'Expired');
  }
}

export class ForbiddenError extends StatusError {
  constructor(ref: ResourceRef, why: string) {
    super('Forbidden', 403, `${qualifiedResource(ref.resource, ref.group)} "${ref.name}" is forbidden: ${why}`, {
      name: ref.name,
      group: ref.group,
      kind: ref.resource,
    });
  }
}

export class BadRequestError extends StatusError {
  constructor(message: string) {
    super('BadRequest', 400, message);
  }
}

export class MethodNotAllowedError extends StatusError {
  constructor(message: string) {
    super('MethodNotAllowed', 405, message);
  }
}

export class TimeoutError extends StatusError {
  constructor(message: string) {
    super('Timeout', 504, message);
  }
}

export class ServiceUnavailableError extends StatusError {
  constructor(message: string) {
    super('ServiceUnavailable', 503, message);
  }
}

export class InternalError extends StatusError {
  constructor(message: string) {
    super('InternalError', 500, `Internal error occurred: ${message}`);
  }
}

export function isStatusError(err: unknown): err is StatusError {
  return err instanceof StatusError;
}
export const isNotFound = (err: unknown): boolean => isStatusError(err) && err.reason === 'NotFound';
export const isAlreadyExists = (err: unknown): boolean => isStatusError(err) && err.reason === 'AlreadyExists';
export const isConflict = (err: unknown): boolean => isStatusError(err) && err.reason === 'Conflict';
export const isInvalid = (err: unknown): boolean => isStatusError(err) && err.reason === 'Invalid';
/** True for both 410 reasons (Gone and Expired), which clients treat the same: relist. */
export const isGone = (err: unknown): boolean => isStatusError(err) && err.code === 410;
export const isForbidden = (err: unknown): boolean => isStatusError(err) && err.reason === 'Forbidden';
export const isBadRequest = (err: unknown): boolean => isStatusError(err) && err.reason === 'BadRequest';

/** Rebuild a typed error from a Status object (e.g. one received over the wire). */
export function errorFromStatus(s: Status): StatusError {
  const d = s.details ?? {};
  const ref = { resource: d.kind ?? '', group: d.group ?? '', name: d.name ?? '' };
  let e: StatusError;
  switch (s.reason) {
    case 'Invalid':
      e = new InvalidError(
        d.kind ?? '',
        d.name ?? '',
        d.group ?? '',
        (d.causes ?? []).map((c) => ({ field: c.field, type: c.reason, message: c.message })),
      );
      break;
    case 'NotFound':
      e = new NotFoundError(ref);
      break;
    case 'AlreadyExists':
      e = new AlreadyExistsError(ref);
      break;
    case 'Conflict':
      e = new ConflictError(ref);
      break;
    case 'Expired':
      e = new ExpiredError(s.message);
      break;
    case 'Gone':
      e = new GoneError(s.message);
      break;
    case 'BadRequest':
      e = new BadRequestError(s.message);
      break;
    default:
      e = new StatusError(s.reason, s.code, s.message, s.details);
  }
  // Keep the sender's exact text.
  (e as { message: string }).message = s.message;
  return e;
}
