// Shared helpers for the CNI benchmarks: percentiles, medians, building the plugin executables.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
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
  // Dependency order: the bridge executable bundles @kemu/cni and @kemu/cni-host-local.
  for (const p of ['cni', 'cni-host-local', 'cni-bridge', 'cni-portmap', 'cni-loopback']) {
    const dir = path.join(repo, 'packages', p);
    const dist = path.join(dir, 'dist', p === 'cni' ? 'index.js' : 'main.js');
    const srcNewest = Math.max(
      ...spawnSync('find', [path.join(dir, 'src'), '-name', '*.ts', '-newer', existsSync(dist) ? dist : '/'], {
        encoding: 'utf8',
      })
        .stdout.split('\n')
        .filter(Boolean)
        .map((f) => statSync(f).mtimeMs),
      0,
    );
    if (!existsSync(dist) || srcNewest > 0) {
      const r = spawnSync('npx', ['tsup'], { cwd: dir, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`build of ${p} failed:\n${r.stdout}\n${r.stderr}`);
    }
  }
}

/** A CNI_PATH directory holding the kemu plugin executables exactly as `kemu-cni install` links them. */
export function kemuBinDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const p of PLUGINS) symlinkSync(path.join(repo, 'packages', `cni-${p}`, 'dist', 'main.js'), path.join(dir, `kemu-${p}`));
  return dir;
}
