// Errors carry the errno name and number the kernel would return for the same request, so callers
// (the CNI sim datapath) can map them to protocol codes exactly as they map real netlink errors.

export type ErrnoCode =
  | 'EPERM'
  | 'ENOENT'
  | 'ESRCH'
  | 'EEXIST'
  | 'ENODEV'
  | 'EINVAL'
  | 'EBUSY'
  | 'ENETDOWN'
  | 'ENETUNREACH'
  | 'EHOSTUNREACH'
  | 'EADDRNOTAVAIL'
  | 'EADDRINUSE'
  | 'ECONNREFUSED'
  | 'ETIMEDOUT'
  | 'EACCES'
  | 'ENOTSUP'
  | 'ERANGE'
  | 'ELOOP';

const ERRNO: Record<ErrnoCode, [number, string]> = {
  EPERM: [1, 'Operation not permitted'],
  ENOENT: [2, 'No such file or directory'],
  ESRCH: [3, 'No such process'],
  EACCES: [13, 'Permission denied'],
  EBUSY: [16, 'Device or resource busy'],
  EEXIST: [17, 'File exists'],
  ENODEV: [19, 'No such device'],
  EINVAL: [22, 'Invalid argument'],
  ERANGE: [34, 'Numerical result out of range'],
  ELOOP: [40, 'Too many levels of symbolic links'],
  ENOTSUP: [95, 'Operation not supported'],
  EADDRINUSE: [98, 'Address already in use'],
  EADDRNOTAVAIL: [99, 'Cannot assign requested address'],
  ENETDOWN: [100, 'Network is down'],
  ENETUNREACH: [101, 'Network is unreachable'],
  ETIMEDOUT: [110, 'Connection timed out'],
  ECONNREFUSED: [111, 'Connection refused'],
  EHOSTUNREACH: [113, 'Host is unreachable'],
};

export class NetsimError extends Error {
  readonly code: ErrnoCode;
  readonly errno: number;
  /** The kernel's strerror() text for the code. */
  readonly strerror: string;

  constructor(code: ErrnoCode, detail: string) {
    const [errno, text] = ERRNO[code];
    super(`${detail}: ${text}`);
    this.name = 'NetsimError';
    this.code = code;
    this.errno = errno;
    this.strerror = text;
  }
}

export function errnoOf(code: ErrnoCode): number {
  return ERRNO[code][0];
}

export function isNetsimError(e: unknown): e is NetsimError {
  return e instanceof NetsimError;
}
