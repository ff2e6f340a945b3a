/**
 * Every file the CNI code reads on a request's behalf (stdin, conf files, cached results, IPAM state, a
 * `resolvConf` or any other path a config or an environment variable names) is read here: with a size
 * bound, from a regular file only, and with a CNI error that names what was read and why it failed.
 *
 * Files are opened O_NONBLOCK, so a FIFO named by a config fails at once instead of waiting for a writer,
 * and the checks are made on the opened descriptor (fstat), so a symlink swapped in between cannot make
 * us read something other than what was checked.
 *
 * Builtins come from process.getBuiltinModule so the plugin launcher can use this module too.
 */
import type * as FsT from 'node:fs';
import { CniError, CniErrorCode } from './errors.js';

const fs = process.getBuiltinModule('node:fs') as typeof FsT;

/** Size bounds, one per kind of input. */
export const READ_LIMITS = {
  /** A network configuration: stdin, a conf dir file, a delegate's saved config. */
  config: 4 << 20,
  /** A libcni result cache entry (the config's bytes in base64 plus the result). */
  cacheEntry: 8 << 20,
  /** Small text files: resolv.conf, subnet.env, one host-local state file. */
  small: 64 << 10,
  /** A simulated datapath's state file (a whole simulated node network). */
  simState: 256 << 20,
} as const;

export interface BoundedRead {
  /** Most bytes accepted; one more is an error. */
  maxBytes: number;
  /** What is read, for messages: `ipam "resolvConf"`, `conf file`, `host-local state`, ... */
  what: string;
  /**
   * The code for a file that exists but may not be read: not a regular file, or too large. Default 5 (I/O
   * failure); a path taken from a network config passes 7 (invalid network config).
   */
  badFileCode?: number;
}

const O_RDONLY = 0;
const O_NONBLOCK = 0o4000;
const O_CLOEXEC = 0o2000000;

function kindOf(st: FsT.Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

export function tooLarge(o: BoundedRead, path?: string): CniError {
  return new CniError(
    o.badFileCode ?? CniErrorCode.IOFailure,
    `${o.what}${path ? ` ${path}` : ''} is larger than ${o.maxBytes} bytes`,
  );
}

function ioError(o: BoundedRead, path: string, e: unknown): CniError {
  const err = e as NodeJS.ErrnoException;
  return new CniError(CniErrorCode.IOFailure, `cannot read ${o.what} ${path}: ${err.code ?? err.message}`, err.code ?? '');
}

/**
 * Reads `fd` to its end, failing once more than `o.maxBytes` arrived. `eof` is false when a non-blocking
 * descriptor had nothing more for now (EAGAIN): the caller continues in its own way with what was read.
 */
export function readFdBounded(fd: number, o: BoundedRead): { data: Buffer; eof: boolean } {
  const chunks: Buffer[] = [];
  let total = 0;
  const buf = Buffer.allocUnsafe(64 * 1024);
  for (;;) {
    let n: number;
    try {
      n = fs.readSync(fd, buf, 0, buf.length, null);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return { data: Buffer.concat(chunks), eof: false };
      if (code === 'EOF') return { data: Buffer.concat(chunks), eof: true };
      throw e;
    }
    if (n === 0) return { data: Buffer.concat(chunks), eof: true };
    total += n;
    if (total > o.maxBytes) throw tooLarge(o);
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
}

/**
 * The whole of a regular file at `path` (symlinks followed), at most `o.maxBytes` of it. Missing files,
 * unreadable ones, directories, devices, FIFOs, sockets and files over the bound are CNI errors.
 */
export function readFileBounded(path: string, o: BoundedRead): Buffer {
  const out = readFileBoundedIfExists(path, o);
  if (out === undefined) throw ioError(o, path, Object.assign(new Error('ENOENT'), { code: 'ENOENT' }));
  return out;
}

/** As {@link readFileBounded}, but a file that does not exist is `undefined`. */
export function readFileBoundedIfExists(path: string, o: BoundedRead): Buffer | undefined {
  let fd: number;
  try {
    fd = fs.openSync(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    // A directory opens read-only on Linux; EISDIR comes only from some other systems.
    if (code === 'EISDIR') throw new CniError(o.badFileCode ?? CniErrorCode.IOFailure, `${o.what} ${path} is a directory, not a regular file`);
    throw ioError(o, path, e);
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      throw new CniError(o.badFileCode ?? CniErrorCode.IOFailure, `${o.what} ${path} is ${kindOf(st)}, not a regular file`);
    }
    if (st.size > o.maxBytes) throw tooLarge(o, path);
    let r: { data: Buffer; eof: boolean };
    try {
      r = readFdBounded(fd, o);
    } catch (e) {
      if (e instanceof CniError) throw tooLarge(o, path);
      throw ioError(o, path, e);
    }
    return r.data;
  } finally {
    fs.closeSync(fd);
  }
}

/** {@link readFileBounded} as UTF-8 text. */
export const readTextBounded = (path: string, o: BoundedRead): string => readFileBounded(path, o).toString('utf8');

/** {@link readFileBoundedIfExists} as UTF-8 text. */
export function readTextBoundedIfExists(path: string, o: BoundedRead): string | undefined {
  return readFileBoundedIfExists(path, o)?.toString('utf8');
}
