import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CniError, CniErrorCode } from './errors.js';
import { parseJson } from './parse-json.js';
import { READ_LIMITS } from './read-bounded.js';
import type { Delegate } from './skeleton.js';
import { type CniResult, parseResult } from './types.js';

// child_process (with net and streams behind it) loads only when a plugin is really exec'd, not on
// every start of an executable that merely could delegate.
const lazyRequire = createRequire(import.meta.url);

export interface ExecOutput {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Finds `type` on CNI_PATH like libcni: first directory holding an executable of that name. */
export function findInPath(type: string, path: readonly string[]): string {
  if (!type || type.includes('/') || type.includes('\0') || type === '.' || type === '..') {
    throw new CniError(CniErrorCode.InvalidNetworkConfig, `invalid plugin type ${JSON.stringify(type)}`);
  }
  for (const dir of path) {
    const p = join(dir, type);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // next directory
    }
  }
  throw new CniError(CniErrorCode.PluginNotFound, `failed to find plugin "${type}" in path [${path.join(' ')}]`);
}

/** Spawns a plugin binary with an argument array (never a shell), feeds stdin, kills it after `timeoutMs`. */
export function execPlugin(
  file: string,
  env: Record<string, string | undefined>,
  stdin: string,
  timeoutMs = 60_000,
  args: readonly string[] = [],
): Promise<ExecOutput> {
  return new Promise((resolve, reject) => {
    const { spawn } = lazyRequire('node:child_process') as typeof import('node:child_process');
    const child = spawn(file, args, { env: env as NodeJS.ProcessEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    let overflow = '';
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    // A plugin's answer is a config-sized JSON document: one that writes without end is stopped, not buffered.
    const sizes = { stdout: 0, stderr: 0 };
    const collect = (which: 'stdout' | 'stderr', into: Buffer[]) => (b: Buffer) => {
      sizes[which] += b.length;
      if (sizes[which] > READ_LIMITS.config) {
        if (!overflow) child.kill('SIGKILL');
        overflow ||= which;
        return;
      }
      into.push(b);
    };
    child.stdout.on('data', collect('stdout', out));
    child.stderr.on('data', collect('stderr', err));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new CniError(CniErrorCode.IOFailure, `failed to run plugin ${file}: ${e.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) {
        reject(new CniError(CniErrorCode.TryAgainLater, `plugin ${file} timed out after ${timeoutMs} ms`));
        return;
      }
      if (overflow) {
        reject(new CniError(CniErrorCode.IOFailure, `plugin ${file} wrote more than ${READ_LIMITS.config} bytes to ${overflow}; stopped`));
        return;
      }
      resolve({ exitCode: code ?? 1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    child.stdin.on('error', () => {
      // The plugin may exit before reading stdin (e.g. bad env); its exit status tells the story.
    });
    child.stdin.end(stdin);
  });
}

/** Turns a plugin's output into a result or the CniError it reported. */
export function interpretOutput(file: string, o: ExecOutput, expectResult: boolean): CniResult | undefined {
  if (o.exitCode !== 0) {
    let parsed: { code?: unknown; msg?: unknown; details?: unknown } | undefined;
    try {
      parsed = parseJson(o.stdout, `the error of plugin ${file}`) as typeof parsed;
    } catch {
      parsed = undefined;
    }
    if (parsed && typeof parsed.code === 'number') {
      throw new CniError(parsed.code, String(parsed.msg ?? ''), typeof parsed.details === 'string' ? parsed.details : '');
    }
    const text = (o.stdout || o.stderr).trim().split('\n')[0] ?? '';
    throw new CniError(CniErrorCode.Internal, `plugin ${file} failed with exit code ${o.exitCode}: ${text}`);
  }
  if (!expectResult) return undefined;
  return parseResult(parseJson(o.stdout, `the result of plugin ${file}`));
}

/** Delegation by exec (how the reference plugins call IPAM): the same env, another CNI_COMMAND maybe. */
export const execDelegate: Delegate = async (type, command, conf, ctx) => {
  const file = findInPath(type, ctx.path);
  const env = { ...ctx.env, CNI_COMMAND: command };
  const o = await execPlugin(file, env, JSON.stringify(conf));
  return interpretOutput(file, o, command === 'ADD');
};
