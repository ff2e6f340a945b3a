// The files a simulated container sees: its mounts (CRI ContainerConfig.mounts, container path → host
// path) over its own writable layer (a host directory per container, where `kubectl cp` and `tar x` write,
// as a real container writes to its root file system's upper layer) and a small synthetic root
// (/etc/hostname, /etc/resolv.conf). What `cat FILE`, `test` and `tar` in ExecSync, exec or `kemu exec`
// answer from. A path is looked up in the mount that holds it (the longest matching container path), else in
// the writable layer; links are resolved as the container's processes see them (a target is a path in the
// container, looked up again through its mounts), and what is read must still lie inside the directory
// found, checked on the host as well; reads are bounded.
import fs from 'node:fs';
import path from 'node:path';
import { FileTooLargeError, readFileBounded, resolveWithin, UnsafePathError } from '@kemu/safe-fs';
import type { ContainerRecord } from './types.js';

/** Largest file `cat` returns from a simulated container. */
export const SIM_FILE_MAX_BYTES = 4 * 1024 * 1024;

export type SimFileResult = { ok: true; data: Buffer } | { ok: false; error: string };

/** Where a container path lives on the host. */
export interface SimLocation {
  /** The directory (or file, for a file mount) the path must stay inside: a mount's host path or the layer. */
  root: string;
  /** The path's host path as written (links not yet followed). */
  host: string;
  /** The path relative to `root` ('' for the root itself). */
  rel: string;
  readOnly: boolean;
  /** In the writable layer rather than in a mount (the synthetic root shows through where it has no file). */
  layer: boolean;
}

/**
 * Where `file` (absolute, in the container) lives: the longest mount holding it, else the container's
 * writable layer `rootfs` (undefined when the container has none).
 */
export function locateSimPath(c: ContainerRecord, file: string, rootfs?: string): SimLocation | undefined {
  if (!file.startsWith('/') || file.includes('\0')) return undefined;
  const want = path.posix.normalize(file);
  let best: { containerPath: string; hostPath: string; readOnly: boolean } | undefined;
  for (const m of c.config.mounts ?? []) {
    const cp = path.posix.normalize(m.containerPath ?? '');
    if (!cp.startsWith('/') || !m.hostPath) continue;
    const inside = want === cp || want.startsWith(cp.endsWith('/') ? cp : `${cp}/`);
    if (inside && (!best || cp.length > best.containerPath.length)) best = { containerPath: cp, hostPath: m.hostPath, readOnly: m.readonly === true };
  }
  const at = best ?? (rootfs ? { containerPath: '/', hostPath: rootfs, readOnly: false } : undefined);
  if (!at) return undefined;
  const rel = path.posix.relative(at.containerPath, want);
  return { root: at.hostPath, host: rel ? path.join(at.hostPath, ...rel.split('/')) : at.hostPath, rel, readOnly: at.readOnly, layer: !best };
}

/** As many links as Linux follows in one lookup before ELOOP. */
const MAX_LINKS = 40;

/**
 * `file` with the container's symbolic links resolved as its processes see them: a link's target is a path
 * in the container (an absolute one starts again at the container's root, `..` stops there), looked up again
 * through the mounts and the writable layer. Each component is lstat'ed, never followed on the host.
 */
export function resolveSimLinks(c: ContainerRecord, file: string, rootfs?: string): string {
  const parts = file.split('/');
  const done: string[] = [];
  let links = 0;
  while (parts.length) {
    const part = parts.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      done.pop();
      continue;
    }
    const at = `/${[...done, part].join('/')}`;
    const loc = locateSimPath(c, at, rootfs);
    // A mount's own root is what the runtime mounted there, whatever it is on the host.
    let st: fs.Stats | undefined;
    try {
      st = loc?.rel ? fs.lstatSync(loc.host, { throwIfNoEntry: false }) : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOTDIR') throw err;
    }
    if (!st?.isSymbolicLink()) {
      done.push(part);
      continue;
    }
    if (++links > MAX_LINKS) throw Object.assign(new Error(`${file}: too many levels of symbolic links`), { code: 'ELOOP' });
    const target = fs.readlinkSync(loc!.host);
    if (target.startsWith('/')) done.length = 0;
    parts.unshift(...target.split('/'));
  }
  return `/${done.join('/')}`;
}

/** The real path of `loc` with every link followed, refused (UnsafePathError) when a link leads out of its root. */
export function realSimPath(loc: SimLocation): string {
  // A file mount (subPath of a file) is its own root; a directory mount holds the file below it.
  return loc.rel ? resolveWithin(loc.host, [loc.root], { what: 'file' }).real : loc.host;
}

const errnoText: Record<string, string> = {
  ENOENT: 'No such file or directory',
  ENOTDIR: 'Not a directory',
  EISDIR: 'Is a directory',
  EACCES: 'Permission denied',
  EEXIST: 'File exists',
  EROFS: 'Read-only file system',
  ENOSPC: 'No space left on device',
  ELOOP: 'Too many levels of symbolic links',
};

/** The message a shell tool prints for a file-system error (an unexpected one is rethrown). */
export function simFsError(err: unknown): string {
  if (err instanceof UnsafePathError) {
    // The container cannot see past its own file system: a link out of it leads nowhere.
    return err.reason === 'not-directory' ? 'Not a directory' : 'No such file or directory';
  }
  if (err instanceof FileTooLargeError) return 'File too large';
  const text = errnoText[(err as NodeJS.ErrnoException).code ?? ''];
  if (text) return text;
  throw err;
}

/** Reads `file` as the container would see it; `synthetic` holds files of the container's own root. */
export function readSimFile(c: ContainerRecord, file: string, synthetic: Record<string, string>, rootfs?: string): SimFileResult {
  const missing: SimFileResult = { ok: false, error: 'No such file or directory' };
  if (!file.startsWith('/') || file.includes('\0')) return missing;
  try {
    file = resolveSimLinks(c, file, rootfs);
  } catch (err) {
    return { ok: false, error: simFsError(err) };
  }
  const loc = locateSimPath(c, file, rootfs);
  const fromSynthetic = (): SimFileResult => {
    const s = synthetic[path.posix.normalize(file)];
    return s === undefined ? missing : { ok: true, data: Buffer.from(s) };
  };
  if (!loc) return file.startsWith('/') && !file.includes('\0') ? fromSynthetic() : missing;
  try {
    return { ok: true, data: readFileBounded(realSimPath(loc), SIM_FILE_MAX_BYTES, 'file') };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (loc.layer && (code === 'ENOENT' || code === 'ENOTDIR')) return fromSynthetic();
    if (err instanceof UnsafePathError && err.reason === 'not-directory') return { ok: false, error: 'Is a directory' };
    return { ok: false, error: simFsError(err) };
  }
}

/** What `file` is in the container (links followed), or undefined when it does not exist. */
export function statSimPath(c: ContainerRecord, file: string, synthetic: Record<string, string>, rootfs?: string): 'file' | 'directory' | 'other' | undefined {
  if (!file.startsWith('/') || file.includes('\0')) return undefined;
  try {
    file = resolveSimLinks(c, file, rootfs);
  } catch {
    return undefined;
  }
  const loc = locateSimPath(c, file, rootfs);
  const normal = file.startsWith('/') ? path.posix.normalize(file) : undefined;
  const syntheticKind = () => {
    if (normal === undefined) return undefined;
    if (synthetic[normal] !== undefined) return 'file' as const;
    const dir = normal.endsWith('/') ? normal : `${normal}/`;
    // A directory holding synthetic files or mount points exists in the container even if nothing else is there.
    const shown = [...Object.keys(synthetic), ...(c.config.mounts ?? []).map((m) => path.posix.normalize(m.containerPath ?? ''))];
    return normal === '/' || shown.some((k) => k.startsWith(dir)) ? ('directory' as const) : undefined;
  };
  if (!loc) return syntheticKind();
  try {
    const st = fs.statSync(realSimPath(loc));
    return st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other';
  } catch (err) {
    if (err instanceof UnsafePathError) return undefined;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return loc.layer ? syntheticKind() : undefined;
    throw err;
  }
}
