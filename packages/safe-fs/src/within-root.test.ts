import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnsafePathError } from './errors.js';
import { isWithin, resolveWithin } from './within-root.js';

let tmp: string;
let root: string;
let outside: string;

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'safe-fs-')));
  root = path.join(tmp, 'root');
  outside = path.join(tmp, 'outside');
  fs.mkdirSync(root);
  fs.mkdirSync(outside);
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const reasonOf = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    if (e instanceof UnsafePathError) return e.reason;
    throw e;
  }
  return 'accepted';
};

describe('isWithin', () => {
  it('compares whole components, not string prefixes', () => {
    expect(isWithin('/a/b', '/a')).toBe(true);
    expect(isWithin('/ab', '/a')).toBe(false);
    expect(isWithin('/a/..b', '/a')).toBe(true);
    expect(isWithin('/a', '/a')).toBe(false);
    expect(isWithin('/a', '/a', true)).toBe(true);
  });
});

describe('resolveWithin', () => {
  it('accepts a path below the root, existing or not', () => {
    fs.mkdirSync(path.join(root, 'pods'));
    expect(resolveWithin(path.join(root, 'pods', 'a', 'b'), [root]).real).toBe(path.join(root, 'pods', 'a', 'b'));
  });

  it('refuses relative paths, NUL bytes, ".." segments and paths outside every root', () => {
    expect(reasonOf(() => resolveWithin('pods/a', [root]))).toBe('invalid');
    expect(reasonOf(() => resolveWithin(`${root}/a\0b`, [root]))).toBe('invalid');
    expect(reasonOf(() => resolveWithin(`${root}/../outside/x`, [root]))).toBe('invalid');
    expect(reasonOf(() => resolveWithin(`${outside}/x`, [root]))).toBe('outside-root');
    expect(reasonOf(() => resolveWithin(root, [root]))).toBe('outside-root');
    expect(reasonOf(() => resolveWithin(root, [root], { allowRoot: true }))).toBe('accepted');
  });

  it('refuses an existing path that a symbolic link leads out of the root', () => {
    fs.symlinkSync(outside, path.join(root, 'link'));
    expect(reasonOf(() => resolveWithin(path.join(root, 'link'), [root]))).toBe('escapes-root');
    expect(reasonOf(() => resolveWithin(path.join(root, 'link', 'new', 'dir'), [root]))).toBe('escapes-root');
  });

  it('refuses a path through a dangling symbolic link', () => {
    fs.symlinkSync(path.join(outside, 'missing'), path.join(root, 'dangling'));
    expect(reasonOf(() => resolveWithin(path.join(root, 'dangling', 'x'), [root]))).toBe('symlink');
  });

  it('accepts a link that stays inside the root and reports where it leads', () => {
    fs.mkdirSync(path.join(root, 'data'));
    fs.symlinkSync(path.join(root, 'data'), path.join(root, 'alias'));
    expect(resolveWithin(path.join(root, 'alias', 'x'), [root]).real).toBe(path.join(root, 'data', 'x'));
  });

  it('resolves links in the configured root itself (a trusted setting)', () => {
    fs.symlinkSync(root, path.join(tmp, 'root-alias'));
    const r = resolveWithin(path.join(tmp, 'root-alias', 'x'), [path.join(tmp, 'root-alias')]);
    expect(r.realRoot).toBe(root);
    expect(r.real).toBe(path.join(root, 'x'));
  });
});
