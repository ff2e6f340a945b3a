// Writes container output in the CRI log format kubelet reads: `<RFC3339Nano> <stream> <P|F> <text>\n`.
// A line longer than the kubelet's 16 KiB limit is split into partial (P) records; the final piece is F.
import fs from 'node:fs';
import path from 'node:path';
import { createFileWithinAsync, openFileWithin } from '@kemu/safe-fs';
import { rfc3339Nano } from './time.js';

export type LogStream = 'stdout' | 'stderr';

const MAX_LINE = 16 * 1024;

export function formatLogRecord(stream: LogStream, tag: 'P' | 'F', text: string | Buffer, ts?: string): string {
  return `${ts ?? rfc3339Nano()} ${stream} ${tag} ${text.toString()}\n`;
}

/**
 * Opens a container log for appending, creating it and its directories under `root` (the allowed log root
 * it was checked against) without following a symbolic link; kubelet reads the file as soon as the
 * container starts, so the runtime calls this at StartContainer even before any output.
 */
export function openLogFile(logPath: string, root: string | undefined): number {
  // A record persisted before log roots were kept names none: its own directory is then the bound.
  return openFileWithin(root ?? path.dirname(logPath), logPath, { mode: 0o640, what: 'container log' }).fd;
}

/**
 * Creates the (empty) log with openLogFile's checks, as StartContainer does: off the event loop unless the
 * log root is on a memory file system.
 */
export async function createLogFileAsync(logPath: string, root: string | undefined): Promise<void> {
  await createFileWithinAsync(root ?? path.dirname(logPath), logPath, { mode: 0o640, what: 'container log' });
}

export class CriLogWriter {
  private fd: number | undefined;
  private readonly pending: Record<LogStream, Buffer> = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) };

  /** `root` is the allowed log root the path lies under; the file is never opened through a link. */
  constructor(
    readonly logPath: string,
    readonly root?: string,
  ) {}

  private open(): number {
    if (this.fd === undefined) this.fd = openLogFile(this.logPath, this.root);
    return this.fd;
  }

  /** Appends raw output; complete lines are written immediately, a trailing fragment waits for more. */
  write(stream: LogStream, chunk: Buffer | string): void {
    let buf = Buffer.concat([this.pending[stream], typeof chunk === 'string' ? Buffer.from(chunk) : chunk]);
    let out = '';
    const ts = rfc3339Nano();
    for (;;) {
      const nl = buf.indexOf(10);
      if (nl === -1) break;
      let line = buf.subarray(0, nl);
      if (line.length > 0 && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
      while (line.length > MAX_LINE) {
        out += formatLogRecord(stream, 'P', line.subarray(0, MAX_LINE), ts);
        line = line.subarray(MAX_LINE);
      }
      out += formatLogRecord(stream, 'F', line, ts);
      buf = buf.subarray(nl + 1);
    }
    while (buf.length > MAX_LINE) {
      out += formatLogRecord(stream, 'P', buf.subarray(0, MAX_LINE), ts);
      buf = buf.subarray(MAX_LINE);
    }
    this.pending[stream] = Buffer.from(buf);
    if (out) fs.writeSync(this.open(), out);
  }

  /** Writes whatever fragment is left as a final record (the stream ended without a newline). */
  flush(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.pending[stream].length > 0) {
        fs.writeSync(this.open(), formatLogRecord(stream, 'F', this.pending[stream]));
        this.pending[stream] = Buffer.alloc(0);
      }
    }
  }

  /** Closes and reopens the file so a rotated log (renamed away by kubelet) gets a fresh file. */
  reopen(): void {
    this.closeFd();
    this.open();
  }

  close(): void {
    this.flush();
    this.closeFd();
  }

  private closeFd(): void {
    if (this.fd !== undefined) {
      fs.closeSync(this.fd);
      this.fd = undefined;
    }
  }
}

export interface ParsedLogRecord {
  timestamp: string;
  stream: LogStream;
  partial: boolean;
  text: string;
}

/** Parses CRI log records (used by tests and `kemu-cri` tooling to read logs back). */
export function parseCriLog(content: string): ParsedLogRecord[] {
  const records: ParsedLogRecord[] = [];
  for (const line of content.split('\n')) {
    if (!line) continue;
    const m = /^(\S+) (stdout|stderr) ([PF]) (.*)$/s.exec(line);
    if (!m) throw new Error(`not a CRI log record: ${JSON.stringify(line)}`);
    records.push({ timestamp: m[1], stream: m[2] as LogStream, partial: m[3] === 'P', text: m[4] });
  }
  return records;
}
