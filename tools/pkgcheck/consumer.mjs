#!/usr/bin/env node
// Installs a package's `npm pack` tarball into an empty project, the way a user would, and type-checks a
// plain TypeScript file that imports it (NodeNext resolution). Usage: consumer.mjs <package-dir> <file.ts>
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const [pkgDir, sample] = process.argv.slice(2);
if (!pkgDir || !sample) {
  console.error('usage: consumer.mjs <package-dir> <sample.ts>');
  process.exit(2);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-consumer-'));
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
try {
  const tarball = run('npm', ['pack', '--silent', '--pack-destination', tmp], path.resolve(repo, pkgDir)).trim().split('\n').pop();
  fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--silent', path.join(tmp, tarball)], tmp);
  fs.copyFileSync(path.resolve(repo, sample), path.join(tmp, 'index.ts'));
  fs.writeFileSync(
    path.join(tmp, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, types: [] }, files: ['index.ts'] }),
  );
  run(process.execPath, [path.join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tmp], tmp);
  console.log(`${tarball}: installs into an empty project and its types resolve`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
