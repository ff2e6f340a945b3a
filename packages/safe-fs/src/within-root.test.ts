import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useRootAndOutside } from './test-util.js';
import { UnsafePathError } from './errors.js';
import { isWithin, resolveWithin } from './within-root.js';

const t = useRootAndOutside();

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
    fs.mkdirSync(path.join(t.root, 'pods'));
    expect(resolveWithin(path.join(t.root, 'pods', 'a', 'b'), [t.root]).real).toBe(path.join(t.root, 'pods', 'a', 'b'));
  });

  it('refuses relative paths, NUL bytes, ".." segments and paths outside every root', () => {
    expect(reasonOf(() => resolveWithin('pods/a', [t.root]))).toBe('invalid');
    expect(reasonOf(() => resolveWithin(`${t.root}/a\0b`, [t.root]))).toBe('invalid');
    expect(reasonOf(() => resolveWithin(`${t.root}/../outside/x`, [t.root]))).toBe('invalid');
    expect(reasonOf(() => resolveWithin(`${t.outside}/x`, [t.root]))).toBe('outside-root');
    expect(reasonOf(() => resolveWithin(t.root, [t.root]))).toBe('outside-root');
    expect(reasonOf(() => resolveWithin(t.root, [t.root], { allowRoot: true }))).toBe('accepted');
  });

  it('refuses an existing path that a symbolic link leads out of the root', () => {
    fs.symlinkSync(t.outside, path.join(t.root, 'link'));
    expect(reasonOf(() => resolveWithin(path.join(t.root, 'link'), [t.root]))).toBe('escapes-root');
    expect(reasonOf(() => resolveWithin(path.join(t.root, 'link', 'new', 'dir'), [t.root]))).toBe('escapes-root');
  });

  it('refuses a path through a dangling symbolic link', () => {
    fs.symlinkSync(path.join(t.outside, 'missing'), path.join(t.root, 'dangling'));
    expect(reasonOf(() => resolveWithin(path.join(t.root, 'dangling', 'x'), [t.root]))).toBe('symlink');
  });

  it('accepts a link that stays inside the root and reports where it leads', () => {
    fs.mkdirSync(path.join(t.root, 'data'));
    fs.symlinkSync(path.join(t.root, 'data'), path.join(t.root, 'alias'));
    expect(resolveWithin(path.join(t.root, 'alias', 'x'), [t.root]).real).toBe(path.join(t.root, 'data', 'x'));
  });

  it('resolves links in the configured root itself (a trusted setting)', () => {
    fs.symlinkSync(t.root, path.join(t.tmp, 'root-alias'));
    const r = resolveWithin(path.join(t.tmp, 'root-alias', 'x'), [path.join(t.tmp, 'root-alias')]);
    expect(r.realRoot).toBe(t.root);
    expect(r.real).toBe(path.join(t.root, 'x'));
  });

  it('follows a link planted below the root after the root was resolved', () => {
    fs.mkdirSync(path.join(t.root, 'pods'));
    expect(resolveWithin(path.join(t.root, 'pods', 'x'), [t.root]).real).toBe(path.join(t.root, 'pods', 'x'));
    fs.rmdirSync(path.join(t.root, 'pods'));
    fs.symlinkSync(t.outside, path.join(t.root, 'pods'));
    expect(reasonOf(() => resolveWithin(path.join(t.root, 'pods', 'x'), [t.root]))).toBe('escapes-root');
    fs.unlinkSync(path.join(t.root, 'pods'));
    fs.mkdirSync(path.join(t.root, 'data'));
    fs.symlinkSync(path.join(t.root, 'data'), path.join(t.root, 'pods'));
    expect(resolveWithin(path.join(t.root, 'pods', 'x'), [t.root]).real).toBe(path.join(t.root, 'data', 'x'));
  });

  it('resolves a root again once it is no longer the directory it was', () => {
    expect(resolveWithin(path.join(t.root, 'x'), [t.root]).realRoot).toBe(t.root);
    fs.renameSync(t.root, path.join(t.tmp, 'old-root'));
    fs.symlinkSync(t.outside, t.root);
    const r = resolveWithin(path.join(t.root, 'x'), [t.root]);
    expect(r.realRoot).toBe(t.outside);
    expect(r.real).toBe(path.join(t.outside, 'x'));
  });

  it('walks a path below a file as missing, as the kernel would refuse it', () => {
    fs.writeFileSync(path.join(t.root, 'f'), '');
    const r = resolveWithin(path.join(t.root, 'f', 'x', 'y'), [t.root]);
    expect(r.real).toBe(path.join(t.root, 'f', 'x', 'y'));
    expect(r.missing).toEqual(['x', 'y']);
  });

  it('reports a normalised real path under the root "/"', () => {
    fs.mkdirSync(path.join(t.root, 'pods'));
    expect(resolveWithin(path.join(t.root, 'pods'), ['/']).real).toBe(path.join(t.root, 'pods'));
  });
});
