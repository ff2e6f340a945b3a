import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { UnsafePathError } from './errors.js';
import { onMemoryFilesystem } from './memory-fs.js';
import { mkdirWithin, mkdirWithinAsync } from './mkdir-within.js';

export interface OpenedFile {
  fd: number;
  /** The real path of the opened file. */
  path: string;
}

/**
 * Opens (by default creates or appends to) regular file `file` under `root`: missing parent directories are
 * made by mkdirWithin, and the file itself is opened with O_NOFOLLOW, so a symbolic link in its place is
 * refused rather than followed. Anything but a regular file is refused too.
 */
export function openFileWithin(
  root: string,
  file: string,
  opts: { flags?: number; mode?: number; dirMode?: number; what?: string } = {},
): OpenedFile {
  const what = opts.what ?? 'file';
  const { O_APPEND, O_CREAT, O_WRONLY, O_NOFOLLOW } = fs.constants;
  const dir = mkdirWithin(root, path.dirname(path.resolve(file)), opts.dirMode ?? 0o755, what);
  const real = path.join(dir, path.basename(file));
  let fd: number;
  try {
    fd = fs.openSync(real, (opts.flags ?? O_WRONLY | O_APPEND | O_CREAT) | O_NOFOLLOW, opts.mode ?? 0o640);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new UnsafePathError('symlink', file, `${what} ${JSON.stringify(file)} is a symbolic link; refusing to follow it`);
    }
    throw e;
  }
  if (!fs.fstatSync(fd).isFile()) {
    fs.closeSync(fd);
    throw notRegular(file, what);
  }
  return { fd, path: real };
}

const notRegular = (file: string, what: string) => new UnsafePathError('not-directory', file, `${what} ${JSON.stringify(file)} is not a regular file`);

/**
 * openFileWithin with the directory creation and the open off the event loop (the checks are the same):
 * for servers that create a file per request (a container log per StartContainer), where synchronous
 * mkdir and open calls would stall every call in flight.
 */
export async function openFileWithinAsync(
  root: string,
  file: string,
  opts: { flags?: number; mode?: number; dirMode?: number; what?: string } = {},
): Promise<{ handle: fsp.FileHandle; path: string }> {
  const what = opts.what ?? 'file';
  const { O_APPEND, O_CREAT, O_WRONLY, O_NOFOLLOW } = fs.constants;
  const dir = await mkdirWithinAsync(root, path.dirname(path.resolve(file)), opts.dirMode ?? 0o755, what);
  const real = path.join(dir, path.basename(file));
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(real, (opts.flags ?? O_WRONLY | O_APPEND | O_CREAT) | O_NOFOLLOW, opts.mode ?? 0o640);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new UnsafePathError('symlink', file, `${what} ${JSON.stringify(file)} is a symbolic link; refusing to follow it`);
    }
    throw e;
  }
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw notRegular(file, what);
  }
  return { handle, path: real };
}

/**
 * Makes sure regular file `file` exists under `root` (created empty if missing, its directories made) with
 * openFileWithin's checks, and closes it; returns its real path. For a file created per request (a container
 * log at StartContainer): off the event loop, except under a root on a memory file system, where the
 * synchronous calls wait for no disk and cost the loop several times less.
 */
export async function createFileWithinAsync(
  root: string,
  file: string,
  opts: { mode?: number; dirMode?: number; what?: string } = {},
): Promise<string> {
  // O_NONBLOCK: a FIFO planted in the file's place fails the open (ENXIO) instead of blocking it.
  const { O_APPEND, O_CREAT, O_WRONLY, O_NONBLOCK } = fs.constants;
  const o = { ...opts, flags: O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK };
  if (onMemoryFilesystem(root)) {
    const { fd, path: real } = openFileWithin(root, file, o);
    fs.closeSync(fd);
    return real;
  }
  const { handle, path: real } = await openFileWithinAsync(root, file, o);
  await handle.close();
  return real;
}
