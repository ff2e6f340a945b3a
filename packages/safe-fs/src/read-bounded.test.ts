import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useRootAndOutside } from './test-util.js';
import { readFileBounded } from './read-bounded.js';

const t = useRootAndOutside();

describe('readFileBounded', () => {
  it('reads a file up to the limit and refuses a larger one with its size', () => {
    fs.writeFileSync(path.join(t.root, 'small'), 'abc');
    fs.writeFileSync(path.join(t.root, 'big'), Buffer.alloc(2048));
    expect(readFileBounded(path.join(t.root, 'small'), 3).toString()).toBe('abc');
    expect(() => readFileBounded(path.join(t.root, 'big'), 1024, 'manifest')).toThrow(
      /manifest .*big is 2048 bytes long; at most 1024 are read/,
    );
  });

  it('refuses a FIFO at once instead of waiting for a writer', () => {
    const fifo = path.join(t.root, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    expect(() => readFileBounded(fifo, 1024, 'index')).toThrow(/index .*fifo is not a regular file/);
  });
});
