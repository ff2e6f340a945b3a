// Shared helpers for the CNI benchmarks: percentiles, medians, building the plugin executables.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const PLUGINS = ['bridge', 'host-local', 'portmap', 'loopback'];

export function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export const median = (xs) => pct(xs, 50);
export const ms = (x) => (Number.isFinite(x) ? x.toFixed(2) : '-');

/** Builds @kemu/cni and the plugin packages with their own build (tsup) when dist is missing or stale. */
export function ensureBuilt() {
  // The executables bundle @kemu/cni (and kemu-bridge also @kemu/cni-host-local) from source, so those
  // sources count for their staleness too.
  const sources = {
    cni: ['cni'],
    'cni-host-local': ['cni-host-local', 'cni'],
    'cni-bridge': ['cni-bridge', 'cni-host-local', 'cni'],
    'cni-portmap': ['cni-portmap', 'cni'],
    'cni-loopback': ['cni-loopback', 'cni'],
  };
  for (const [p, srcs] of Object.entries(sources)) {
    const dir = path.join(repo, 'packages', p);
    const dist = p === 'cni' ? path.join(dir, 'dist', 'index.js') : pluginBin(p.slice('cni-'.length));
    const stale =
      !existsSync(dist) ||
      srcs.some(
        (s) =>
          spawnSync('find', [path.join(repo, 'packages', s, 'src'), '-name', '*.ts', '-newer', dist], { encoding: 'utf8' }).stdout.trim() !== '',
      );
    if (stale) {
      const r = spawnSync('npx', ['tsup'], { cwd: dir, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`build of ${p} failed:\n${r.stdout}\n${r.stderr}`);
    }
  }
}

/** The built executable of plugin `name` (bridge, host-local, ...), as its package.json `bin` names it. */
export function pluginBin(name) {
  const dir = path.join(repo, 'packages', `cni-${name}`);
  const { bin } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  return path.join(dir, bin[`kemu-${name}`]);
}

/** A CNI_PATH directory holding the kemu plugin executables exactly as `kemu-cni install` links them. */
export function kemuBinDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const p of PLUGINS) symlinkSync(pluginBin(p), path.join(dir, `kemu-${p}`));
  return dir;
}
