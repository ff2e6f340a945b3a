import { isDatapathError } from './datapath.js';

/** CNI error codes (spec section "Error"); 100 and up are ours. */
export const CniErrorCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironment: 4,
  IOFailure: 5,
  DecodingFailure: 6,
  InvalidNetworkConfig: 7,
  TryAgainLater: 11,
  PluginNotAvailable: 50,
  LimitedConnectivity: 51,
  /** A datapath operation failed (details carry the errno-style code). */
  Datapath: 100,
  /** IPAM has no free address left in any range. */
  NoAddressAvailable: 101,
  /** A requested IP is outside every range or already allocated to someone else. */
  AddressUnavailable: 102,
  /** A delegated plugin (IPAM) could not be found on CNI_PATH / in the registry. */
  PluginNotFound: 103,
  /** CHECK found the container's network differs from the cached result. */
  CheckFailed: 104,
  Internal: 999,
} as const;

export class CniError extends Error {
  override readonly name = 'CniError';
  constructor(
    readonly code: number,
    msg: string,
    readonly details = '',
  ) {
    super(msg);
  }

  toJSON(cniVersion: string): { cniVersion: string; code: number; msg: string; details?: string } {
    const out: { cniVersion: string; code: number; msg: string; details?: string } = {
      cniVersion,
      code: this.code,
      msg: this.message,
    };
    if (this.details) out.details = this.details;
    return out;
  }
}

/** The one place where any thrown value becomes a CNI error: no stack traces ever reach stdout. */
export function toCniError(e: unknown): CniError {
  if (e instanceof CniError) return e;
  // A CniError from another bundled copy of this module: same shape, different class.
  if (e instanceof Error && e.name === 'CniError' && typeof (e as { code?: unknown }).code === 'number') {
    const o = e as Error & { code: number; details?: string };
    return new CniError(o.code, o.message, o.details);
  }
  if (isDatapathError(e)) {
    switch (e.code) {
      case 'EBUSY':
      case 'ETIMEDOUT':
        return new CniError(CniErrorCode.TryAgainLater, e.message, e.code);
      case 'EIO':
        return new CniError(CniErrorCode.IOFailure, e.message, e.code);
      default:
        return new CniError(CniErrorCode.Datapath, e.message, e.code);
    }
  }
  const err = e as NodeJS.ErrnoException;
  if (err && typeof err.code === 'string' && typeof err.syscall === 'string') {
    return new CniError(CniErrorCode.IOFailure, `${err.syscall} failed: ${err.code}`, err.path ?? '');
  }
  if (e instanceof Error) return new CniError(CniErrorCode.Internal, e.message);
  return new CniError(CniErrorCode.Internal, String(e));
}

export const invalidConfig = (msg: string): CniError => new CniError(CniErrorCode.InvalidNetworkConfig, msg);
