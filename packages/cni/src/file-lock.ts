import { closeSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { CniError, CniErrorCode } from './errors.js';

const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

type FlockFn = (fd: number, op: number) => number;
let flockFn: FlockFn | undefined;

/** flock(2) through koffi: the same advisory lock the reference plugins take, so both can share a dataDir. */
function flock(): FlockFn {
  if (!flockFn) {
    const require = createRequire(import.meta.url);
    const koffi = require('koffi') as typeof import('koffi');
    const libc = koffi.load('libc.so.6');
    flockFn = libc.func('int flock(int fd, int op)') as FlockFn;
  }
  return flockFn;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const inProcess = new Map<string, Promise<void>>();

/**
 * Holds an exclusive lock on `path` while `fn` runs: a promise chain serialises callers inside this
 * process, flock(2) serialises against other processes (polled with LOCK_NB so the event loop never blocks).
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const prev = inProcess.get(path) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((r) => {
    release = r;
  });
  const chained = prev.then(() => mine);
  inProcess.set(path, chained);
  await prev;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'a', 0o600);
    const deadline = Date.now() + timeoutMs;
    let wait = 1;
    while (flock()(fd, LOCK_EX | LOCK_NB) !== 0) {
      if (Date.now() > deadline) {
        throw new CniError(CniErrorCode.TryAgainLater, `timed out waiting for lock ${path}`);
      }
      await sleep(wait);
      wait = Math.min(wait * 2, 20);
    }
    return await fn();
  } finally {
    if (fd !== undefined) {
      flock()(fd, LOCK_UN);
      closeSync(fd);
    }
    release();
    if (inProcess.get(path) === chained) inProcess.delete(path);
  }
}
