// Whether a directory lives on a memory file system (tmpfs, ramfs). Creating a file or directory there never
// waits for a disk, and a synchronous call costs the event loop a fraction of what the same call costs
// through the thread pool (a request object, a hand-off to a pool thread and a wake-up to come back): the
// "...Async" creators below do their work synchronously there, and off the event loop everywhere else.
import fs from 'node:fs';

/** statfs(2) f_type values (linux/magic.h). */
const TMPFS_MAGIC = 0x01021994;
const RAMFS_MAGIC = 0x858458f6;

const answers = new Map<string, boolean>();
/**
 * How many answers are kept before they are all dropped. Every node of a composed cluster asks for a few
 * directories of its own (its pods' and its logs' roots), so a bound near the node count would drop the
 * answers over and over at a thousand nodes and more; 65,536 short paths are a few MiB.
 */
const MAX_ANSWERS = 65_536;

/** True when `dir` (an existing directory; the answer is kept per path) is on tmpfs or ramfs. */
export function onMemoryFilesystem(dir: string): boolean {
  let answer = answers.get(dir);
  if (answer === undefined) {
    try {
      const type = Number(fs.statfsSync(dir).type);
      answer = type === TMPFS_MAGIC || type === RAMFS_MAGIC;
    } catch {
      // Not there (yet) or not statfs-able: take the careful path, and ask again next time.
      return false;
    }
    if (answers.size >= MAX_ANSWERS) answers.clear();
    answers.set(dir, answer);
  }
  return answer;
}
