#!/usr/bin/env node
// Checks what we would publish: every non-private package under packages/ must pass publint, and its
// packed tarball must resolve types for ESM consumers (attw, node16 + bundler resolution). Needs a build.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const only = process.argv.slice(2);
let failures = 0;
for (const name of fs.readdirSync(path.join(repo, 'packages')).sort()) {
  const dir = path.join(repo, 'packages', name);
  const pj = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (pj.private || (only.length && !only.includes(pj.name))) continue;
  if (!fs.existsSync(path.join(dir, 'dist', 'index.js'))) {
    console.error(`${pj.name}: dist/ is missing; run the build first (npx nx run-many -t build)`);
    failures++;
    continue;
  }
  for (const [cmd, args] of [
    ['npx', ['publint', '--strict', dir]],
    ['npx', ['attw', '--pack', dir, '--profile', 'esm-only', '--format', 'table-flipped']],
  ]) {
    const r = spawnSync(cmd, args, { cwd: repo, encoding: 'utf8' });
    if (r.status !== 0) {
      failures++;
      console.error(`${pj.name}: ${args[0]} failed\n${r.stdout}${r.stderr}`);
    }
  }
  // Packages with a consumer sample are also installed from their tarball into an empty project.
  const sample = path.join(repo, 'tools', 'pkgcheck', 'samples', `${name}.ts`);
  if (fs.existsSync(sample)) {
    const r = spawnSync(process.execPath, [path.join(repo, 'tools', 'pkgcheck', 'consumer.mjs'), dir, sample], {
      cwd: repo,
      encoding: 'utf8',
    });
    if (r.status !== 0) {
      failures++;
      console.error(`${pj.name}: consumer install failed\n${r.stdout}${r.stderr}`);
    } else process.stdout.write(r.stdout);
  }
  console.log(`${pj.name}: publint and attw ok`);
}
process.exit(failures ? 1 : 0);
