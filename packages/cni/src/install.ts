#!/usr/bin/env node
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { Command } from 'commander';

const PLUGINS = ['@kemu/cni-bridge', '@kemu/cni-host-local', '@kemu/cni-portmap', '@kemu/cni-loopback'];

interface InstalledPlugin {
  name: string;
  target: string;
  link: string;
}

/** Links every installed plugin package's executable into `binDir` (a CNI_PATH directory). */
function installPlugins(binDir: string, opts: { force?: boolean } = {}): InstalledPlugin[] {
  const require = createRequire(import.meta.url);
  const found: InstalledPlugin[] = [];
  const missing: string[] = [];
  for (const pkg of PLUGINS) {
    let pkgJson: string;
    try {
      pkgJson = require.resolve(`${pkg}/package.json`);
    } catch {
      missing.push(pkg);
      continue;
    }
    const manifest = JSON.parse(readFileSync(pkgJson, 'utf8')) as { bin?: Record<string, string> };
    for (const [name, rel] of Object.entries(manifest.bin ?? {})) {
      const target = resolve(dirname(pkgJson), rel);
      if (!existsSync(target)) throw new Error(`${pkg} is not built (${target} missing): run "npm run build" first`);
      found.push({ name, target, link: join(binDir, name) });
    }
  }
  if (found.length === 0) throw new Error(`no plugin packages found; install them: npm install ${missing.join(' ')}`);
  mkdirSync(binDir, { recursive: true, mode: 0o755 });
  for (const p of found) {
    let exists = false;
    try {
      lstatSync(p.link);
      exists = true;
    } catch {
      exists = false;
    }
    if (exists) {
      if (!opts.force) throw new Error(`${p.link} already exists; pass --force to replace it`);
      rmSync(p.link, { force: true });
    }
    symlinkSync(p.target, p.link);
  }
  return found;
}

const program = new Command('kemu-cni');
program
  .command('install')
  .description('install the kemu CNI plugin executables into a CNI bin directory')
  .requiredOption('--bin-dir <dir>', 'directory on CNI_PATH, e.g. /opt/cni/bin')
  .option('--force', 'replace existing files of the same name', false)
  .action((o: { binDir: string; force: boolean }) => {
    try {
      for (const p of installPlugins(resolve(o.binDir), { force: o.force })) process.stdout.write(`${p.link} -> ${p.target}\n`);
    } catch (e) {
      process.stderr.write(`kemu-cni: ${(e as Error).message}\n`);
      process.exitCode = 1;
    }
  });

await program.parseAsync(process.argv);
