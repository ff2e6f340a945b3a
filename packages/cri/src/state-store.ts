// Persists one JSON file per object under the state dir, written atomically (temp file + rename) so a
// crash never leaves a torn record; on start every record is read back to rebuild the in-memory stores.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

export type RecordKind = 'sandboxes' | 'containers';

export interface StateStore {
  save(kind: RecordKind, id: string, record: unknown): Promise<void>;
  remove(kind: RecordKind, id: string): Promise<void>;
  loadAll<T>(kind: RecordKind): T[];
  readonly dir: string | undefined;
}

export function writeFileAtomicSync(file: string, data: string | Buffer): void {
  const tmp = `${file}.tmp-${randomBytes(4).toString('hex')}`;
  fs.writeFileSync(tmp, data, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export async function writeFileAtomic(file: string, data: string | Buffer): Promise<void> {
  const tmp = `${file}.tmp-${randomBytes(4).toString('hex')}`;
  await fsp.writeFile(tmp, data, { mode: 0o600 });
  await fsp.rename(tmp, file);
}

export class FileStateStore implements StateStore {
  // Writes for one object are chained so an older snapshot can never overwrite a newer one.
  private readonly chains = new Map<string, Promise<void>>();

  constructor(readonly dir: string) {
    for (const kind of ['sandboxes', 'containers'] as const) {
      fs.mkdirSync(path.join(dir, kind), { recursive: true, mode: 0o700 });
    }
  }

  private file(kind: RecordKind, id: string) {
    return path.join(this.dir, kind, `${id}.json`);
  }

  private chain(key: string, op: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(key) ?? Promise.resolve()).then(op, op);
    this.chains.set(key, next);
    void next.finally(() => {
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
    return next;
  }

  save(kind: RecordKind, id: string, record: unknown): Promise<void> {
    const data = JSON.stringify(record);
    return this.chain(`${kind}/${id}`, () => writeFileAtomic(this.file(kind, id), data));
  }

  remove(kind: RecordKind, id: string): Promise<void> {
    return this.chain(`${kind}/${id}`, () => fsp.rm(this.file(kind, id), { force: true }));
  }

  loadAll<T>(kind: RecordKind): T[] {
    const dir = path.join(this.dir, kind);
    const out: T[] = [];
    for (const name of fs.readdirSync(dir)) {
      const full = path.join(dir, name);
      if (name.includes('.tmp-')) {
        fs.rmSync(full, { force: true }); // a write interrupted by a crash; the previous file is intact
        continue;
      }
      if (!name.endsWith('.json')) continue;
      try {
        out.push(JSON.parse(fs.readFileSync(full, 'utf8')) as T);
      } catch (err) {
        process.emitWarning(`ignoring unreadable state record ${full}: ${(err as Error).message}`);
      }
    }
    return out;
  }
}

/** State kept only in memory (in-process use and tests that need no restart). */
export class MemoryStateStore implements StateStore {
  readonly dir = undefined;
  private readonly data: Record<RecordKind, Map<string, string>> = { sandboxes: new Map(), containers: new Map() };

  async save(kind: RecordKind, id: string, record: unknown) {
    this.data[kind].set(id, JSON.stringify(record));
  }

  async remove(kind: RecordKind, id: string) {
    this.data[kind].delete(id);
  }

  loadAll<T>(kind: RecordKind): T[] {
    return [...this.data[kind].values()].map((v) => JSON.parse(v) as T);
  }
}
