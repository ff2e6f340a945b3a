import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirWithin } from './mkdir-within.js';
import { openFileWithin } from './open-within.js';
import { readFileBounded } from './read-bounded.js';

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

describe('openFileWithin', () => {
  it('creates the file and its directories', () => {
    const f = openFileWithin(root, path.join(root, 'logs', '0.log'));
    fs.writeSync(f.fd, 'x');
    fs.closeSync(f.fd);
    expect(fs.readFileSync(path.join(root, 'logs', '0.log'), 'utf8')).toBe('x');
  });

  it('refuses a symbolic link in the file\'s place, even one inside the root', () => {
    fs.writeFileSync(path.join(outside, 'victim'), 'keep');
    fs.symlinkSync(path.join(outside, 'victim'), path.join(root, '0.log'));
    expect(() => openFileWithin(root, path.join(root, '0.log'))).toThrow(/symbolic link/);
    expect(fs.readFileSync(path.join(outside, 'victim'), 'utf8')).toBe('keep');
  });
});

describe('readFileBounded', () => {
  it('reads a file up to the limit and refuses a larger one with its size', () => {
    fs.writeFileSync(path.join(root, 'small'), 'abc');
    fs.writeFileSync(path.join(root, 'big'), Buffer.alloc(2048));
    expect(readFileBounded(path.join(root, 'small'), 3).toString()).toBe('abc');
    expect(() => readFileBounded(path.join(root, 'big'), 1024, 'manifest')).toThrow(
      /manifest .*big is 2048 bytes long; at most 1024 are read/,
    );
  });
});
