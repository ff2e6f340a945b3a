// Test support: a fresh temporary tree per test with an allowed `root` and a sibling `outside` that links
// planted under the root try to reach.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';

export interface RootAndOutside {
  tmp: string;
  root: string;
  outside: string;
}

/**
 * Where the "...Async" creators take each of their two paths: synchronous calls on a memory file system,
 * the thread pool on a disk. memory-fs.test.ts checks that each really is of its kind here.
 */
export const FILESYSTEMS: ReadonlyArray<readonly [kind: string, base: string]> = [
  ['a memory file system', '/dev/shm'],
  ['a disk', '/var/tmp'],
];

/**
 * Registers the per-test setup and teardown (a fresh tree under `base`); read the paths from the returned
 * object inside a test.
 */
export function useRootAndOutside(base = os.tmpdir()): RootAndOutside {
  const t = { tmp: '', root: '', outside: '' };
  beforeEach(() => {
    t.tmp = fs.realpathSync(fs.mkdtempSync(path.join(base, 'safe-fs-')));
    t.root = path.join(t.tmp, 'root');
    t.outside = path.join(t.tmp, 'outside');
    fs.mkdirSync(t.root);
    fs.mkdirSync(t.outside);
  });
  afterEach(() => fs.rmSync(t.tmp, { recursive: true, force: true }));
  return t;
}
