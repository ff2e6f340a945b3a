import fs from 'node:fs';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { onMemoryFilesystem } from './memory-fs.js';
import { FILESYSTEMS } from './test-util.js';

/** The file system type of the mount `dir` is on, as the kernel's mount table names it. */
function mountTypeOf(dir: string): string {
  const real = fs.realpathSync(dir);
  let best = { point: '', type: '' };
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right) continue;
    const point = left.split(' ')[4].replace(/\\040/g, ' ');
    const under = point === '/' || real === point || real.startsWith(`${point}/`);
    if (under && point.length >= best.point.length) best = { point, type: right.split(' ')[0] };
  }
  return best.type;
}

describe('onMemoryFilesystem', () => {
  it('answers from the file system a directory is on', () => {
    for (const dir of ['/dev/shm', '/var/tmp', os.tmpdir(), process.cwd()]) {
      expect(onMemoryFilesystem(dir), dir).toBe(['tmpfs', 'ramfs'].includes(mountTypeOf(dir)));
    }
  });

  it('says no for a directory that does not exist, and does not keep that answer', () => {
    const dir = fs.mkdtempSync('/dev/shm/memory-fs-');
    fs.rmdirSync(dir);
    expect(onMemoryFilesystem(dir)).toBe(false);
    fs.mkdirSync(dir);
    try {
      expect(onMemoryFilesystem(dir)).toBe(true);
    } finally {
      fs.rmdirSync(dir);
    }
  });

  it('has a directory of each kind for the creators\' tests', () => {
    expect(FILESYSTEMS.map(([kind, base]) => [kind, onMemoryFilesystem(base)])).toEqual([
      ['a memory file system', true],
      ['a disk', false],
    ]);
  });
});
