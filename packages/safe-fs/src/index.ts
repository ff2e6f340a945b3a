export { FileTooLargeError, UnsafePathError, type UnsafePathReason } from './errors.js';
export { mkdirWithin, mkdirWithinAsync } from './mkdir-within.js';
export { onMemoryFilesystem } from './memory-fs.js';
export { createFileWithinAsync, openFileWithin, openFileWithinAsync, type OpenedFile } from './open-within.js';
export { readFileBounded } from './read-bounded.js';
export { secureJoin } from './secure-join.js';
export {
  checkPathSyntax,
  isWithin,
  realPathOfExisting,
  resolveWithin,
  type ResolvedPath,
  type WithinOptions,
} from './within-root.js';
