import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FILESYSTEMS, useRootAndOutside } from './test-util.js';
import { mkdirWithin, mkdirWithinAsync } from './mkdir-within.js';

const t = useRootAndOutside();

describe('mkdirWithin', () => {
  it('creates the missing components and returns the real directory', () => {
    expect(mkdirWithin(t.root, path.join(t.root, 'a', 'b', 'c'))).toBe(path.join(t.root, 'a', 'b', 'c'));
    expect(fs.statSync(path.join(t.root, 'a', 'b', 'c')).isDirectory()).toBe(true);
  });

  it('creates a missing root itself (configuration, not request data)', () => {
    const fresh = path.join(t.tmp, 'fresh', 'root');
    expect(mkdirWithin(fresh, path.join(fresh, 'a'))).toBe(path.join(fresh, 'a'));
  });

  it('creates nothing through a link that leads out of the root', () => {
    fs.symlinkSync(t.outside, path.join(t.root, 'link'));
    expect(() => mkdirWithin(t.root, path.join(t.root, 'link', 'x', 'y'))).toThrow(/outside the allowed root/);
    expect(fs.readdirSync(t.outside)).toEqual([]);
  });

  it('refuses a component that is a link planted where it was to create one', () => {
    // A dangling link at the first missing component: mkdir would follow it and create outside.
    fs.symlinkSync(path.join(t.outside, 'made-by-link'), path.join(t.root, 'pods'));
    expect(() => mkdirWithin(t.root, path.join(t.root, 'pods', 'x'))).toThrow(/symbolic link/);
    expect(fs.readdirSync(t.outside)).toEqual([]);
  });

  it('refuses a component that is a file', () => {
    fs.writeFileSync(path.join(t.root, 'f'), '');
    expect(() => mkdirWithin(t.root, path.join(t.root, 'f', 'x'))).toThrow(/not a directory/);
  });
});

describe.each(FILESYSTEMS)('mkdirWithinAsync on %s', (_kind, base) => {
  const u = useRootAndOutside(base);

  it('creates like mkdirWithin and refuses the same links', async () => {
    expect(await mkdirWithinAsync(u.root, path.join(u.root, 'a', 'b'))).toBe(path.join(u.root, 'a', 'b'));
    fs.symlinkSync(u.outside, path.join(u.root, 'link'));
    await expect(mkdirWithinAsync(u.root, path.join(u.root, 'link', 'x'))).rejects.toThrow(/outside the allowed root/);
    fs.symlinkSync(path.join(u.outside, 'made-by-link'), path.join(u.root, 'pods'));
    await expect(mkdirWithinAsync(u.root, path.join(u.root, 'pods', 'x'))).rejects.toThrow(/symbolic link/);
    fs.writeFileSync(path.join(u.root, 'f'), '');
    await expect(mkdirWithinAsync(u.root, path.join(u.root, 'f', 'x'))).rejects.toThrow(/not a directory/);
    expect(fs.readdirSync(u.outside)).toEqual([]);
  });
});
