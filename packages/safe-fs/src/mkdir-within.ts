import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { UnsafePathError } from './errors.js';
import { onMemoryFilesystem } from './memory-fs.js';
import { isWithin, type ResolvedPath, resolveWithin } from './within-root.js';

/** What was made (or found) at one component must be a real directory, never a link. */
function checkComponent(st: fs.Stats, cur: string, dir: string, what: string): void {
  if (st.isSymbolicLink()) {
    throw new UnsafePathError('symlink', dir, `${what} ${JSON.stringify(dir)}: ${cur} is a symbolic link; refusing to follow it`);
  }
  if (!st.isDirectory()) {
    throw new UnsafePathError('not-directory', dir, `${what} ${JSON.stringify(dir)}: ${cur} exists and is not a directory`);
  }
}

/**
 * Creates directory `dir` (and its missing parents) under `root` (made too if missing), one component at a
 * time below the root: each component is made with a non-recursive mkdir and then lstat-checked, so a
 * symbolic link met on the way (planted before or during the call) is refused instead of followed. Returns the directory's real path, which
 * callers should use from then on rather than walking `dir` again.
 */
export function mkdirWithin(root: string, dir: string, mode = 0o755, what = 'directory'): string {
  return createPlanned(resolveWithin(dir, [root], { allowRoot: true, what }), dir, mode, what);
}

/** mkdirWithin's creation, for a path resolveWithin has checked. */
function createPlanned(r: ResolvedPath, dir: string, mode: number, what: string): string {
  const { start, parts, rootMissing } = creationPlan(r);
  // The root is configuration, not request data: a missing one is made as a plain `mkdir -p`.
  if (rootMissing) fs.mkdirSync(r.realRoot, { recursive: true, mode });
  let cur = start;
  if (parts.length === 0) checkComponent(fs.lstatSync(cur), cur, dir, what);
  for (const part of parts) {
    cur = path.join(cur, part);
    try {
      fs.mkdirSync(cur, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    checkComponent(fs.lstatSync(cur), cur, dir, what);
  }
  return cur;
}

/**
 * Where creation starts and which components it makes. The existing part of the path was resolved (links
 * followed) and found inside the root by resolveWithin, so only the missing components are made and checked
 * one by one. A missing root is made first, and then every component below it is walked.
 */
function creationPlan(r: ResolvedPath): { start: string; parts: string[]; rootMissing: boolean } {
  const existing = r.missing.length === 0 ? r.real : path.join(r.real, ...r.missing.map(() => '..'));
  if (isWithin(existing, r.realRoot, true)) return { start: existing, parts: [...r.missing], rootMissing: false };
  const rel = path.relative(r.realRoot, r.real);
  return { start: r.realRoot, parts: rel === '' ? [] : rel.split(path.sep), rootMissing: true };
}

/**
 * mkdirWithin with the creation off the event loop (the checks are the same): for servers that create a
 * directory per request, where a slow disk would otherwise stall every call in flight. Under a root on a
 * memory file system, where no call waits for a disk, the creation is done synchronously instead.
 */
export async function mkdirWithinAsync(root: string, dir: string, mode = 0o755, what = 'directory'): Promise<string> {
  const r = resolveWithin(dir, [root], { allowRoot: true, what });
  if (onMemoryFilesystem(r.realRoot)) return createPlanned(r, dir, mode, what);
  const { start, parts, rootMissing } = creationPlan(r);
  if (rootMissing) await fsp.mkdir(r.realRoot, { recursive: true, mode });
  let cur = start;
  if (parts.length === 0) checkComponent(await fsp.lstat(cur), cur, dir, what);
  for (const part of parts) {
    cur = path.join(cur, part);
    try {
      await fsp.mkdir(cur, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    checkComponent(await fsp.lstat(cur), cur, dir, what);
  }
  return cur;
}
