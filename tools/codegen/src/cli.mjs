#!/usr/bin/env node
// Generates packages/proto/src/generated/<api>.ts from proto/. With --check it writes nothing and exits 1
// when a committed file differs from what the schemas produce.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { apis } from './apis.mjs';
import { generateModule } from './generate.mjs';
import { loadProto } from './load.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const protoDir = path.join(repo, 'proto');
const outDir = path.join(repo, 'packages', 'proto', 'src', 'generated');
const check = process.argv.includes('--check');

let stale = 0;
for (const api of apis) {
  const src = generateModule(loadProto(protoDir, api.file), api);
  const target = path.join(outDir, `${api.module}.ts`);
  const rel = path.relative(repo, target);
  const current = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : null;
  if (check) {
    if (current !== src) {
      stale++;
      console.error(`${rel} is stale: run \`npm run codegen\` and commit the result`);
    }
    continue;
  }
  fs.mkdirSync(outDir, { recursive: true });
  if (current !== src) fs.writeFileSync(target, src);
  console.log(`${current === src ? 'unchanged' : 'wrote'} ${rel}`);
}
if (stale) process.exit(1);
if (check) console.log(`generated code is up to date (${apis.length} APIs)`);
