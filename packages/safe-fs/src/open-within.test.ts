import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FILESYSTEMS, useRootAndOutside } from './test-util.js';
import { createFileWithinAsync, openFileWithin, openFileWithinAsync } from './open-within.js';

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

describe.each(FILESYSTEMS)('createFileWithinAsync on %s', (_kind, base) => {
  const u = useRootAndOutside(base);

  it('creates the file empty, and its directories, and leaves an existing file as it was', async () => {
    const file = path.join(u.root, 'pods', 'p', 'c', '0.log');
    expect(await createFileWithinAsync(u.root, file, { mode: 0o640 })).toBe(file);
    expect(fs.statSync(file).size).toBe(0);
    expect(fs.statSync(file).mode & 0o777).toBe(0o640 & ~process.umask());
    fs.writeFileSync(file, 'kept');
    await createFileWithinAsync(u.root, file);
    expect(fs.readFileSync(file, 'utf8')).toBe('kept');
  });

  it('refuses a link in the file\'s place or on the way, creating nothing outside', async () => {
    fs.writeFileSync(path.join(u.outside, 'victim'), 'keep');
    fs.symlinkSync(path.join(u.outside, 'victim'), path.join(u.root, '0.log'));
    await expect(createFileWithinAsync(u.root, path.join(u.root, '0.log'))).rejects.toThrow(/symbolic link/);
    fs.symlinkSync(u.outside, path.join(u.root, 'pods'));
    await expect(createFileWithinAsync(u.root, path.join(u.root, 'pods', 'p', '0.log'))).rejects.toThrow(/outside the allowed root/);
    fs.symlinkSync(path.join(u.outside, 'made-by-link'), path.join(u.root, 'dangling'));
    await expect(createFileWithinAsync(u.root, path.join(u.root, 'dangling', '0.log'))).rejects.toThrow(/symbolic link/);
    expect(fs.readFileSync(path.join(u.outside, 'victim'), 'utf8')).toBe('keep');
    expect(fs.readdirSync(u.outside)).toEqual(['victim']);
  });

  it('refuses a directory in the file\'s place', async () => {
    fs.mkdirSync(path.join(u.root, 'd'));
    await expect(createFileWithinAsync(u.root, path.join(u.root, 'd'))).rejects.toThrow(/EISDIR|not a regular file/);
  });

  it('fails on a FIFO in the file\'s place instead of waiting for a reader', async () => {
    execFileSync('mkfifo', [path.join(u.root, 'fifo')]);
    await expect(createFileWithinAsync(u.root, path.join(u.root, 'fifo'))).rejects.toThrow(/ENXIO|not a regular file/);
  });
});
