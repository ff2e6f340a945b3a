// Durable single-machine backend: the memory store plus a write-ahead log and periodic snapshots.
//
// Every change is appended to the WAL as a length + CRC32 framed JSON record and fdatasync'ed before the
// write is acknowledged (concurrent writes share one fsync: group commit). Every `snapshotEvery`
// records the whole state is written to a snapshot (temp file, fsync, rename, fsync dir) and a new WAL
// segment is started; older files are removed afterwards. Recovery loads the newest complete snapshot and
// replays the WAL after it. A record torn by a crash can only be the last one of the last segment: it is
// cut off. Damage anywhere else stops the open with an error rather than guessing.
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { KubeObject } from './api-meta.js';
import { lookupKind } from './kinds.js';
import { type CommitRecord, MemoryStore, type MemoryStoreOptions } from './store-memory.js';

export interface FileStoreOptions extends MemoryStoreOptions {
  /** Directory holding the WAL segments, snapshots and the lock file. Created if missing. */
  dir: string;
  /** Records between snapshots (default 50,000). */
  snapshotEvery?: number;
  /** fdatasync before acknowledging (default true). Turning it off trades durability for speed. */
  fsync?: boolean;
}

export class FileStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FileStoreError';
  }
}

const HEADER = 8;
const SNAP_RE = /^snapshot-(\d{20})\.json$/;
const WAL_RE = /^wal-(\d{20})\.log$/;
const pad = (n: number) => String(n).padStart(20, '0');
/** Directories held by FileStores of this process (the pid in LOCK cannot tell two of ours apart). */
const openDirs = new Set<string>();

interface WalRecord {
  t: 'A' | 'M' | 'D';
  k: string;
  key: string;
  rv: number;
  o?: KubeObject;
}

export function encodeRecord(rec: WalRecord): Buffer {
  const payload = Buffer.from(JSON.stringify(rec), 'utf8');
  const buf = Buffer.allocUnsafe(HEADER + payload.length);
  buf.writeUInt32LE(payload.length, 0);
  buf.writeUInt32LE(crc32(payload), 4);
  payload.copy(buf, HEADER);
  return buf;
}

/** Parse a WAL segment. `torn` is the offset of an incomplete/corrupt record at the very end, if any. */
export function decodeSegment(buf: Buffer, file: string): { records: WalRecord[]; validBytes: number; torn: boolean } {
  const records: WalRecord[] = [];
  let off = 0;
  while (off < buf.length) {
    if (buf.length - off < HEADER) return { records, validBytes: off, torn: true };
    const len = buf.readUInt32LE(off);
    const sum = buf.readUInt32LE(off + 4);
    const end = off + HEADER + len;
    if (end > buf.length) return { records, validBytes: off, torn: true };
    const payload = buf.subarray(off + HEADER, end);
    if (crc32(payload) !== sum) {
      // Only the final record may be damaged (a write cut short by the crash).
      if (end === buf.length) return { records, validBytes: off, torn: true };
      throw new FileStoreError(`${file}: checksum mismatch at offset ${off} with ${buf.length - end} bytes after it; the log is damaged, not just torn — refusing to start`);
    }
    let rec: WalRecord;
    try {
      rec = JSON.parse(payload.toString('utf8'));
    } catch {
      throw new FileStoreError(`${file}: record at offset ${off} has a valid checksum but is not JSON`);
    }
    records.push(rec);
    off = end;
  }
  return { records, validBytes: off, torn: false };
}

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Read a file of the store's own: it must be a regular file, not a symlink (O_NOFOLLOW), a device or a FIFO,
 * which would otherwise hang or exhaust memory on open.
 */
function readOwnFile(path: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new FileStoreError(`${path} is a symbolic link; the store only reads its own regular files — remove it`);
    }
    throw e;
  }
  try {
    if (!fstatSync(fd).isFile()) {
      throw new FileStoreError(`${path} is not a regular file; the store only reads its own regular files — remove it`);
    }
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class FileStore extends MemoryStore {
  readonly dir: string;
  private wal: FileHandle | undefined;
  private walName = '';
  private pending: { buf: Buffer; resolve: () => void; reject: (e: Error) => void }[] = [];
  private flushing: Promise<void> | undefined;
  private sinceSnapshot = 0;
  private snapshotWaiters: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private recoveredRv = 0;
  private failed: Error | undefined;
  private readonly snapshotEvery: number;
  private readonly doFsync: boolean;
  private lockPath = '';
  private realDir = '';
  /** What recovery found, for operators and tests. */
  recovery = { snapshotRv: 0, replayed: 0, tornBytes: 0, segments: 0 };

  private constructor(options: FileStoreOptions) {
    super({ ...options, noBootstrap: true });
    this.dir = options.dir;
    this.snapshotEvery = options.snapshotEvery ?? 50_000;
    this.doFsync = options.fsync !== false;
  }

  /** Open (recovering existing state) a file store in `dir`. */
  static override async open(options: FileStoreOptions): Promise<FileStore> {
    const s = new FileStore(options);
    try {
      await s.recover();
    } catch (e) {
      await s.closeQuietly();
      throw e;
    }
    if (!options.noBootstrap) await s.bootstrap();
    return s;
  }

  private acquireLock(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const real = realpathSync(this.dir);
    if (openDirs.has(real)) throw new FileStoreError(`${this.dir} is already open in this process; close the other FileStore first`);
    this.lockPath = join(this.dir, 'LOCK');
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(this.lockPath, 'wx', 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        this.realDir = real;
        openDirs.add(real);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        const pid = Number(readOwnFile(this.lockPath).toString('utf8').trim());
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && pidAlive(pid)) {
          throw new FileStoreError(`${this.dir} is in use by process ${pid}; stop it or use another directory`);
        }
        rmSync(this.lockPath, { force: true }); // stale: its owner is gone
      }
    }
    throw new FileStoreError(`could not lock ${this.dir}`);
  }

  protected override windowBase(): number {
    return this.recoveredRv;
  }

  private async recover(): Promise<void> {
    this.acquireLock();
    const files = readdirSync(this.dir);
    for (const f of files) if (f.endsWith('.tmp')) rmSync(join(this.dir, f), { force: true });
    const snaps = files
      .map((f) => SNAP_RE.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ file: m[0], rv: Number(m[1]) }))
      .sort((a, b) => b.rv - a.rv);
    let snapRv = 0;
    for (const snap of snaps) {
      const loaded = this.loadSnapshot(join(this.dir, snap.file));
      if (loaded !== undefined) {
        snapRv = loaded;
        break;
      }
    }
    this.recovery.snapshotRv = snapRv;
    const segs = files
      .map((f) => WAL_RE.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => ({ file: m[0], start: Number(m[1]) }))
      .sort((a, b) => a.start - b.start);
    this.recovery.segments = segs.length;
    for (let i = 0; i < segs.length; i++) {
      const path = join(this.dir, segs[i].file);
      const buf = readOwnFile(path);
      const last = i === segs.length - 1;
      const { records, validBytes, torn } = decodeSegment(buf, path);
      if (torn) {
        if (!last) throw new FileStoreError(`${path}: incomplete record at offset ${validBytes} in a segment that is not the newest; refusing to start`);
        // Cut the torn tail so new records follow the last complete one.
        const fd = openSync(path, constants.O_RDWR | constants.O_NOFOLLOW);
        try {
          ftruncateSync(fd, validBytes);
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
        this.recovery.tornBytes = buf.length - validBytes;
      }
      for (const r of records) {
        if (r.rv <= this.rv) continue;
        const info = lookupKind(r.k);
        if (!info) throw new FileStoreError(`${path}: record for unknown kind "${r.k}"; register it before opening the store`);
        if (r.t === 'D') {
          const cur = this.caches.get(r.k)?.objects.get(r.key);
          if (cur) this.restoreObject(info, 'DELETED', r.key, cur, r.rv);
          else if (r.rv > this.rv) this.rv = r.rv;
        } else {
          this.restoreObject(info, r.t === 'A' ? 'ADDED' : 'MODIFIED', r.key, r.o!, r.rv);
        }
        this.recovery.replayed++;
      }
    }
    this.recoveredRv = this.rv;
    for (const c of this.caches.values()) c.windowStart = Math.max(c.windowStart, this.rv);
    const newest = segs[segs.length - 1];
    this.walName = newest ? newest.file : `wal-${pad(this.rv)}.log`;
    this.wal = await open(
      join(this.dir, this.walName),
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
      0o600,
    );
    if (!newest) fsyncDir(this.dir);
  }

  /** Load a snapshot; undefined when it is incomplete (then an older one is tried). */
  private loadSnapshot(path: string): number | undefined {
    // Work on bytes: a snapshot of a large cluster exceeds the longest string V8 can hold.
    let buf: Buffer;
    try {
      buf = readOwnFile(path);
    } catch (e) {
      if (e instanceof FileStoreError) throw e;
      return undefined;
    }
    let endAt = buf.length;
    if (endAt > 0 && buf[endAt - 1] === 0x0a) endAt--;
    const headEnd = buf.indexOf(0x0a);
    const tailStart = buf.lastIndexOf(0x0a, endAt - 1) + 1;
    if (headEnd < 0 || tailStart <= headEnd) return undefined;
    let head: { rv: number; count: number };
    let tail: { end: boolean; count: number; crc: number };
    try {
      head = JSON.parse(buf.toString('utf8', 0, headEnd));
      tail = JSON.parse(buf.toString('utf8', tailStart, endAt));
    } catch {
      return undefined;
    }
    const body = tailStart - 1 > headEnd + 1 ? buf.subarray(headEnd + 1, tailStart - 1) : buf.subarray(0, 0);
    if (!tail.end || tail.count !== head.count || crc32(body) !== tail.crc) return undefined;
    const objects: { k: string; key: string; rv: number; o: KubeObject }[] = [];
    for (let at = 0; at < body.length; ) {
      let nl = body.indexOf(0x0a, at);
      if (nl < 0) nl = body.length;
      objects.push(JSON.parse(body.toString('utf8', at, nl)));
      at = nl + 1;
    }
    if (objects.length !== head.count) return undefined;
    for (const { k, key, rv, o } of objects) {
      const info = lookupKind(k);
      if (!info) throw new FileStoreError(`${path}: object of unknown kind "${k}"; register it before opening the store`);
      this.restoreObject(info, 'ADDED', key, o, rv);
    }
    // Replay continues after the snapshot's own revision, whatever the objects carry.
    this.rv = head.rv;
    return head.rv;
  }

  protected override persist(rec: CommitRecord): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const buf = encodeRecord({
      t: rec.type === 'ADDED' ? 'A' : rec.type === 'MODIFIED' ? 'M' : 'D',
      k: rec.kind,
      key: rec.key,
      rv: rec.rv,
      ...(rec.type === 'DELETED' ? {} : { o: rec.obj }),
    });
    return new Promise((resolve, reject) => {
      this.pending.push({ buf, resolve, reject });
      if (!this.flushing) this.flushing = this.flushLoop();
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.pending.length || this.snapshotWaiters.length) {
      // Let writes issued in the same tick (or released by the previous batch's ack) join this batch.
      await new Promise((r) => setImmediate(r));
      const batch = this.pending;
      this.pending = [];
      if (batch.length) {
        try {
          await this.wal!.write(batch.length === 1 ? batch[0].buf : Buffer.concat(batch.map((b) => b.buf)));
          if (this.doFsync) await this.wal!.datasync();
          this.sinceSnapshot += batch.length;
          for (const b of batch) b.resolve();
        } catch (e) {
          // The log can no longer be trusted to hold what memory holds: fail this and every later write.
          this.failed = new FileStoreError(`write-ahead log failed: ${(e as Error).message}`);
          for (const b of batch) b.reject(this.failed);
          for (const b of this.pending.splice(0)) b.reject(this.failed);
          for (const w of this.snapshotWaiters.splice(0)) w.reject(this.failed);
          break;
        }
      }
      if (this.sinceSnapshot >= this.snapshotEvery || this.snapshotWaiters.length) {
        const waiters = this.snapshotWaiters.splice(0);
        try {
          await this.writeSnapshot();
          for (const w of waiters) w.resolve();
        } catch (e) {
          // The previous snapshot and the WAL still hold everything; try again after more records.
          this.sinceSnapshot = 0;
          for (const w of waiters) w.reject(e as Error);
        }
      }
    }
    this.flushing = undefined;
  }

  /** Write a snapshot now (between WAL batches) and start a new WAL segment. */
  snapshot(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.snapshotWaiters.push({ resolve, reject });
      if (!this.flushing) this.flushing = this.flushLoop();
    });
  }

  private async writeSnapshot(): Promise<void> {
    const rv = this.rv;
    const name = `snapshot-${pad(rv)}.json`;
    const tmp = join(this.dir, `${name}.tmp`);
    let count = 0;
    for (const cache of this.caches.values()) count += cache.objects.size;
    // Streamed in chunks with a running CRC: the whole state as one string would not fit in V8.
    const fd = openSync(tmp, 'w', 0o600);
    try {
      let crc = 0;
      let pending: string[] = [];
      let size = 0;
      let first = true;
      writeSync(fd, `${JSON.stringify({ rv, count })}\n`);
      const flush = () => {
        if (!pending.length) return;
        const chunk = Buffer.from(pending.join(''), 'utf8');
        crc = crc32(chunk, crc);
        writeSync(fd, chunk);
        pending = [];
        size = 0;
      };
      for (const [kind, cache] of this.caches) {
        for (const [key, o] of cache.objects) {
          const line = JSON.stringify({ k: kind, key, rv: Number(o.metadata.resourceVersion), o });
          pending.push(first ? line : `\n${line}`);
          first = false;
          size += line.length;
          if (size > 4 * 2 ** 20) flush();
        }
      }
      flush();
      writeSync(fd, `${count ? '\n' : ''}${JSON.stringify({ end: true, count, crc })}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, join(this.dir, name));
    // Records with rv <= snapshot rv may still land in the new segment; replay skips them.
    const nextWal = `wal-${pad(rv)}.log`;
    if (nextWal !== this.walName) {
      const fh = await open(join(this.dir, nextWal), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      await this.wal!.close();
      this.wal = fh;
      this.walName = nextWal;
    }
    fsyncDir(this.dir);
    this.sinceSnapshot = 0;
    // The snapshot and the new segment are durable: older files are no longer needed.
    for (const f of readdirSync(this.dir)) {
      const s = SNAP_RE.exec(f);
      const w = WAL_RE.exec(f);
      if ((s && Number(s[1]) < rv) || (w && f !== this.walName && Number(w[1]) < rv)) rmSync(join(this.dir, f), { force: true });
    }
  }

  private async closeQuietly(): Promise<void> {
    await this.wal?.close().catch(() => undefined);
    this.wal = undefined;
    if (this.realDir) {
      rmSync(this.lockPath, { force: true });
      openDirs.delete(this.realDir);
      this.realDir = '';
    }
  }

  override async close(): Promise<void> {
    if (this.closed) return;
    await super.close();
    while (this.flushing) await this.flushing;
    await this.closeQuietly();
  }
}

/** Open a durable store in `dir` (recovering what is there). */
export function createFileStore(options: FileStoreOptions): Promise<FileStore> {
  return FileStore.open(options);
}

