import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CniError } from './errors.js';
import { readFileBounded, readFileBoundedIfExists, readTextBounded } from './read-file-bounded.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-rb-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const o = { maxBytes: 1024, what: 'test file' };
function failure(fn: () => unknown): CniError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(CniError);
    return e as CniError;
  }
  throw new Error('expected a CniError');
}

describe('readFileBounded', () => {
  it('reads a regular file, through a symlink too', () => {
    writeFileSync(join(tmp, 'ok'), 'nameserver 10.0.0.1\n');
    symlinkSync(join(tmp, 'ok'), join(tmp, 'ok-link'));
    expect(readTextBounded(join(tmp, 'ok'), o)).toBe('nameserver 10.0.0.1\n');
    expect(readTextBounded(join(tmp, 'ok-link'), o)).toBe('nameserver 10.0.0.1\n');
  });

  it('refuses /dev/zero at once instead of reading forever, directly or through a symlink', () => {
    const e = failure(() => readFileBounded('/dev/zero', o));
    expect(e.code).toBe(5);
    expect(e.message).toBe('test file /dev/zero is not a regular file');
    symlinkSync('/dev/zero', join(tmp, 'zero-link'));
    expect(failure(() => readFileBounded(join(tmp, 'zero-link'), { ...o, badFileCode: 7 })).code).toBe(7);
  });

  it('refuses a FIFO without waiting for a writer, and a directory', () => {
    const fifo = join(tmp, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    expect(failure(() => readFileBounded(fifo, o)).message).toMatch(/is not a regular file/);
    mkdirSync(join(tmp, 'dir'));
    expect(failure(() => readFileBounded(join(tmp, 'dir'), o)).message).toMatch(/is not a regular file/);
  });

  it('refuses a file over the bound and accepts one exactly at it', () => {
    writeFileSync(join(tmp, 'big'), Buffer.alloc(1025, 0x61));
    writeFileSync(join(tmp, 'edge'), Buffer.alloc(1024, 0x61));
    const e = failure(() => readFileBounded(join(tmp, 'big'), o));
    expect(e.message).toBe(`test file ${join(tmp, 'big')} is larger than 1024 bytes`);
    expect(readFileBounded(join(tmp, 'edge'), o)).toHaveLength(1024);
  });

  it('reports a missing file as an I/O failure, or undefined when asked', () => {
    const e = failure(() => readFileBounded(join(tmp, 'nope'), o));
    expect(e.code).toBe(5);
    expect(e.message).toMatch(/cannot read test file .*nope: ENOENT/);
    expect(readFileBoundedIfExists(join(tmp, 'nope'), o)).toBeUndefined();
  });
});
