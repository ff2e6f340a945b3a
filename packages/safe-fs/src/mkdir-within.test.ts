import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirWithin, mkdirWithinAsync } from './mkdir-within.js';

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

describe('mkdirWithin', () => {
  it('creates the missing components and returns the real directory', () => {
    expect(mkdirWithin(root, path.join(root, 'a', 'b', 'c'))).toBe(path.join(root, 'a', 'b', 'c'));
    expect(fs.statSync(path.join(root, 'a', 'b', 'c')).isDirectory()).toBe(true);
  });

  it('creates a missing root itself (configuration, not request data)', () => {
    const fresh = path.join(tmp, 'fresh', 'root');
    expect(mkdirWithin(fresh, path.join(fresh, 'a'))).toBe(path.join(fresh, 'a'));
  });

  it('creates nothing through a link that leads out of the root', () => {
    fs.symlinkSync(outside, path.join(root, 'link'));
    expect(() => mkdirWithin(root, path.join(root, 'link', 'x', 'y'))).toThrow(/outside the allowed root/);
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('refuses a component that is a link planted where it was to create one', () => {
    // A dangling link at the first missing component: mkdir would follow it and create outside.
    fs.symlinkSync(path.join(outside, 'made-by-link'), path.join(root, 'pods'));
    expect(() => mkdirWithin(root, path.join(root, 'pods', 'x'))).toThrow(/symbolic link/);
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('refuses a component that is a file', () => {
    fs.writeFileSync(path.join(root, 'f'), '');
    expect(() => mkdirWithin(root, path.join(root, 'f', 'x'))).toThrow(/not a directory/);
  });
});

describe('mkdirWithinAsync', () => {
  it('creates like mkdirWithin and refuses the same links', async () => {
    expect(await mkdirWithinAsync(root, path.join(root, 'a', 'b'))).toBe(path.join(root, 'a', 'b'));
    fs.symlinkSync(outside, path.join(root, 'link'));
    await expect(mkdirWithinAsync(root, path.join(root, 'link', 'x'))).rejects.toThrow(/outside the allowed root/);
    expect(fs.readdirSync(outside)).toEqual([]);
  });
});
