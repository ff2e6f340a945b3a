// Small /proc and child-process helpers for the process backend.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { PassThrough } from 'node:stream';
import type { StreamSession } from './types.js';

/** Process start time (clock ticks since boot) from /proc/PID/stat: with the pid, a stable identity. */
export function procStartTime(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[19]);
  } catch {
    return undefined;
  }
}

export function procAlive(pid: number, start?: number): boolean {
  const s = procStartTime(pid);
  if (s === undefined) return false;
  try {
    const state = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (state.slice(state.lastIndexOf(')') + 2).startsWith('Z')) return false;
  } catch {
    return false;
  }
  return start === undefined || s === start;
}

export function childrenOf(pid: number): number[] {
  try {
    return fs
      .readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Follows a chain of single children `depth` levels down (wrappers that fork: nsenter, unshare --fork). */
export async function descend(pid: number, depth: number, timeoutMs = 5000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let cur = pid;
  for (let level = 0; level < depth; level++) {
    for (;;) {
      const kids = childrenOf(cur);
      if (kids.length > 0) {
        cur = kids[0];
        break;
      }
      if (!procAlive(cur)) throw new Error(`process ${cur} exited before its child started`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for process ${cur} to start its child`);
      await new Promise((r) => setTimeout(r, 2));
    }
  }
  return cur;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a helper (argument array, no shell) and collects its output. */
export function run(cmd: string, args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => {
      stdout += d;
    });
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : undefined;
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code: code ?? 128 + (signal ? (osSignals[signal] ?? 0) : 0), stdout, stderr });
    });
    if (child.stdin) {
      child.stdin.on('error', () => {}); // the helper may exit without reading its input
      child.stdin.end(opts.input);
    }
  });
}

export async function runOk(cmd: string, args: string[]): Promise<string> {
  const r = await run(cmd, args, { timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr.trim() || `exit code ${r.code}`}`);
  return r.stdout;
}

import os from 'node:os';

export const osSignals = os.constants.signals as Record<string, number>;

export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (osSignals[signal] ?? 0) : 0);
}

export function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * The stream session of a non-TTY exec run as a detached child (its own process group): stdout and stderr
 * as the client asked for them, the exit code (128+n for a signal), and kill taking the whole group.
 */
export function childExecSession(child: ChildProcess, opts: { stdout: boolean; stderr: boolean }): StreamSession {
  const out = new PassThrough();
  const errOut = new PassThrough();
  child.stdout!.pipe(out);
  child.stderr!.pipe(errOut);
  const exit = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(exitCodeOf(code, signal)));
  });
  return {
    stdin: child.stdin ?? undefined,
    stdout: opts.stdout ? out : undefined,
    stderr: opts.stderr ? errOut : undefined,
    exit,
    kill: () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already exited
      }
    },
  };
}
