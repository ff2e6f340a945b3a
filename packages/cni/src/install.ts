#!/usr/bin/env node
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { Command } from 'commander';
import { DEFAULT_DAEMON_SOCKET, serveCniDaemon } from './daemon.js';
import type { CniPlugin } from './skeleton.js';

const PLUGINS = ['@kemu/cni-bridge', '@kemu/cni-host-local', '@kemu/cni-portmap', '@kemu/cni-loopback'];

interface InstalledPlugin {
  name: string;
  target: string;
  link: string;
}

/**
 * Links every installed plugin package's executable into `binDir` (a CNI_PATH directory). `names:
 * 'reference'` links them under the reference plugins' names instead (`kemu-bridge` as `bridge`, ...), so
 * existing network configs (`"type": "bridge"`) run kemu's plugins unchanged.
 */
function installPlugins(binDir: string, opts: { force?: boolean; names?: 'kemu' | 'reference' } = {}): InstalledPlugin[] {
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
      const linkName = opts.names === 'reference' ? name.replace(/^kemu-/, '') : name;
      found.push({ name, target, link: join(binDir, linkName) });
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
  .option('--names <style>', 'kemu (kemu-bridge, ...) or reference (bridge, host-local, portmap, loopback)', 'kemu')
  .action((o: { binDir: string; force: boolean; names: string }) => {
    try {
      if (o.names !== 'kemu' && o.names !== 'reference') throw new Error(`--names must be kemu or reference, got ${JSON.stringify(o.names)}`);
      for (const p of installPlugins(resolve(o.binDir), { force: o.force, names: o.names })) process.stdout.write(`${p.link} -> ${p.target}\n`);
    } catch (e) {
      process.stderr.write(`kemu-cni: ${(e as Error).message}\n`);
      process.exitCode = 1;
    }
  });

/** The plugin objects the installed plugin packages export (objects with a name and add/del). */
async function loadPlugins(packages: readonly string[]): Promise<{ plugins: CniPlugin[]; missing: string[] }> {
  const plugins: CniPlugin[] = [];
  const missing: string[] = [];
  for (const pkg of packages) {
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pkg)) as Record<string, unknown>;
    } catch {
      missing.push(pkg);
      continue;
    }
    for (const v of Object.values(mod)) {
      const p = v as Partial<CniPlugin> | null;
      if (p && typeof p === 'object' && typeof p.name === 'string' && typeof p.add === 'function' && typeof p.del === 'function')
        plugins.push(p as CniPlugin);
    }
  }
  return { plugins, missing };
}

program
  .command('daemon')
  .description(
    'serve the kemu plugin executables from one resident process: a plugin started while it runs hands its call over, saving its own start-up work',
  )
  .option('--socket <path>', 'unix socket the plugins connect to (they look for the default unless KEMU_CNI_DAEMON says otherwise)', DEFAULT_DAEMON_SOCKET)
  .option('--plugins <packages>', 'comma-separated plugin packages to serve', PLUGINS.join(','))
  .option('-v, --verbose', 'log every call on stderr', false)
  .action(async (o: { socket: string; plugins: string; verbose: boolean }) => {
    try {
      const { plugins, missing } = await loadPlugins(o.plugins.split(',').filter(Boolean));
      if (plugins.length === 0) throw new Error(`no plugin packages found; install them: npm install ${missing.join(' ')}`);
      const daemon = await serveCniDaemon({
        socketPath: resolve(o.socket),
        plugins,
        onRequest: o.verbose
          ? (r) =>
              process.stderr.write(
                `${r.plugin || '-'} ${r.command || '-'} ${r.handled ? 'handled' : `declined: ${r.reason}`} ${r.ms.toFixed(1)} ms\n`,
              )
          : undefined,
      });
      process.stderr.write(`kemu-cni daemon: serving ${daemon.plugins.join(', ')} on ${daemon.socketPath}\n`);
      const stop = () => {
        void daemon.close().then(() => process.exit(0));
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    } catch (e) {
      process.stderr.write(`kemu-cni: ${(e as Error).message}\n`);
      process.exitCode = 1;
    }
  });

await program.parseAsync(process.argv);
