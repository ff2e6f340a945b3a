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

/**
 * One exec/attach connection, whatever the transport: output channels out, stdin/resize in. WebSocket
 * multiplexes channels in one connection; SPDY gives each its own stream.
 */
export interface CommandTransport {
  /** v4+ protocols carry a JSON Status on the error channel; older ones a plain message. */
  readonly versioned: boolean;
  /** Whether the client can send terminal sizes at all (SPDY before v3 has no resize stream). */
  readonly resizable: boolean;
  /** Channel 1 stdout, 2 stderr, 3 error. */
  send(channel: number, data: Buffer | string): void;
  /** Ends the connection once everything sent is flushed. */
  finish(): void;
  onStdin(fn: (data: Buffer) => void): void;
  onStdinEnd(fn: () => void): void;
  onResize(fn: (width: number, height: number) => void): void;
  onClose(fn: () => void): void;
}

/** Parses resize messages: JSON objects {Width, Height}, one per frame (WebSocket) or back to back (SPDY). */
export function parseResizes(text: string): { width: number; height: number }[] {
  const sizes: { width: number; height: number }[] = [];
  for (const m of text.matchAll(/\{[^{}]*\}/g)) {
    try {
      const v = JSON.parse(m[0]) as { Width?: unknown; Height?: unknown };
      if (typeof v.Width === 'number' && typeof v.Height === 'number') sizes.push({ width: v.Width, height: v.Height });
    } catch {
      // a malformed resize message is ignored, as kubelet does
    }
  }
  return sizes;
}
