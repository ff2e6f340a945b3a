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
 * The real path of each configured root, resolved once: roots are configuration, not request data, and
 * resolving one costs a readlink per component of its path on every call. An entry is used only while it
 * is still a directory and not a link (one lstat); otherwise the root is resolved again.
 */
const realRoots = new Map<string, string>();

function realRootOf(root: string): string {
  const cached = realRoots.get(root);
  if (cached !== undefined) {
    const st = fs.lstatSync(cached, { throwIfNoEntry: false });
    if (st?.isDirectory()) return cached;
    realRoots.delete(root);
  }
  const { existing, missing } = splitExisting(root, 'allowed root');
  if (missing.length > 0) return path.join(existing, ...missing);
  if (realRoots.size >= 1024) realRoots.clear();
  realRoots.set(root, existing);
  return existing;
}

/**
 * The path below an existing real root, walked down from it with one lstat per component: where no
 * component is a link, the real path is the root's plus the components as written and the walk stops at
 * the first missing one. Undefined when a link is met: the caller then resolves the path in full.
 */
function walkBelow(realRoot: string, rel: string): { existing: string; missing: string[] } | undefined {
  if (rel === '') return { existing: realRoot, missing: [] };
  const parts = rel.split(path.sep);
  let cur = realRoot;
  for (let i = 0; i < parts.length; i++) {
    const next = cur === path.sep ? `${cur}${parts[i]}` : `${cur}${path.sep}${parts[i]}`;
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(next, { throwIfNoEntry: false });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOTDIR') throw e;
    }
    if (st === undefined) return { existing: cur, missing: parts.slice(i) };
    if (st.isSymbolicLink()) return undefined;
    cur = next;
  }
  return { existing: cur, missing: [] };
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
  const realRoot = realRootOf(root);
  // An existing root is walked down from; a path through a link, or under a missing root, is resolved whole.
  const below = realRoots.get(root) === realRoot ? walkBelow(realRoot, path.relative(root, norm)) : undefined;
  const { existing, missing } = below ?? splitExisting(norm, what);
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
