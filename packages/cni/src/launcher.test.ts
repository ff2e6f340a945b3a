import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LaunchReport } from './launcher.js';

const here = dirname(fileURLToPath(import.meta.url));
// Under the repo so the fixture's require('yaml') resolves from node_modules (and goes through the hook).
const dir = join(here, '..', '..', '..', 'node_modules', '.cache', 'kemu-launcher-test', String(process.pid));
const cacheFile = join(dir, 'bundle.cjs.v8cache');

beforeAll(async () => {
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  mkdirSync(dir, { recursive: true });
  await esbuild.build({
    entryPoints: [join(here, 'launcher.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: join(dir, 'launcher.mjs'),
    logLevel: 'silent',
  });
  writeFileSync(join(dir, 'bin.mjs'), "import { launch } from './launcher.mjs';\nlaunch(new URL('./bundle.cjs', import.meta.url));\n");
  // A plugin-like program: a #! line, a dependency from node_modules, output, an exit status.
  writeFileSync(
    join(dir, 'bundle.cjs'),
    [
      '#!/usr/bin/env node',
      "const yaml = require('yaml');",
      'const input = JSON.parse(require("node:fs").readFileSync(0, "utf8"));',
      'process.stdout.write(yaml.stringify({ got: input.n * 2, file: __filename.endsWith("bundle.cjs") }));',
      'process.exitCode = input.fail ? 1 : 0;',
      // import() of a vm-compiled script goes through the launcher's.
      "globalThis[Symbol.for('kemu.cni.dynamicImport')]('yaml').then((m) => process.stdout.write(`dyn: ${typeof m.stringify}\\n`));",
    ].join('\n'),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(command: string, input: Record<string, unknown>, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(dir, 'bin.mjs')], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    env: { PATH: process.env.PATH, CNI_COMMAND: command, KEMU_CNI_CODE_CACHE: 'debug', ...env },
  });
  const line = r.stderr.split('\n').find((l) => l.startsWith('kemu-cni code cache: '));
  const report = line ? (JSON.parse(line.slice('kemu-cni code cache: '.length)) as LaunchReport) : undefined;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, report };
}

describe('plugin launcher with code cache', () => {
  it('runs the bundle as the program; only a successful ADD writes the cache, later runs compile from it', () => {
    rmSync(cacheFile, { force: true });
    const v = run('VERSION', { n: 1 });
    expect(v.status).toBe(0);
    expect(v.stdout).toBe('got: 2\nfile: true\ndyn: function\n');
    expect(v.report).toMatchObject({ loaded: false, written: false });
    expect(run('ADD', { n: 2, fail: true }).report).toMatchObject({ written: false });
    expect(existsSync(cacheFile)).toBe(false);

    const first = run('ADD', { n: 3 });
    expect(first.stdout).toBe('got: 6\nfile: true\ndyn: function\n');
    expect(first.report).toMatchObject({ loaded: false, hits: 0, written: true });
    expect(first.report!.misses).toBeGreaterThan(1); // the bundle and yaml's files
    expect(statSync(cacheFile).mode & 0o777).toBe(0o644);

    const second = run('ADD', { n: 4 });
    expect(second.stdout).toBe('got: 8\nfile: true\ndyn: function\n');
    expect(second.report).toMatchObject({ loaded: true, misses: 0, written: false, hits: first.report!.misses });
    expect(run('DEL', { n: 5 }).report).toMatchObject({ loaded: true, misses: 0, written: false });
  });

  it('ignores a damaged cache or one others may write, and replaces it after the next ADD', () => {
    writeFileSync(cacheFile, 'not a cache\n\u0000\u0001');
    const damaged = run('ADD', { n: 1 });
    expect(damaged.stdout).toBe('got: 2\nfile: true\ndyn: function\n');
    expect(damaged.report).toMatchObject({ loaded: false, written: true });
    expect(run('ADD', { n: 1 }).report).toMatchObject({ loaded: true, misses: 0 });

    // Same header, bytecode V8 will not take: rejected, compiled afresh, rewritten.
    const buf = readFileSync(cacheFile);
    const nl = buf.indexOf(10);
    for (let i = nl + 1; i < buf.length; i += 7) buf[i] = buf[i]! ^ 0xff;
    writeFileSync(cacheFile, buf);
    const rejected = run('ADD', { n: 2 });
    expect(rejected.stdout).toBe('got: 4\nfile: true\ndyn: function\n');
    expect(rejected.report).toMatchObject({ loaded: true, hits: 0, written: true });

    chmodSync(cacheFile, 0o666);
    expect(run('ADD', { n: 3 }).report).toMatchObject({ loaded: false, written: true });
    expect(statSync(cacheFile).mode & 0o777).toBe(0o644);
  });

  it('KEMU_CNI_CODE_CACHE=off neither reads nor writes a cache', () => {
    rmSync(cacheFile, { force: true });
    const r = run('ADD', { n: 1 }, { KEMU_CNI_CODE_CACHE: 'off' });
    expect(r.stdout).toBe('got: 2\nfile: true\ndyn: function\n');
    expect(r.report).toBeUndefined();
    expect(existsSync(cacheFile)).toBe(false);
  });
});
