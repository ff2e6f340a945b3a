import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useRootAndOutside } from './test-util.js';
import { openFileWithin } from './open-within.js';

const t = useRootAndOutside();

describe('openFileWithin', () => {
  it('creates the file and its directories', () => {
    const f = openFileWithin(t.root, path.join(t.root, 'logs', '0.log'));
    fs.writeSync(f.fd, 'x');
    fs.closeSync(f.fd);
    expect(fs.readFileSync(path.join(t.root, 'logs', '0.log'), 'utf8')).toBe('x');
  });

  it('refuses a symbolic link in the file\'s place, even one inside the root', () => {
    fs.writeFileSync(path.join(t.outside, 'victim'), 'keep');
    fs.symlinkSync(path.join(t.outside, 'victim'), path.join(t.root, '0.log'));
    expect(() => openFileWithin(t.root, path.join(t.root, '0.log'))).toThrow(/symbolic link/);
    expect(fs.readFileSync(path.join(t.outside, 'victim'), 'utf8')).toBe('keep');
  });
});
