#!/usr/bin/env node
// Process start-up cost of the kemu plugin executables, against bare `node -e 0` and the reference
// plugins in /usr/lib/cni, all measured by hyperfine in one run:
//   VERSION      kemu-loopback, kemu-host-local, kemu-bridge, kemu-portmap (no native module, no file work)
//   host-local   ADD of one address into an emptied dataDir (reference host-local vs kemu-host-local:
//                the path of an IPAM delegated to by a reference bridge)
// Needs no network namespace; the full bridge ADD/DEL through netns lives in add-del.mjs.
//
//   node tools/bench/cni/startup.mjs [--runs 30] [--warmup 5] [--json FILE]
//
// Reports per command the median wall time, the mean CPU time (user+sys; steadier than wall time on
// a loaded machine) and, for kemu, the overhead over `node -e 0` in both.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBuilt, kemuBinDir, ms, repo } from './common.mjs';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '5' },
    json: { type: 'string', default: path.join(repo, '.bench-out', 'cni-startup.json') },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log('usage: node tools/bench/cni/startup.mjs [--runs 30] [--warmup 5] [--json FILE]');
  process.exit(0);
}
if (spawnSync('hyperfine', ['--version']).status !== 0) {
  console.error('startup benchmark needs hyperfine (apt-get install -y hyperfine)');
  process.exit(1);
}
ensureBuilt();

const REF = '/usr/lib/cni';
const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-startup-'));
const bin = kemuBinDir(path.join(tmp, 'bin'));
const data = path.join(tmp, 'ipam');
const confFile = (name, type) => {
  const f = path.join(tmp, `${name}.json`);
  writeFileSync(f, JSON.stringify({ cniVersion: '1.0.0', name, type, ipam: { type, subnet: '10.230.0.0/16', dataDir: data } }));
  return f;
};
const refConf = confFile('startup-ref', 'host-local');
const kemuConf = confFile('startup-kemu', 'kemu-host-local');
const empty = path.join(tmp, 'empty.json');
writeFileSync(empty, '{}');
const addEnv = `CNI_COMMAND=ADD CNI_CONTAINERID=startup CNI_NETNS=/proc/self/ns/net CNI_IFNAME=eth0 CNI_PATH=${bin}:${REF}`;

// Each command runs through hyperfine's shell (stdin redirection needs one); hyperfine subtracts the
// shell's own start-up, measured in the same run.
const commands = [
  ['node -e 0', `${process.execPath} -e 0`],
  ['reference loopback VERSION', `CNI_COMMAND=VERSION ${REF}/loopback < ${empty}`],
  ['kemu-loopback VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-loopback < ${empty}`],
  ['kemu-host-local VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-host-local < ${empty}`],
  ['kemu-bridge VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-bridge < ${empty}`],
  ['kemu-portmap VERSION', `CNI_COMMAND=VERSION ${bin}/kemu-portmap < ${empty}`],
  ['reference host-local ADD', `${addEnv} ${REF}/host-local < ${refConf}`],
  ['kemu-host-local ADD', `${addEnv} ${bin}/kemu-host-local < ${kemuConf}`],
];
const hfJson = path.join(tmp, 'hyperfine.json');
const args = ['--warmup', values.warmup, '--runs', values.runs, '--style', 'basic', '--export-json', hfJson];
// Every ADD starts from an empty dataDir, so each run allocates the same first address.
args.push('--prepare', `rm -rf ${data}`);
for (const [name, cmd] of commands) args.push('-n', name, cmd);
const r = spawnSync('hyperfine', args, { stdio: ['ignore', 'ignore', 'inherit'] });
if (r.status !== 0) {
  console.error('hyperfine failed (a command exited non-zero?)');
  process.exit(1);
}
const results = JSON.parse(readFileSync(hfJson, 'utf8')).results;
const by = Object.fromEntries(results.map((x) => [x.command, x]));
const wall = (n) => by[n].median * 1000;
const cpu = (n) => (by[n].user + by[n].system) * 1000;
const node0 = 'node -e 0';
const out = { runs: Number(values.runs), node: process.version, commands: {} };
console.log(`\nplugin start-up, ${values.runs} runs each (wall: median; cpu: mean user+sys; ms)\n`);
console.log('command                         wall p50   cpu   wall-node  cpu-node');
for (const [name] of commands) {
  const row = { wallP50: wall(name), cpu: cpu(name) };
  let extra = '';
  if (name.startsWith('kemu')) {
    row.wallOverNode = wall(name) - wall(node0);
    row.cpuOverNode = cpu(name) - cpu(node0);
    extra = `${ms(row.wallOverNode).padStart(9)}  ${ms(row.cpuOverNode).padStart(8)}`;
  }
  out.commands[name] = row;
  console.log(`${name.padEnd(30)} ${ms(row.wallP50).padStart(9)} ${ms(row.cpu).padStart(6)}  ${extra}`);
}
const budget = wall(node0) + wall('reference host-local ADD');
out.hostLocalAddBudget = budget;
console.log(
  `\nkemu-host-local ADD ${ms(wall('kemu-host-local ADD'))} vs node -e 0 + reference host-local ADD ${ms(budget)} -> ${wall('kemu-host-local ADD') <= budget ? 'within' : 'over'}`,
);
mkdirSync(path.dirname(values.json), { recursive: true });
writeFileSync(values.json, JSON.stringify(out, null, 2));
rmSync(tmp, { recursive: true, force: true });
