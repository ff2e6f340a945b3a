// "Is this path inside the allowed root?" answered for the file system as it is, not only for the string:
// the existing part of the path is resolved (symbolic links followed, as the kernel would) and must stay
// inside the resolved root; the part that does not exist yet holds no link by definition, and is created
// by mkdirWithin/openFileWithin, which refuse to follow one.
import fs from 'node:fs';
import path from 'node:path';
import { UnsafePathError } from './errors.js';

export interface WithinOptions {
  /** Accept the root itself (default false: the path must lie strictly below a root). */
  allowRoot?: boolean;
  /** Names the path in error messages, e.g. "target_path" (default "path"). */
  what?: string;
}

export interface ResolvedPath {
  /** The allowed root the path lies under, as configured (absolute, normalised). */
  root: string;
  /** That root with its symbolic links resolved. */
  realRoot: string;
  /** The path as written, normalised. */
  path: string;
  /** The path with the links of its existing part resolved; what the kernel would reach now. */
  real: string;
  /** The components at the end of the path that do not exist yet (empty when it all exists). */
  missing: readonly string[];
}

/** True when `child` is `parent` (with allowEqual) or lies below it; both absolute and normalised. */
export function isWithin(child: string, parent: string, allowEqual = false): boolean {
  const rel = path.relative(parent, child);
  if (rel === '') return allowEqual;
  return rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/** Refuses what no root check should have to reason about: relative paths, NUL bytes, ".." segments. */
export function checkPathSyntax(p: string, what = 'path'): string {
  if (typeof p !== 'string' || p === '') throw new UnsafePathError('invalid', String(p), `${what} must not be empty`);
  if (p.includes('\0')) throw new UnsafePathError('invalid', p, `${what} must not contain a NUL byte`);
  if (!path.isAbsolute(p)) throw new UnsafePathError('invalid', p, `${what} ${JSON.stringify(p)} must be an absolute path`);
  if (p.split('/').includes('..')) {
    throw new UnsafePathError('invalid', p, `${what} ${JSON.stringify(p)} must not contain ".." segments`);
  }
  return path.resolve(p);
}

/** lstat without an exception for what is missing (ENOENT, or ENOTDIR below a file). */
function exists(p: string): boolean {
  try {
    return fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw e;
  }
}

/**
 * The path with every symbolic link in its existing part resolved; the missing rest is appended as written.
 * A dangling link on the way is refused: what it would create is decided by whoever controls the link.
 */
export function realPathOfExisting(p: string, what = 'path'): string {
  const { existing, missing } = splitExisting(p, what);
  return missing.length === 0 ? existing : path.join(existing, ...missing);
}

/** The real path of the part of `p` that exists, and the names of the missing components after it, in order. */
function splitExisting(p: string, what: string): { existing: string; missing: string[] } {
  // Walk up with lstat (no exception for a missing entry: this runs on every publish and container start),
  // then resolve the existing prefix with one realpath(3).
  const rest: string[] = [];
  let cur = p;
  for (;;) {
    if (exists(cur)) break;
    const parent = path.dirname(cur);
    if (parent === cur) return { existing: cur, missing: rest.reverse() };
    rest.push(path.basename(cur));
    cur = parent;
  }
  let real: string;
  try {
    real = fs.realpathSync.native(cur);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'ELOOP') throw e;
    throw new UnsafePathError('symlink', p, `${what} ${JSON.stringify(p)} goes through ${cur}, a symbolic link that does not resolve`);
  }
  return { existing: real, missing: rest.reverse() };
}

/**
 * Checks that `p` lies under one of `roots`, both as written and once the symbolic links of its existing
 * part are followed. Throws UnsafePathError otherwise.
 */
export function resolveWithin(p: string, roots: readonly string[], opts: WithinOptions = {}): ResolvedPath {
  const what = opts.what ?? 'path';
  const norm = checkPathSyntax(p, what);
  const root = roots.map((r) => path.resolve(r)).find((r) => isWithin(norm, r, opts.allowRoot));
  if (root === undefined) {
    throw new UnsafePathError(
      'outside-root',
      p,
      `${what} ${JSON.stringify(p)} is outside the allowed roots (${roots.join(', ')})`,
    );
  }
  const realRoot = realPathOfExisting(root, 'allowed root');
  const { existing, missing } = splitExisting(norm, what);
  const real = missing.length === 0 ? existing : path.join(existing, ...missing);
  if (!isWithin(real, realRoot, opts.allowRoot)) {
    throw new UnsafePathError(
      'escapes-root',
      p,
      `${what} ${JSON.stringify(p)} leads to ${real} through a symbolic link, outside the allowed root ${root}`,
    );
  }
  return { root, realRoot, path: norm, real, missing };
}
