import { promises as fs } from 'node:fs';
import path from 'node:path';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Claims a state directory for this process, so two drivers never write the same state file. A lock left
 * by a process that no longer exists (after a SIGKILL) is taken over.
 */
export async function lockStateDir(dir: string): Promise<{ release(): Promise<void> }> {
  const file = path.join(dir, 'kemu-csi.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.writeFile(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return {
        release: async () => {
          const owner = Number((await fs.readFile(file, 'utf8').catch(() => '')).trim());
          if (owner === process.pid) await fs.rm(file, { force: true });
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = Number((await fs.readFile(file, 'utf8').catch(() => '')).trim());
      if (owner && owner !== process.pid && alive(owner)) {
        throw new Error(
          `state directory ${dir} is in use by kemu-csi pid ${owner}; stop it or use another --state-dir`,
        );
      }
      await fs.rm(file, { force: true });
    }
  }
  throw new Error(`cannot lock state directory ${dir}`);
}
