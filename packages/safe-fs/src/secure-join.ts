import fs from 'node:fs';
import path from 'node:path';
import { UnsafePathError } from './errors.js';

/** As many links as Linux follows in one lookup before ELOOP. */
const MAX_LINKS = 40;

/**
 * Joins `unsafePath` to `root` the way the path resolves for a process whose root directory is `root`
 * (a container's root file system): symbolic links met on the way are followed, an absolute target starts
 * again at `root`, and ".." never climbs above it, so the result always lies inside `root` (the semantics of
 * filepath-securejoin's SecureJoin). Components that do not exist are appended as written. The result has
 * no symbolic link in its existing part, so mkdir, open and mount can be pointed at it directly; it is
 * only as current as the moment of the call.
 */
export function secureJoin(root: string, unsafePath: string): string {
  if (unsafePath.includes('\0')) throw new UnsafePathError('invalid', unsafePath, `path ${JSON.stringify(unsafePath)} must not contain a NUL byte`);
  const base = path.resolve(root);
  const parts = unsafePath.split('/');
  const done: string[] = [];
  let links = 0;
  while (parts.length > 0) {
    const part = parts.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      done.pop();
      continue;
    }
    const full = path.join(base, ...done, part);
    const st = fs.lstatSync(full, { throwIfNoEntry: false });
    if (!st?.isSymbolicLink()) {
      done.push(part);
      continue;
    }
    if (++links > MAX_LINKS) {
      throw new UnsafePathError('symlink', unsafePath, `path ${JSON.stringify(unsafePath)} under ${base} goes through more than ${MAX_LINKS} symbolic links`);
    }
    const target = fs.readlinkSync(full);
    if (path.isAbsolute(target)) done.length = 0;
    parts.unshift(...target.split('/'));
  }
  return path.join(base, ...done);
}
