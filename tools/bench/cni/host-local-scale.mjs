#!/usr/bin/env node
// host-local allocation cost as the network fills up: 10, 1,000 and 60,000 addresses already allocated in
// a /16, then ADD + DEL of one more container, measured for
//   kemu in-process  the plugin object through the skeleton (what the CRI shim uses at scale)
//   kemu exec        the kemu-host-local executable
//   reference exec   /usr/lib/cni/host-local on an identical dataDir (same on-disk layout)
// The pre-filled files use the shared layout (<ip> = "<id>\r\n<ifname>", last_reserved_ip.0), so both
// implementations see the same state. kemu must stay flat; the reference walks the directory per call.
//
//   node tools/bench/cni/host-local-scale.mjs [--levels 10,1000,60000] [--iterations 20] [--runs 3] [--json FILE]
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBuilt, kemuBinDir, median, ms, pct, repo } from './common.mjs';

if (!process.env.KEMU_BENCH_CHILD) {
  ensureBuilt();
  const child = spawn(
    process.execPath,
    ['--conditions=@kemu/source', '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: 'inherit', cwd: repo, env: { ...process.env, KEMU_BENCH_CHILD: '1' } },
  );
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}

function fill(dataDir, n) {
  const dir = path.join(dataDir, 'scale');
  mkdirSync(dir, { recursive: true });
  let last = '';
  for (let i = 0; i < n; i++) {
    const v = 2 + i; // 10.220.0.2 upwards (.1 is the gateway)
    last = `10.220.${v >> 8}.${v & 255}`;
    writeFileSync(path.join(dir, last), `fill-${i}\r\neth0`);
  }
  writeFileSync(path.join(dir, 'last_reserved_ip.0'), last);
}

async function main() {
  const { values } = parseArgs({
    options: {
      levels: { type: 'string', default: '10,1000,60000' },
      iterations: { type: 'string', default: '20' },
      runs: { type: 'string', default: '3' },
      json: { type: 'string', default: path.join(repo, '.bench-out', 'cni-host-local-scale.json') },
    },
  });
  const levels = values.levels.split(',').map(Number);
  const N = Number(values.iterations);
  const RUNS = Number(values.runs);
  const { execPlugin, invokePlugin, execDelegate } = await import('@kemu/cni');
  const { hostLocal } = await import('@kemu/cni-host-local');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-hl-'));
  const bin = kemuBinDir(path.join(tmp, 'bin'));

  const variants = {
    'kemu in-process': (env, stdin) =>
      invokePlugin(hostLocal, { env, stdin, datapath: async () => undefined, delegate: execDelegate }),
    'kemu exec': (env, stdin) => execPlugin(path.join(bin, 'kemu-host-local'), env, stdin),
    'reference exec': (env, stdin) => execPlugin('/usr/lib/cni/host-local', env, stdin),
  };
  const results = {};
  for (const level of levels) {
    results[level] = {};
    for (const [name, run] of Object.entries(variants)) {
      const dataDir = path.join(tmp, `${name.replace(/\W/g, '_')}-${level}`);
      fill(dataDir, level);
      const stdin = JSON.stringify({
        cniVersion: '1.0.0',
        name: 'scale',
        type: 'host-local',
        ipam: { type: 'host-local', subnet: '10.220.0.0/16', dataDir },
      });
      const perRun = [];
      let k = 0;
      for (let r = 0; r < RUNS; r++) {
        const add = [];
        const del = [];
        for (let i = -2; i < N; i++) {
          const env = { PATH: process.env.PATH, CNI_CONTAINERID: `bench-${k++}`, CNI_NETNS: '/var/run/netns/none', CNI_IFNAME: 'eth0', CNI_PATH: bin };
          const t0 = performance.now();
          const a = await run({ ...env, CNI_COMMAND: 'ADD' }, stdin);
          const t1 = performance.now();
          const d = await run({ ...env, CNI_COMMAND: 'DEL' }, stdin);
          const t2 = performance.now();
          if (a.exitCode !== 0 || d.exitCode !== 0) throw new Error(`${name} failed: ${a.stdout} ${d.stdout}`);
          if (i >= 0) {
            add.push(t1 - t0);
            del.push(t2 - t1);
          }
        }
        perRun.push({ add: pct(add, 50), addP90: pct(add, 90), del: pct(del, 50) });
      }
      results[level][name] = {
        addP50: median(perRun.map((x) => x.add)),
        addP90: median(perRun.map((x) => x.addP90)),
        delP50: median(perRun.map((x) => x.del)),
      };
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  console.log(`\nhost-local ADD/DEL with N addresses already allocated (/16), ${N} iterations x ${RUNS} runs, ms\n`);
  console.log(`${'variant'.padEnd(16)} ${levels.map((l) => `ADD@${l}`.padStart(11)).join('')} ${levels.map((l) => `DEL@${l}`.padStart(11)).join('')}  ADD ${levels.at(-1)}/${levels[0]}`);
  const flat = {};
  for (const name of Object.keys(variants)) {
    const adds = levels.map((l) => results[l][name].addP50);
    const dels = levels.map((l) => results[l][name].delP50);
    flat[name] = adds.at(-1) / adds[0];
    console.log(
      `${name.padEnd(16)} ${adds.map((x) => ms(x).padStart(11)).join('')} ${dels.map((x) => ms(x).padStart(11)).join('')}  ${flat[name].toFixed(2).padStart(8)}`,
    );
  }
  const top = levels.at(-1);
  console.log(
    `\nat ${top}: kemu in-process ADD = ${(results[top]['kemu in-process'].addP50 / results[top]['reference exec'].addP50).toFixed(3)}x reference, kemu exec ADD = ${(results[top]['kemu exec'].addP50 / results[top]['reference exec'].addP50).toFixed(2)}x reference`,
  );
  mkdirSync(path.dirname(values.json), { recursive: true });
  writeFileSync(values.json, JSON.stringify({ levels, iterations: N, runs: RUNS, results, growth: flat }, null, 2));
  rmSync(tmp, { recursive: true, force: true });
}
