#!/usr/bin/env node
// `npm test`: every project's vitest suite through nx (cached, dependency-ordered), then one summary line
// over all of them, "Tests: N passed, N failed, N skipped", so a reader need not add up per-package output.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const extra = process.argv.slice(2);
const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };
const nx = spawnSync(
  'npx',
  ['nx', 'run-many', '-t', 'test', '--parallel=2', '--outputStyle=stream', ...extra],
  { cwd: repo, stdio: 'inherit', env },
);

let passed = 0;
let failed = 0;
let skipped = 0;
let suites = 0;
const roots = ['packages', 'tools', '.'].flatMap((d) => {
  const abs = path.join(repo, d);
  if (d === '.') return [path.join(repo, 'e2e')];
  return fs.existsSync(abs) ? fs.readdirSync(abs).map((n) => path.join(abs, n)) : [];
});
for (const dir of roots) {
  const report = path.join(dir, 'test-results', 'vitest.json');
  if (!fs.existsSync(report)) continue;
  const r = JSON.parse(fs.readFileSync(report, 'utf8'));
  suites++;
  passed += r.numPassedTests ?? 0;
  failed += r.numFailedTests ?? 0;
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
}
console.log(`\n${suites} test projects`);
console.log(`Tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(nx.status ?? 1);
