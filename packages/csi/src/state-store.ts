import { promises as fs } from 'node:fs';
import path from 'node:path';
import { type DriverState, emptyState } from './types.js';

/** Where the driver keeps its state between calls and restarts. */
export interface StateStore {
  load(): Promise<DriverState>;
  /** Persist the given state; resolves once it is durable. Concurrent saves are coalesced. */
  save(state: DriverState): Promise<void>;
}

/** Keeps nothing: for the sim backend and in-process tests. */
export class MemoryStateStore implements StateStore {
  private state: DriverState = emptyState();
  async load(): Promise<DriverState> {
    return structuredClone(this.state);
  }
  async save(state: DriverState): Promise<void> {
    this.state = state;
  }
}

/**
 * One JSON file, replaced atomically (write a temporary file, fsync, rename, fsync the directory) so a
 * SIGKILL at any moment leaves either the old or the new state, never a torn one. Saves requested while
 * one is being written are folded into a single following write.
 */
export class FileStateStore implements StateStore {
  private writing: Promise<void> | null = null;
  private pending: {
    state: DriverState;
    waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }>;
  } | null = null;

  /**
   * @param durable fsync the file and its directory on every save (default). Without it a process crash
   *   still loses nothing (the page cache survives SIGKILL); only a machine crash could.
   */
  constructor(
    readonly file: string,
    private readonly durable = true,
  ) {}

  async load(): Promise<DriverState> {
    let text: string;
    try {
      text = await fs.readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return emptyState();
      throw e;
    }
    const parsed = JSON.parse(text) as DriverState;
    if (parsed.version !== 1)
      throw new Error(`${this.file}: unsupported state version ${String(parsed.version)}`);
    return { ...emptyState(), ...parsed };
  }

  save(state: DriverState): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.pending) {
        this.pending.state = state;
        this.pending.waiters.push({ resolve, reject });
      } else {
        this.pending = { state, waiters: [{ resolve, reject }] };
      }
      if (!this.writing) this.writing = this.drain();
    });
  }

  private async drain(): Promise<void> {
    while (this.pending) {
      const batch = this.pending;
      this.pending = null;
      try {
        await this.writeAtomic(JSON.stringify(batch.state));
        for (const w of batch.waiters) w.resolve();
      } catch (e) {
        for (const w of batch.waiters) w.reject(e);
      }
    }
    this.writing = null;
  }

  private async writeAtomic(text: string): Promise<void> {
    const dir = path.dirname(this.file);
    const tmp = `${this.file}.tmp`;
    const fh = await fs.open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(text);
      if (this.durable) await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, this.file);
    if (!this.durable) return;
    const dh = await fs.open(dir, 'r');
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  }
}
