// Small helpers shared by the backends' exec/attach sessions.
import { PassThrough } from 'node:stream';
import type { ExecOptions, StreamSession } from './types.js';

/** A session whose output is fixed up front (sim exec, errors): write, end, exit. */
export function fixedSession(opts: ExecOptions, stdout: string | Buffer, stderr: string | Buffer, exitCode: number): StreamSession {
  const out = opts.stdout ? new PassThrough() : undefined;
  const err = opts.stderr ? new PassThrough() : undefined;
  const input = opts.stdin ? new PassThrough() : undefined;
  input?.resume();
  setImmediate(() => {
    if (out) out.end(stdout);
    if (err) err.end(stderr);
    else if (out && opts.tty && stderr.length) out.write(stderr);
  });
  return { stdin: input, stdout: out, stderr: err, exit: Promise.resolve(exitCode), kill() {} };
}

export function delay(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}
