import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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

describe('readFileBounded', () => {
  it('reads a file up to the limit and refuses a larger one with its size', () => {
    fs.writeFileSync(path.join(root, 'small'), 'abc');
    fs.writeFileSync(path.join(root, 'big'), Buffer.alloc(2048));
    expect(readFileBounded(path.join(root, 'small'), 3).toString()).toBe('abc');
    expect(() => readFileBounded(path.join(root, 'big'), 1024, 'manifest')).toThrow(
      /manifest .*big is 2048 bytes long; at most 1024 are read/,
    );
  });

  it('refuses a FIFO at once instead of waiting for a writer', () => {
    const fifo = path.join(root, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    expect(() => readFileBounded(fifo, 1024, 'index')).toThrow(/index .*fifo is not a regular file/);
  });
});
