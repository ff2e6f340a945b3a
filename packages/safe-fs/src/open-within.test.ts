import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openFileWithin } from './open-within.js';

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
