// Pseudo-terminals for tty exec/attach on the `process` backend, through node-pty (which forks and execs
// with an argument array, never a shell). The child becomes a session leader with the pty's slave side as
// its controlling terminal, so stderr and stdout are one stream, as with any real tty.
import { createRequire } from 'node:module';
import { PassThrough, Writable } from 'node:stream';
import { osSignals } from './proc-util.js';

// The part of node-pty's API used here, declared locally: node-pty is an optional dependency whose install
// compiles a native addon, so a machine without a compiler still installs, builds and typechecks @kemu/cri.
interface IPty {
  readonly pid: number;
  onData(listener: (data: string | Buffer) => void): unknown;
  onExit(listener: (e: { exitCode: number; signal?: number }) => void): unknown;
  resize(columns: number, rows: number): void;
  write(data: string | Buffer): void;
  kill(signal?: string): void;
}
interface NodePty {
  spawn(
    file: string,
    args: string[],
    options: { name: string; cols: number; rows: number; cwd: string; env: Record<string, string>; encoding: null },
  ): IPty;
}

let loaded: NodePty | undefined;
let loadError: Error | undefined;

function nodePty(): NodePty {
  if (loaded) return loaded;
  if (loadError) throw loadError;
  try {
    // node-pty is CommonJS with a native addon; require keeps it out of the ESM loader and lazy, so the
    // sim backend never needs the addon.
    loaded = createRequire(import.meta.url)('node-pty') as NodePty;
    return loaded;
  } catch (err) {
    loadError = new Error(`pseudo-terminals are unavailable (node-pty did not load: ${(err as Error).message}); reinstall @kemu/cri with install scripts enabled`);
    throw loadError;
  }
}

export interface PtySpawnOptions {
  env: Record<string, string>;
  cwd?: string;
  cols?: number;
  rows?: number;
}

/**
 * A process on a pseudo-terminal, with stream-shaped input and output. It starts on `start()`, so a size
 * known right after construction (a client's first resize message) is the size the command starts with.
 */
export class PtyProcess {
  /** Everything the process writes to its terminal (stdout and stderr together). */
  readonly output = new PassThrough();
  /** Bytes typed at the terminal. Ending it sends the terminal's end-of-file character (^D). */
  readonly input: Writable;
  /** Exit code, with 128+N for a death by signal N, as a shell reports it. */
  readonly exit: Promise<number>;
  private pty?: IPty;
  private exited = false;
  private killed = false;
  private cols: number;
  private rows: number;
  private resolveExit!: (code: number) => void;
  private readonly typed: Buffer[] = [];
  private eof = false;

  constructor(
    private readonly file: string,
    private readonly args: string[],
    private readonly opts: PtySpawnOptions,
  ) {
    nodePty(); // fail here, before anything depends on the process
    this.cols = opts.cols ?? 80;
    this.rows = opts.rows ?? 24;
    this.exit = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
    this.input = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        if (!this.pty) this.typed.push(chunk);
        else if (!this.exited) this.pty.write(chunk as unknown as string);
        cb();
      },
      final: (cb) => {
        if (!this.pty) this.eof = true;
        else if (!this.exited) this.pty.write('\x04');
        cb();
      },
    });
  }

  get pid(): number | undefined {
    return this.pty?.pid;
  }

  /** Forks the process (once); returns its pid. */
  start(): number {
    if (this.pty) return this.pty.pid;
    const pty = nodePty().spawn(this.file, this.args, {
      name: this.opts.env.TERM ?? 'xterm',
      cols: this.cols,
      rows: this.rows,
      cwd: this.opts.cwd ?? '/',
      env: this.opts.env,
      encoding: null,
    });
    this.pty = pty;
    pty.onData((d: string | Buffer) => this.output.write(typeof d === 'string' ? Buffer.from(d) : d));
    pty.onExit(({ exitCode, signal }) => {
      this.exited = true;
      this.output.end();
      this.resolveExit(signal ? 128 + signal : exitCode);
    });
    for (const d of this.typed.splice(0)) pty.write(d as unknown as string);
    if (this.eof) pty.write('\x04');
    if (this.killed) this.kill();
    return pty.pid;
  }

  resize(cols: number, rows: number): void {
    // The terminal driver rejects a zero or absurd size; ignore those as kubelet ignores bad resize frames.
    if (this.exited || !Number.isInteger(cols) || !Number.isInteger(rows) || cols < 1 || rows < 1 || cols > 65535 || rows > 65535) return;
    this.cols = cols;
    this.rows = rows;
    try {
      this.pty?.resize(cols, rows);
    } catch {
      // the process ended between the check and the ioctl
    }
  }

  /** Signals the process group the pty's session leader heads (the command and what it forked). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.killed = true;
    if (this.exited || !this.pty) return;
    try {
      process.kill(-this.pty.pid, osSignals[signal] ?? signal);
    } catch {
      try {
        this.pty.kill(signal);
      } catch {
        // already gone
      }
    }
  }

  /** Lets the runtime exit while the process keeps running (it then loses its terminal). */
  unref(): void {
    (this.pty as unknown as { _socket?: { unref?: () => void } } | undefined)?._socket?.unref?.();
  }
}

/** True when node-pty loads here (for tests that need a real pty). */
export function ptyAvailable(): boolean {
  try {
    nodePty();
    return true;
  } catch {
    return false;
  }
}
