import fs from 'node:fs';
import { FileTooLargeError } from './errors.js';

/**
 * Reads a whole file, refusing one larger than `maxBytes` before reading it (and stopping at the limit
 * should it grow meanwhile), so a file named or supplied by a request cannot exhaust memory.
 */
export function readFileBounded(file: string, maxBytes: number, what = 'file'): Buffer {
  const tooLarge = (size: string) =>
    new FileTooLargeError(file, maxBytes, `${what} ${file} is ${size} bytes long; at most ${maxBytes} are read`);
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    if (size > maxBytes) throw tooLarge(String(size));
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
