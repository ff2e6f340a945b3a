import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useRootAndOutside } from './test-util.js';
import { openFileWithin, openFileWithinAsync } from './open-within.js';

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

describe('openFileWithinAsync', () => {
  it('creates the file and its directories', async () => {
    const f = await openFileWithinAsync(t.root, path.join(t.root, 'logs', 'c', '0.log'));
    await f.handle.write('x');
    await f.handle.close();
    expect(fs.readFileSync(path.join(t.root, 'logs', 'c', '0.log'), 'utf8')).toBe('x');
  });

  it('refuses a symbolic link in the file\'s place or on the way, leaving the target untouched', async () => {
    fs.writeFileSync(path.join(t.outside, 'victim'), 'keep');
    fs.symlinkSync(path.join(t.outside, 'victim'), path.join(t.root, '0.log'));
    await expect(openFileWithinAsync(t.root, path.join(t.root, '0.log'))).rejects.toThrow(/symbolic link/);
    fs.symlinkSync(t.outside, path.join(t.root, 'logs'));
    await expect(openFileWithinAsync(t.root, path.join(t.root, 'logs', 'new', '0.log'))).rejects.toThrow(/outside|symbolic link/);
    expect(fs.readFileSync(path.join(t.outside, 'victim'), 'utf8')).toBe('keep');
    expect(fs.readdirSync(t.outside)).toEqual(['victim']);
  });

  it('refuses a directory in the file\'s place', async () => {
    fs.mkdirSync(path.join(t.root, 'd'));
    await expect(openFileWithinAsync(t.root, path.join(t.root, 'd'), { flags: fs.constants.O_RDONLY })).rejects.toThrow(/not a regular file/);
  });
});
