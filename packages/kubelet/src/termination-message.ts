// What a terminated container's status says about why it ended, beyond the runtime's own message: with
// terminationMessagePolicy FallbackToLogsOnError, a container that failed without a message gets the tail
// of its log (the last 80 lines, at most 2 KiB), as the kubelet reads it from the CRI log file.
import fs from 'node:fs';
import type { Container } from '@kemu/core';
import { cri } from '@kemu/proto';

export const MAX_TERMINATION_LOG_LINES = 80;
export const MAX_TERMINATION_LOG_BYTES = 2 * 1024;

/** The text of a CRI log file (`<time> <stream> <P|F> <text>` lines), partial lines joined. */
export function criLogText(raw: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (const line of raw.split('\n')) {
    const m = /^\S+ (?:stdout|stderr) ([PF]) ?(.*)$/.exec(line);
    if (!m) continue;
    cur += m[2];
    if (m[1] === 'F') {
      out.push(cur);
      cur = '';
    }
  }
  return out;
}

/** The last lines of a log, at most `maxBytes` of them, read without holding more than the file's tail. */
export function logTail(file: string, lines = MAX_TERMINATION_LOG_LINES, maxBytes = MAX_TERMINATION_LOG_BYTES): string {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  } catch {
    return '';
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return '';
    // CRI framing adds ~40 bytes a line: read enough of the end for `lines` lines of up to maxBytes text.
    const want = Math.min(st.size, maxBytes + lines * 64);
    const buf = Buffer.alloc(want);
    fs.readSync(fd, buf, 0, want, st.size - want);
    let text = criLogText(buf.toString('utf8')).slice(-lines).join('\n');
    if (text) text += '\n';
    return Buffer.byteLength(text) > maxBytes ? Buffer.from(text).subarray(-maxBytes).toString('utf8') : text;
  } finally {
    fs.closeSync(fd);
  }
}

/** The status with its message filled from the log when the container's policy asks for it. */
export function withTerminationMessage(spec: Container, s: cri.ContainerStatus | undefined): cri.ContainerStatus | undefined {
  if (!s || s.state !== cri.ContainerState.CONTAINER_EXITED) return s;
  if (spec.terminationMessagePolicy !== 'FallbackToLogsOnError' || (s.exitCode ?? 0) === 0 || s.message || !s.logPath) return s;
  const message = logTail(s.logPath);
  return message ? { ...s, message } : s;
}
