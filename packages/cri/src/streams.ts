// Small helpers shared by the backends' exec/attach sessions.
import { PassThrough } from 'node:stream';
import type { ExecOptions, StreamSession } from './types.js';

/**
 * A session whose output is fixed up front (sim exec, errors): write, end, exit. With a tty, as on a real
 * terminal, stderr joins stdout and line feeds come out as CR LF.
 */
export function fixedSession(opts: ExecOptions, stdout: string | Buffer, stderr: string | Buffer, exitCode: number): StreamSession {
  const out = opts.stdout ? new PassThrough() : undefined;
  const err = opts.stderr && !opts.tty ? new PassThrough() : undefined;
  const input = opts.stdin ? new PassThrough() : undefined;
  input?.resume();
  setImmediate(() => {
    if (opts.tty) out?.end(onlcr(Buffer.concat([Buffer.from(stdout), Buffer.from(stderr)])));
    else {
      out?.end(stdout);
      err?.end(stderr);
    }
  });
  return {
    stdin: input,
    stdout: out,
    stderr: err,
    exit: Promise.resolve(exitCode),
    resize: opts.tty ? () => {} : undefined,
    kill() {},
  };
}

/** The terminal driver's output mapping of LF to CR LF (termios ONLCR). */
export function onlcr(buf: Buffer): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) {
    if (i > 0 && buf[i - 1] === 13) continue;
    parts.push(buf.subarray(from, i), Buffer.from('\r\n'));
    from = i + 1;
  }
  parts.push(buf.subarray(from));
  return Buffer.concat(parts);
}

export function delay(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
