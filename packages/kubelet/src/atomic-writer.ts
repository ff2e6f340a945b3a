// Publishing a volume's files the way the kubelet's AtomicWriter does, so a reader never sees a half-updated
// set: each version is written into a fresh timestamped directory `..<UTC time>.<random>`, the `..data`
// symlink is swapped to it with one rename(2), the user-visible top-level names are symlinks through
// `..data`, and the previous version is removed afterwards. Payload paths are relative and checked; every
// file is created with O_NOFOLLOW below a directory this writer made, so neither a payload path nor a link
// planted in the volume can make it write outside the volume.
import fs from 'node:fs';
import path from 'node:path';
import { mkdirWithin, openFileWithin } from '@kemu/safe-fs';
import { fsGroupMode, setVolumeOwnership } from './volume-ownership.js';

export const DATA_DIR_NAME = '..data';
const NEW_DATA_DIR_NAME = '..data_tmp';
const MAX_PATH_LENGTH = 4096;
const MAX_FILE_NAME_LENGTH = 255;

export interface FileProjection {
  data: Buffer;
  /** Permission bits, e.g. 0o644. */
  mode: number;
}

/** A payload path that is absolute, contains `..`, starts with `..` or is too long (the kubelet's wording). */
export class PayloadPathError extends Error {
  override readonly name = 'PayloadPathError';
}

export function validatePayloadPath(p: string): void {
  if (p === '') throw new PayloadPathError(`invalid path: must not be empty: ${JSON.stringify(p)}`);
  if (path.posix.isAbsolute(p)) throw new PayloadPathError(`invalid path: must be relative path: ${p}`);
  if (p.length > MAX_PATH_LENGTH) throw new PayloadPathError(`invalid path: must be less than or equal to ${MAX_PATH_LENGTH} characters`);
  if (p.includes('\0')) throw new PayloadPathError(`invalid path: must not contain NUL: ${JSON.stringify(p)}`);
  const items = p.split('/');
  for (const item of items) {
    if (item === '..') throw new PayloadPathError(`invalid path: must not contain '..': ${p}`);
    if (item.length > MAX_FILE_NAME_LENGTH) {
      throw new PayloadPathError(`invalid path: filenames must be less than or equal to ${MAX_FILE_NAME_LENGTH} characters`);
    }
  }
  if (items[0].startsWith('..') && items[0].length > 2) throw new PayloadPathError(`invalid path: must not start with '..': ${p}`);
}

/** Payload paths cleaned (`a//b/./c` → `a/b/c`) and checked. */
function cleanPayload(payload: ReadonlyMap<string, FileProjection>): Map<string, FileProjection> {
  const out = new Map<string, FileProjection>();
  for (const [p, f] of payload) {
    validatePayloadPath(p);
    const clean = path.posix.normalize(p).replace(/\/$/, '');
    if (clean === '.' || clean === '') throw new PayloadPathError(`invalid path: must not be empty: ${JSON.stringify(p)}`);
    out.set(clean, f);
  }
  return out;
}

function timestampDirPrefix(now = new Date()): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `..${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}.`;
}

/** Regular files below `dir`, as relative paths (links are not followed). */
function listFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const ent of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${ent.name}` : ent.name;
    if (ent.isDirectory()) out.push(...listFiles(dir, p));
    else if (ent.isFile()) out.push(p);
  }
  return out;
}

function readlinkOrUndefined(p: string): string | undefined {
  try {
    return fs.readlinkSync(p);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EINVAL') return undefined;
    throw err;
  }
}

export class AtomicWriter {
  constructor(
    /** The volume directory the container sees. */
    readonly targetDir: string,
    /** Names the volume in errors. */
    readonly logContext = 'volume',
    /** The pod's fsGroup: every version written is given to it (read-only, as these volumes are). */
    readonly fsGroup?: number,
  ) {}

  /** The timestamped directory `..data` points at, if any. */
  currentDataDir(): string | undefined {
    const link = readlinkOrUndefined(path.join(this.targetDir, DATA_DIR_NAME));
    if (link === undefined || link.includes('/') || !link.startsWith('..')) return undefined;
    return path.join(this.targetDir, link);
  }

  /**
   * Makes the volume hold exactly `payload` (path → bytes and mode). Returns false when it already did, so
   * an unchanged source writes nothing.
   */
  write(payload: ReadonlyMap<string, FileProjection>): boolean {
    const files = cleanPayload(payload);
    fs.mkdirSync(this.targetDir, { recursive: true, mode: 0o755 });
    const oldDir = this.currentDataDir();
    const oldFiles = oldDir && fs.existsSync(oldDir) ? listFiles(oldDir) : [];
    const oldTop = new Set(oldFiles.map((p) => p.split('/')[0]));
    const newTop = new Set([...files.keys()].map((p) => p.split('/')[0]));
    if (oldDir && this.unchanged(oldDir, oldFiles, files)) return false;

    const tsDir = fs.mkdtempSync(path.join(this.targetDir, timestampDirPrefix()));
    fs.chmodSync(tsDir, 0o755);
    try {
      for (const [rel, f] of files) {
        const file = path.join(tsDir, ...rel.split('/'));
        mkdirWithin(tsDir, path.dirname(file), 0o755, `${this.logContext} directory`);
        const { O_WRONLY, O_CREAT, O_EXCL } = fs.constants;
        const { fd } = openFileWithin(tsDir, file, { flags: O_WRONLY | O_CREAT | O_EXCL, mode: f.mode, what: `${this.logContext} file` });
        try {
          fs.writeSync(fd, f.data);
          fs.fchmodSync(fd, f.mode & 0o7777); // the mode as given, not as the umask leaves it
        } finally {
          fs.closeSync(fd);
        }
      }
    } catch (err) {
      fs.rmSync(tsDir, { recursive: true, force: true });
      throw err;
    }

    if (this.fsGroup !== undefined) setVolumeOwnership(tsDir, this.fsGroup, true);

    // The user-visible names: symlinks through ..data, made once and kept across versions.
    for (const top of newTop) {
      const visible = path.join(this.targetDir, top);
      if (readlinkOrUndefined(visible) === undefined && !fs.existsSync(visible)) {
        fs.symlinkSync(path.join(DATA_DIR_NAME, top), visible);
      }
    }
    // The swap: a new symlink renamed over ..data in one step.
    const tmpLink = path.join(this.targetDir, NEW_DATA_DIR_NAME);
    fs.rmSync(tmpLink, { force: true });
    fs.symlinkSync(path.basename(tsDir), tmpLink);
    fs.renameSync(tmpLink, path.join(this.targetDir, DATA_DIR_NAME));
    if (this.fsGroup !== undefined) {
      for (const name of fs.readdirSync(this.targetDir)) {
        const p = path.join(this.targetDir, name);
        const link = fs.lstatSync(p);
        if (link.isSymbolicLink()) fs.lchownSync(p, link.uid, this.fsGroup);
      }
      const st = fs.lstatSync(this.targetDir);
      if (st.isDirectory()) {
        fs.lchownSync(this.targetDir, st.uid, this.fsGroup);
        fs.chmodSync(this.targetDir, fsGroupMode(st.mode, true, true));
      }
    }

    for (const top of oldTop) {
      if (newTop.has(top)) continue;
      const visible = path.join(this.targetDir, top);
      if (readlinkOrUndefined(visible) === path.join(DATA_DIR_NAME, top)) fs.rmSync(visible, { force: true });
    }
    if (oldDir && path.dirname(oldDir) === this.targetDir) fs.rmSync(oldDir, { recursive: true, force: true });
    return true;
  }

  private unchanged(oldDir: string, oldFiles: string[], files: Map<string, FileProjection>): boolean {
    if (oldFiles.length !== files.size) return false;
    for (const rel of oldFiles) {
      const want = files.get(rel);
      if (!want) return false;
      const p = path.join(oldDir, rel);
      const st = fs.lstatSync(p);
      const mode = this.fsGroup === undefined ? want.mode & 0o7777 : fsGroupMode(want.mode, false, true);
      if (!st.isFile() || (st.mode & 0o7777) !== mode) return false;
      if (this.fsGroup !== undefined && st.gid !== this.fsGroup) return false;
      if (!fs.readFileSync(p).equals(want.data)) return false;
    }
    return true;
  }
}
