// The files a simulated container sees: its mounts (CRI ContainerConfig.mounts, container path → host
// path) over a small synthetic root (/etc/hostname, /etc/resolv.conf). What `cat FILE` in ExecSync or
// `kemu exec` answers from. A path is looked up in the mount that holds it (the longest matching container
// path) and must stay inside that mount's host directory once links are followed, as it would inside a
// real container's mount namespace; reads are bounded.
import path from 'node:path';
import { FileTooLargeError, readFileBounded, resolveWithin, UnsafePathError } from '@kemu/safe-fs';
import type { ContainerRecord } from './types.js';

/** Largest file `cat` returns from a simulated container. */
export const SIM_FILE_MAX_BYTES = 4 * 1024 * 1024;

export type SimFileResult = { ok: true; data: Buffer } | { ok: false; error: string };

/** Reads `file` as the container would see it; `synthetic` holds files of the container's own root. */
export function readSimFile(c: ContainerRecord, file: string, synthetic: Record<string, string>): SimFileResult {
  const missing: SimFileResult = { ok: false, error: 'No such file or directory' };
  if (!file.startsWith('/') || file.includes('\0')) return missing;
  const want = path.posix.normalize(file);
  let best: { containerPath: string; hostPath: string } | undefined;
  for (const m of c.config.mounts ?? []) {
    const cp = path.posix.normalize(m.containerPath ?? '');
    if (!cp.startsWith('/') || !m.hostPath) continue;
    const inside = want === cp || want.startsWith(cp.endsWith('/') ? cp : `${cp}/`);
    if (inside && (!best || cp.length > best.containerPath.length)) best = { containerPath: cp, hostPath: m.hostPath };
  }
  if (!best) {
    const s = synthetic[want];
    return s === undefined ? missing : { ok: true, data: Buffer.from(s) };
  }
  const rel = path.posix.relative(best.containerPath, want);
  const host = rel ? path.join(best.hostPath, ...rel.split('/')) : best.hostPath;
  try {
    // A file mount (subPath of a file) is its own root; a directory mount holds the file below it.
    const resolved = rel ? resolveWithin(host, [best.hostPath], { what: 'file' }) : { real: host };
    return { ok: true, data: readFileBounded(resolved.real, SIM_FILE_MAX_BYTES, 'file') };
  } catch (err) {
    if (err instanceof UnsafePathError) {
      return { ok: false, error: err.reason === 'not-directory' ? 'Is a directory' : 'No such file or directory' };
    }
    if (err instanceof FileTooLargeError) return { ok: false, error: 'File too large' };
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return missing;
    if (code === 'EISDIR') return { ok: false, error: 'Is a directory' };
    if (code === 'EACCES') return { ok: false, error: 'Permission denied' };
    throw err;
  }
}
