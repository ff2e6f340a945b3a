// CRI Attach on a running container of a real backend: the client joins the container's output as it is
// produced (stdout, and stderr on its own stream or merged into stdout under a TTY), may write to its stdin,
// and is released when it detaches or the container exits. One home for the process and runc backends.
import type { EventEmitter } from 'node:events';
import { PassThrough, type Writable } from 'node:stream';
import type { ContainerRecord, ExecOptions, StreamSession } from './types.js';

export interface AttachTarget {
  /** Emits 'stdout' and 'stderr' chunks as the container writes them, and 'end' when it exits. */
  output: EventEmitter;
  /** Where the client's stdin goes (the container's pty or pipe), when the container keeps one open. */
  stdin?: Writable;
  /** Resizes the container's terminal, when it has one. */
  resize?(cols: number, rows: number): void;
}

export function attachSession(c: ContainerRecord, target: AttachTarget, opts: ExecOptions): StreamSession {
  const out = opts.stdout ? new PassThrough() : undefined;
  const errOut = opts.stderr ? new PassThrough() : undefined;
  const onOut = (d: Buffer) => out?.write(d);
  const onErr = (d: Buffer) => (errOut ?? (opts.tty ? out : undefined))?.write(d);
  target.output.on('stdout', onOut);
  target.output.on('stderr', onErr);
  let done!: (code: number) => void;
  const exit = new Promise<number>((resolve) => {
    done = resolve;
  });
  const detach = () => {
    target.output.off('stdout', onOut);
    target.output.off('stderr', onErr);
    out?.end();
    errOut?.end();
  };
  target.output.once('end', () => {
    detach();
    done(c.exitCode);
  });
  let stdin: PassThrough | undefined;
  if (opts.stdin) {
    stdin = new PassThrough();
    const to = target.stdin;
    if (to) stdin.on('data', (d: Buffer) => to.write(d));
    // stdinOnce: the container's stdin closes when the first attached client detaches.
    stdin.on('end', () => {
      if (c.config.stdinOnce) to?.end();
    });
  }
  return {
    stdin,
    stdout: out,
    stderr: errOut,
    exit,
    resize: target.resize,
    kill: () => {
      detach();
      done(0);
    },
  };
}
