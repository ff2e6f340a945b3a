import path from 'node:path';
import { invalid } from './errors.js';

/** Longest name or id the driver accepts; the spec asks plugins to support at least 128 bytes. */
export const MAX_NAME_BYTES = 128;

/**
 * Check an identifier taken from a request (volume id, snapshot id, name). Ids become file names in the
 * hostpath backend, so anything that could escape a directory is refused outright.
 */
export function checkIdentifier(kind: string, value: string): void {
  if (value.includes('\0')) throw invalid(`${kind} must not contain a NUL byte`);
  if (value.includes('/') || value.includes('\\'))
    throw invalid(`${kind} "${value}" must not contain "/" or "\\"`);
  if (value === '.' || value.includes('..')) throw invalid(`${kind} "${value}" must not contain ".."`);
  if (Buffer.byteLength(value) > MAX_NAME_BYTES) {
    throw invalid(`${kind} is ${Buffer.byteLength(value)} bytes long; at most ${MAX_NAME_BYTES} are allowed`);
  }
  if (/[\x00-\x1f\x7f]/.test(value)) throw invalid(`${kind} must not contain control characters`);
}

export function requireField(kind: string, value: string | undefined | null): string {
  if (!value) throw invalid(`${kind} is required`);
  return value;
}

export function requireId(kind: string, value: string | undefined | null): string {
  const v = requireField(kind, value);
  checkIdentifier(kind, v);
  return v;
}

/**
 * Check a node-side path (staging or target): absolute, normalised (no ".." segments), no NUL, and under
 * one of the allowed roots. Returns the normalised path.
 */
export function checkNodePath(kind: string, value: string, roots: readonly string[]): string {
  if (value.includes('\0')) throw invalid(`${kind} must not contain a NUL byte`);
  if (!path.isAbsolute(value)) throw invalid(`${kind} "${value}" must be an absolute path`);
  if (value.split('/').includes('..')) throw invalid(`${kind} "${value}" must not contain ".." segments`);
  const norm = path.resolve(value);
  if (norm === '/') throw invalid(`${kind} must not be "/"`);
  const ok = roots.some((r) => {
    const root = path.resolve(r);
    return norm !== root && (norm.startsWith(root.endsWith('/') ? root : `${root}/`) || root === '/');
  });
  if (!ok) {
    throw invalid(
      `${kind} "${value}" is outside the allowed roots (${roots.join(', ')}); start the driver with --path-root to allow another root`,
    );
  }
  return norm;
}

/** Mount flags a bind mount can honour; anything else is refused instead of silently ignored. */
export const SUPPORTED_MOUNT_FLAGS = new Set([
  'ro',
  'rw',
  'nosuid',
  'suid',
  'nodev',
  'dev',
  'noexec',
  'exec',
  'noatime',
  'atime',
  'nodiratime',
  'diratime',
  'relatime',
  'norelatime',
  'strictatime',
  'bind',
  'defaults',
]);

export function checkMountFlags(flags: readonly string[]): void {
  for (const f of flags) {
    if (!SUPPORTED_MOUNT_FLAGS.has(f)) {
      throw invalid(
        `mount flag "${f}" is not supported; supported flags: ${[...SUPPORTED_MOUNT_FLAGS].join(', ')}`,
      );
    }
  }
}

/** File system types the hostpath backend can present (it serves directories, so this is a label). */
export const SUPPORTED_FS_TYPES = new Set(['', 'ext4', 'ext3', 'xfs', 'btrfs', 'tmpfs']);

/** The spec's rule for a plugin name: domain-name notation, at most 63 characters. */
export function checkDriverName(name: string): void {
  if (!/^[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,61}[a-zA-Z0-9])?$/.test(name)) {
    throw new Error(
      `driver name "${name}" must be at most 63 characters of letters, digits, "-", "_" and ".", starting and ending with a letter or digit (e.g. kemu.csi.k8s.io)`,
    );
  }
}
