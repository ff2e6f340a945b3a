/**
 * Files read on a request's behalf, as CNI errors: the read itself is @kemu/safe-fs's `readFileBounded`
 * (regular files only, opened O_NONBLOCK, checked on the opened descriptor, size-bounded); this module names
 * what was read in the message and picks the CNI code.
 */
import { FileTooLargeError, readFileBounded as readBounded, UnsafePathError } from '@kemu/safe-fs';
import { CniError, CniErrorCode } from './errors.js';
import type { BoundedRead } from './read-bounded.js';

function cniError(o: BoundedRead, path: string, e: unknown): CniError {
  const bad = o.badFileCode ?? CniErrorCode.IOFailure;
  if (e instanceof FileTooLargeError) return new CniError(bad, `${o.what} ${path} is larger than ${o.maxBytes} bytes`);
  if (e instanceof UnsafePathError) return new CniError(bad, `${o.what} ${path} is not a regular file`);
  const err = e as NodeJS.ErrnoException;
  return new CniError(CniErrorCode.IOFailure, `cannot read ${o.what} ${path}: ${err.code ?? err.message}`, err.code ?? '');
}

/** As {@link readFileBounded}, but a file that does not exist is `undefined`. */
export function readFileBoundedIfExists(path: string, o: BoundedRead): Buffer | undefined {
  try {
    return readBounded(path, o.maxBytes, o.what);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw cniError(o, path, e);
  }
}

/**
 * The whole of a regular file at `path` (symlinks followed), at most `o.maxBytes` of it. Missing files (code
 * 5), directories, devices, FIFOs, sockets and files over the bound (`o.badFileCode`, default 5) are CNI errors.
 */
export function readFileBounded(path: string, o: BoundedRead): Buffer {
  const out = readFileBoundedIfExists(path, o);
  if (out === undefined) throw cniError(o, path, Object.assign(new Error('ENOENT'), { code: 'ENOENT' }));
  return out;
}

/** {@link readFileBounded} as UTF-8 text. */
export const readTextBounded = (path: string, o: BoundedRead): string => readFileBounded(path, o).toString('utf8');

/** {@link readFileBoundedIfExists} as UTF-8 text. */
export function readTextBoundedIfExists(path: string, o: BoundedRead): string | undefined {
  return readFileBoundedIfExists(path, o)?.toString('utf8');
}
