// The prologue of the benchmarks that run the workspace's TypeScript as is: the script re-executes itself
// once under tsx with the `@kemu/source` export condition (so `@kemu/*` resolves to `src/`, no build
// needed), from the repository root, and exits with the child's status; in the child this returns at once.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = 'KEMU_BENCH_CHILD';

/** Re-runs the script at `moduleUrl` from source with extra Node flags (e.g. `--expose-gc`); returns only in the child. */
export function runFromSource(moduleUrl, nodeFlags = []) {
  if (process.env[CHILD]) return;
  const r = spawnSync(process.execPath, [...nodeFlags, '--conditions=@kemu/source', '--import', 'tsx', fileURLToPath(moduleUrl), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, [CHILD]: '1' },
    cwd: fileURLToPath(new URL('../../..', import.meta.url)),
  });
  process.exit(r.status ?? 1);
}

/** The value after `--name` on the command line, or `def`. */
export function argValue(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : def;
}
