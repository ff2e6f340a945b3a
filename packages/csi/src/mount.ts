import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Decode the octal escapes mountinfo uses for spaces and other special bytes. */
function unescapeMountinfo(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}

/** Mount points currently visible to this process. */
export async function mountPoints(): Promise<Set<string>> {
  const text = await fs.readFile('/proc/self/mountinfo', 'utf8');
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length > 4) out.add(unescapeMountinfo(f[4]!));
  }
  return out;
}

export async function isMountPoint(p: string): Promise<boolean> {
  let real: string;
  try {
    real = await fs.realpath(p);
  } catch {
    return false;
  }
  return (await mountPoints()).has(real);
}

async function mountCmd(args: string[]): Promise<void> {
  try {
    await run('mount', args);
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`mount ${args.join(' ')} failed: ${(err.stderr || err.message).trim()}`);
  }
}

/** Bind-mount source onto target, then apply read-only and the other flags with a remount. */
export async function bindMount(source: string, target: string, flags: readonly string[]): Promise<void> {
  await mountCmd(['--bind', source, target]);
  const extra = flags.filter((f) => f !== 'bind' && f !== 'defaults' && f !== 'rw');
  if (extra.length > 0) {
    try {
      await mountCmd(['-o', ['remount', 'bind', ...extra].join(','), target]);
    } catch (e) {
      // leave no half-configured mount behind
      await unmount(target).catch(() => {});
      throw e;
    }
  }
}

export async function unmount(target: string): Promise<void> {
  try {
    await run('umount', [target]);
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`umount ${target} failed: ${(err.stderr || err.message).trim()}`);
  }
}

export const canMount = process.getuid?.() === 0;
