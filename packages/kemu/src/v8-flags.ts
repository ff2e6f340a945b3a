// The V8 flags a cluster process runs with. One process holds every object of every node: at 5,000 nodes
// and 150,000 pods some 5 to 6 GiB stay live, more than V8's default old-space limit (about 4 GiB), and the
// collector's cost is what pod startup latency is made of at that size:
// - `--max-old-space-size`: three quarters of the machine's memory, so a large cluster is not killed at the
//   default limit.
// - `--no-memory-reducer`: the memory reducer exists to shrink an idle browser tab. In a cluster that never
//   idles it starts a full collection at least every 100 s (its watchdog) and leaves the heap limit just
//   above the live size, so another full collection follows soon after. Each one marks the whole heap.
//   Without it, full collections come only from growth (measured in tools/bench/controllers/README.md).
// - `--heap-growing-percent=100`: after a full collection the old generation may grow to twice what
//   survived before the next one starts, as Go's default GOGC=100 lets the upstream control plane grow.
//   V8's own factor fell to barely above 1 at 5 GiB live, and two full collections ran back to back.
// - `--max-semi-space-size=64`: a young generation large enough that objects living through one reconcile
//   die young instead of being promoted, which is what fills the old generation between full collections.
// A flag the user set (on node's command line or in NODE_OPTIONS) wins. V8 reads these when the process
// starts, so a process that lacks them runs the same command again in a node that has them.
import { spawn } from 'node:child_process';
import os from 'node:os';
import tty from 'node:tty';

/** The flags to add to a node started with `execArgv` and `nodeOptions`: each one the user left unset. */
export function clusterV8Flags(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
  totalMemBytes = os.totalmem(),
): string[] {
  // V8 takes `_` for `-` and `--noname` for `--no-name`.
  const given = [...execArgv, ...nodeOptions.split(/\s+/)].map((a) => a.replaceAll('_', '-'));
  const has = (name: string) =>
    given.some((a) => a === `--${name}` || a === `--no-${name}` || a === `--no${name}` || a.startsWith(`--${name}=`));
  const out: string[] = [];
  if (!has('max-old-space-size')) out.push(`--max-old-space-size=${Math.max(1024, Math.floor((totalMemBytes * 0.75) / 2 ** 20))}`);
  if (!has('memory-reducer')) out.push('--no-memory-reducer');
  if (!has('heap-growing-percent')) out.push('--heap-growing-percent=100');
  if (!has('max-semi-space-size')) out.push('--max-semi-space-size=64');
  return out;
}

/**
 * Runs this same command in a node started with `flags` as well, and resolves with its exit code (128 + the
 * signal number when a signal ended it, as a shell reports it). The child shares this process's group, so
 * a Ctrl-C at a terminal reaches it directly; SIGINT from elsewhere, SIGTERM and SIGHUP are passed on.
 */
export function runWithV8Flags(flags: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, [...process.execArgv, ...flags, ...process.argv.slice(1)], { stdio: 'inherit' });
  const pass = (s: NodeJS.Signals) => () => {
    // The terminal sent its Ctrl-C to the whole foreground group: the child has it already.
    if (s === 'SIGINT' && tty.isatty(0)) return;
    if (child.exitCode === null && child.signalCode === null) child.kill(s);
  };
  const handlers = (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((s) => [s, pass(s)] as const);
  for (const [s, h] of handlers) process.on(s, h);
  const done = () => {
    for (const [s, h] of handlers) process.off(s, h);
  };
  return new Promise((resolve, reject) => {
    child.once('error', (err) => {
      done();
      reject(err);
    });
    child.once('exit', (code, signal) => {
      done();
      resolve(code ?? 128 + (signal ? os.constants.signals[signal] : 0));
    });
  });
}

/**
 * Calls `stop` on the first SIGINT or SIGTERM and resolves when it settles. The same signal again within a
 * second is taken for a copy of the first (a wrapper passing on what the terminal also sent); later, a
 * second signal ends the process at once, as a second Ctrl-C does elsewhere.
 */
export function untilStopSignal(stop: () => Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    let firstAt = 0;
    const on = (s: NodeJS.Signals) => () => {
      if (firstAt === 0) {
        firstAt = Date.now();
        stop().then(finish, finish);
        return;
      }
      if (Date.now() - firstAt < 1000) return;
      process.exit(128 + os.constants.signals[s]);
    };
    const onInt = on('SIGINT');
    const onTerm = on('SIGTERM');
    const finish = () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve();
    };
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
  });
}
