import fs from 'node:fs';
import { FileTooLargeError, UnsafePathError } from './errors.js';

/**
 * Reads a whole regular file, refusing one larger than `maxBytes` before reading it (and stopping at the
 * limit should it grow meanwhile), so a file named or supplied by a request cannot exhaust memory. The file
 * is opened O_NONBLOCK, so a FIFO in its place fails at once instead of waiting for a writer.
 */
export function readFileBounded(file: string, maxBytes: number, what = 'file'): Buffer {
  const tooLarge = (size: string) =>
    new FileTooLargeError(file, maxBytes, `${what} ${file} is ${size} bytes long; at most ${maxBytes} are read`);
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new UnsafePathError('not-directory', file, `${what} ${file} is not a regular file`);
    if (st.size > maxBytes) throw tooLarge(String(st.size));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(64 * 1024, maxBytes + 1 - total));
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      total += n;
      if (total > maxBytes) throw tooLarge(`more than ${maxBytes}`);
    }
    return Buffer.concat(chunks, total);
  } finally {
    fs.closeSync(fd);
  }
}
