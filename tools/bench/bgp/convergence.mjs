#!/usr/bin/env node
// BGP route convergence benchmark (@kemu/bgp route simulation).
//
//   node tools/bench/bgp/convergence.mjs [--runs N] [--mesh 100] [--rr 1000] [--tcp] [--reference DIR]
//
// --reference DIR: another copy of packages/bgp/src (e.g. `git archive <commit> packages/bgp/src | tar -x
// -C /tmp/ref`, then DIR=/tmp/ref/packages/bgp/src) measured in the same run, runs alternating with ours, so
// the reported ratios hold however busy the machine is.
//
// Scenarios, each repeated --runs times (medians reported):
//   mesh  100 nodes, iBGP full mesh (4,950 sessions), in-memory transport carrying the real BGP byte stream
//   rr    1,000 nodes, 2 route reflectors (each its own cluster), every other node a client of both
//   --tcp the mesh again over real TCP, each node on its own 127.x.y.z loopback address
// Measured: convergence = all speakers started → last route installed on every node (each node's route
// sink holds exactly every other node's /26 with the right next hop); withdrawal = one node withdraws its
// block → removed everywhere; leave = one node shuts down with Cease → its block gone everywhere.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
if (!process.env.KEMU_BENCH_CHILD) {
  // The package is TypeScript; run ourselves again under tsx so it loads from source without a build.
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, KEMU_BENCH_CHILD: '1' },
    cwd: path.join(here, '../../..'),
  });
  process.exit(r.status ?? 1);
}

const { performance } = await import('node:perf_hooks');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const refIdx = args.indexOf('--reference');
const refDir = refIdx >= 0 ? path.resolve(args[refIdx + 1]) : undefined;
if (refDir && !fs.existsSync(path.join(refDir, 'sim.ts'))) {
  console.error(`--reference ${refDir}: no sim.ts there (give the src directory of a copy of packages/bgp)`);
  process.exit(2);
}
const ours = await import('../../../packages/bgp/src/sim.ts');
const ref = refDir ? await import(pathToFileURL(path.join(refDir, 'sim.ts')).href) : undefined;
const runs = opt('runs', 5);
const meshN = opt('mesh', 100);
const rrN = opt('rr', 1000);
const withTcp = args.includes('--tcp');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function scenario(name, n, options, count, impl = ours) {
  const { startCluster, defaultBlock } = impl;
  const conv = [];
  const cpu = [];
  const quiet = [];
  const wd = [];
  const leave = [];
  for (let r = 0; r < count; r++) {
    global.gc?.();
    const c0 = process.cpuUsage();
    const { sim, convergedMs } = await startCluster(n, options);
    const c = process.cpuUsage(c0);
    conv.push(convergedMs);
    // Process CPU time (all threads) for setup + convergence: what the run costs independent of how
    // busy the machine is; wall-clock convergence is the figure the targets are about.
    cpu.push((c.user + c.system) / 1000);
    // Convergence is reached when the last route is installed; duplicate copies (the second reflector's)
    // may still be in flight. Let the network go quiet so the next measurement starts from rest.
    let t0 = performance.now();
    if (options.transport !== 'tcp') await sim.quiet();
    quiet.push(performance.now() - t0);
    // Withdrawal of one client's block (a node in the middle).
    const victim = `node-${Math.floor(n / 2)}`;
    t0 = performance.now();
    sim.withdraw(victim, defaultBlock(Math.floor(n / 2)));
    wd.push((await sim.waitConverged(60_000)) - t0);
    // A node leaving with Cease (its remaining routes must disappear everywhere).
    const leaver = `node-${n - 1}`;
    if (options.transport !== 'tcp') await sim.quiet();
    t0 = performance.now();
    await sim.removeNode(leaver);
    leave.push((await sim.waitConverged(60_000)) - t0);
    await sim.destroy();
    process.stderr.write(
      `  ${name} run ${r + 1}/${count}: converge ${convergedMs.toFixed(0)} ms (cpu ${cpu.at(-1).toFixed(0)} ms, quiet after ${quiet.at(-1).toFixed(0)} ms more), withdraw ${wd.at(-1).toFixed(1)} ms, leave ${leave.at(-1).toFixed(1)} ms\n`,
    );
  }
  return { name, nodes: n, runs: count, convergenceMs: conv, cpuMs: cpu, quietMs: quiet, withdrawalMs: wd, leaveMs: leave };
}

/** One scenario, alternating with the reference run by run when there is one. */
async function measure(name, n, options, count) {
  if (!ref) return [await scenario(name, n, options, count)];
  const a = [];
  const b = [];
  for (let r = 0; r < count; r++) {
    b.push(await scenario(`${name} (reference)`, n, options, 1, ref));
    a.push(await scenario(name, n, options, 1));
  }
  const merge = (xs, label) => ({
    name: label,
    nodes: n,
    runs: count,
    ...Object.fromEntries(
      ['convergenceMs', 'cpuMs', 'quietMs', 'withdrawalMs', 'leaveMs'].map((k) => [k, xs.flatMap((x) => x[k])]),
    ),
  });
  return [merge(a, name), merge(b, `${name}-ref`)];
}

const results = [];
results.push(...(await measure(`mesh-${meshN}`, meshN, { topology: { kind: 'full-mesh' } }, runs)));
results.push(
  ...(await measure(`rr-${rrN}`, rrN, { topology: { kind: 'route-reflectors', count: 2 } }, Math.max(3, Math.ceil(runs / 2)))),
);
if (withTcp) {
  results.push(
    await scenario(`mesh-${meshN}-tcp`, meshN, { topology: { kind: 'full-mesh' }, transport: 'tcp', tcpPort: 11179 }, runs),
  );
}

const targets = {
  [`mesh-${meshN}`]: 2000,
  [`rr-${rrN}`]: 5000,
  [`mesh-${meshN}-tcp`]: 2000,
  [`mesh-${meshN}-ref`]: 2000,
  [`rr-${rrN}-ref`]: 5000,
};
const os = await import('node:os');
console.log(`\nnode ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log('scenario             nodes  runs  convergence median (min..max)  cpu median  withdrawal median  leave median  target');
for (const r of results) {
  const c = r.convergenceMs;
  console.log(
    `${r.name.padEnd(20)} ${String(r.nodes).padStart(5)} ${String(r.runs).padStart(5)}  ${median(c).toFixed(0).padStart(7)} ms (${Math.min(...c).toFixed(0)}..${Math.max(...c).toFixed(0)})`.padEnd(
      70,
    ) +
      `${median(r.cpuMs).toFixed(0).padStart(7)} ms ` +
      `${median(r.withdrawalMs).toFixed(1).padStart(9)} ms  ${median(r.leaveMs).toFixed(1).padStart(9)} ms  ≤${targets[r.name]} ms ${median(c) <= targets[r.name] ? 'ok' : 'MISSED'}`,
  );
}
if (ref) {
  console.log(`\nratios against the reference (${refDir}), medians, lower is better for us:`);
  for (const r of results.filter((x) => !x.name.endsWith('-ref'))) {
    const b = results.find((x) => x.name === `${r.name}-ref`);
    const q = (k) => (median(r[k]) / median(b[k])).toFixed(2);
    console.log(`  ${r.name.padEnd(20)} convergence ${q('convergenceMs')}x  cpu ${q('cpuMs')}x  withdrawal ${q('withdrawalMs')}x  leave ${q('leaveMs')}x`);
  }
}
const out = path.join(here, '../../../.bench-out');
fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(
  path.join(out, 'bgp-convergence.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, loadavg: os.loadavg(), reference: refDir ?? null, results }, null, 2)}\n`,
);
console.log(`\nraw numbers: .bench-out/bgp-convergence.json`);
process.exit(0);
