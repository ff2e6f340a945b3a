// Container output through named pipes rather than pipes to the runtime: the container's side holds its FIFO
// open read-write, so a write while the runtime is down can never SIGPIPE it, and a restarted runtime
// reopens the read side by path and keeps logging.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

/** Makes a fresh FIFO (mode 0600) and returns a read-write fd on it to hand to the container. */
export function createFifo(file: string): number {
  fs.rmSync(file, { force: true });
  const r = spawnSync('mkfifo', ['-m', '0600', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`mkfifo ${file}: ${(r.stderr || r.error?.message || '').trim()}`);
  return fs.openSync(file, 'r+');
}

/** The read side, as a socket that ends when the last writer closes. */
export function openFifoReader(file: string): net.Socket {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  return new net.Socket({ fd, readable: true, writable: false });
}
