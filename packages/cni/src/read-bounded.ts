/**
 * Size bounds for everything the CNI code reads on a request's behalf, and the bounded read of a descriptor
 * (stdin, which is no file to reopen). Files are read through read-file-bounded.ts, on @kemu/safe-fs.
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

export function tooLarge(o: BoundedRead, path?: string): CniError {
  return new CniError(
    o.badFileCode ?? CniErrorCode.IOFailure,
    `${o.what}${path ? ` ${path}` : ''} is larger than ${o.maxBytes} bytes`,
  );
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
