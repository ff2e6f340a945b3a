import path from 'node:path';
import { checkPathSyntax, isWithin, resolveWithin, UnsafePathError } from '@kemu/safe-fs';
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

export interface NodePath {
  /** The path as requested, normalised: the key the driver keeps its records under. */
  path: string;
  /** The allowed root it lies under; the backends create what is missing below it and nowhere else. */
  root: string;
}

/**
 * Check a node-side path (staging or target): absolute, no ".." segments, no NUL, strictly under one of the
 * allowed roots, and still under it once the symbolic links of its existing part are followed.
 *
 * With `followLast: false` the last component is not followed, only its parent directories are: for calls
 * that take down what the driver itself put there (an unmount, or the link the mount-less hostpath backend
 * publishes with, which leads to the volume's data outside the root). The backends never follow it there.
 */
export function nodePathIn(
  kind: string,
  value: string,
  roots: readonly string[],
  opts: { followLast?: boolean } = {},
): NodePath {
  try {
    if (opts.followLast === false) {
      const norm = checkPathSyntax(value, kind);
      const parent = resolveWithin(path.dirname(norm), roots, { what: kind, allowRoot: true });
      if (!isWithin(norm, parent.root)) {
        throw new UnsafePathError('outside-root', value, `${kind} ${JSON.stringify(value)} is outside the allowed roots`);
      }
      return { path: norm, root: parent.root };
    }
    const r = resolveWithin(value, roots, { what: kind });
    return { path: r.path, root: r.root };
  } catch (e) {
    if (!(e instanceof UnsafePathError)) throw e;
    if (e.reason === 'outside-root') {
      throw invalid(
        `${kind} "${value}" is outside the allowed roots (${roots.join(', ')}); start the driver with --path-root to allow another root`,
      );
    }
    throw invalid(e.message);
  }
}

/** nodePathIn for callers that need only the normalised path. */
export function checkNodePath(
  kind: string,
  value: string,
  roots: readonly string[],
  opts: { followLast?: boolean } = {},
): string {
  return nodePathIn(kind, value, roots, opts).path;
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
