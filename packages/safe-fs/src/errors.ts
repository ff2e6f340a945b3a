/** Why a path was refused. */
export type UnsafePathReason =
  /** not absolute, contains NUL or a ".." segment */
  | 'invalid'
  /** lexically outside every allowed root */
  | 'outside-root'
  /** inside a root as written, but a symbolic link on the way leads out of it */
  | 'escapes-root'
  /** a symbolic link where a directory or file was to be created */
  | 'symlink'
  /** an existing component is not a directory (or the target is not a regular file) */
  | 'not-directory';

/** A path taken from a request that must not be used; callers map it to their protocol's invalid-argument error. */
export class UnsafePathError extends Error {
  override readonly name = 'UnsafePathError';

  constructor(
    readonly reason: UnsafePathReason,
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

/** A file that is larger than the reader agreed to hold in memory. */
export class FileTooLargeError extends Error {
  override readonly name = 'FileTooLargeError';

  constructor(
    readonly path: string,
    readonly limit: number,
    message: string,
  ) {
    super(message);
  }
}
