#!/usr/bin/env node
// Store benchmark for @kemu/core at the Kubernetes scale envelope.
//
//   node tools/bench/core/store.mjs [--backends memory,file,etcd] [--runs 3] [--nodes 5000]
//                                   [--pods 150000] [--small-pods 10000] [--watchers 5000]
//                                   [--events 20000] [--json FILE] [--node-flags=--max-semi-space-size=32]
//
// Per backend and run (each run in a fresh process, so peak RSS is the run's own):
//   1. create `nodes` Nodes and then the pods (memory: `pods`; file/etcd: `small-pods`), each pod bound to
//      node i % nodes via spec.nodeName; throughput = objects / wall time. Writes are issued with up to
//      `concurrency` in flight (1 for memory: it is CPU-bound; 64 for file/etcd, where group commit and
//      pipelining matter, as with many concurrent API clients).
//   2. start `watchers` watches, each with fieldSelector spec.nodeName=<its node> from the current
//      resourceVersion (a kubelet's watch), and time how long starting them takes;
//   3. update the status of `events` pods round-robin over the nodes (one write at a time for memory, 64
//      in flight otherwise) and measure, per event, the time from issuing the write to the matching
//      watcher receiving it: p50/p99 delivery latency; also check every event reached exactly its watcher.
//   4. peak RSS of the process (getrusage maxrss).
// Reference measured in the same run: memory → inserting the same objects as JSON copies into a Map
// (the floor for any in-process store); etcd → raw etcd3 puts of the same JSON with the same
// concurrency (the floor for any store on that etcd). Reported as ratios. Medians over the runs.
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    backends: { type: 'string', default: 'memory,file,etcd' },
    runs: { type: 'string', default: '3' },
    nodes: { type: 'string', default: '5000' },
    pods: { type: 'string', default: '150000' },
    'small-pods': { type: 'string', default: '10000' },
    watchers: { type: 'string', default: '5000' },
    events: { type: 'string', default: '20000' },
    'small-events': { type: 'string', default: '5000' },
    json: { type: 'string' },
    child: { type: 'string' },
    // Extra V8/node flags for the measured processes (e.g. a larger young generation).
    'node-flags': { type: 'string', default: '' },
  },
});

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : Number.NaN;
};
const pct = (xs, p) => {
  const s = Float64Array.from(xs).sort();
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : Number.NaN;
};

if (opts.child) {
  const { runChild } = await import('./store-child.mjs');
  const result = await runChild(opts.child, {
    nodes: Number(opts.nodes),
    pods: opts.child === 'memory' ? Number(opts.pods) : Number(opts['small-pods']),
    watchers: Number(opts.watchers),
    events: opts.child === 'memory' ? Number(opts.events) : Number(opts['small-events']),
    pct,
  });
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  process.exit(0);
}

function runOnce(backend) {
  return new Promise((resolve, reject) => {
    const flags = opts['node-flags'].split(' ').filter(Boolean);
    const args = [...flags, '--import', 'tsx', '--max-old-space-size=8192', fileURLToPath(import.meta.url), '--child', backend];
    for (const k of ['nodes', 'pods', 'small-pods', 'watchers', 'events', 'small-events']) args.push(`--${k}`, opts[k]);
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: path.resolve(here, '../../..') });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code !== 0 || !line) reject(new Error(`${backend} run failed (exit ${code}): ${out.slice(-2000)}`));
      else resolve(JSON.parse(line.slice(7)));
    });
  });
}

const backends = opts.backends.split(',').filter(Boolean);
if (backends.includes('etcd') && spawnSync(process.env.KEMU_ETCD ?? '/usr/bin/etcd', ['--version']).status !== 0) {
  console.error('etcd binary not found (Debian package etcd-server); skipping the etcd backend');
  backends.splice(backends.indexOf('etcd'), 1);
}
const runs = Number(opts.runs);
const summary = {};
for (const b of backends) {
  const results = [];
  for (let r = 0; r < runs; r++) {
    const res = await runOnce(b);
    results.push(res);
    console.error(
      `${b} run ${r + 1}/${runs}: ${res.pods} pods ${res.createsPerSec.toFixed(0)} creates/s (reference ${res.reference ? res.reference.perSec.toFixed(0) : '-'}/s), ` +
        `watch p50 ${res.latencyP50Ms.toFixed(2)} ms p99 ${res.latencyP99Ms.toFixed(2)} ms, peak RSS ${(res.peakRssBytes / 2 ** 20).toFixed(0)} MiB`,
    );
  }
  const m = (f) => median(results.map(f));
  summary[b] = {
    runs: results.length,
    nodes: results[0].nodes,
    pods: results[0].pods,
    watchers: results[0].watchers,
    events: results[0].events,
    createsPerSec: m((r) => r.createsPerSec),
    createsPerCpuSec: m((r) => r.createsPerCpuSec),
    referencePerCpuSec: results[0].reference?.perCpuSec ? m((r) => r.reference.perCpuSec) : null,
    podCreatesPerSec: m((r) => r.podCreatesPerSec),
    nodeCreatesPerSec: m((r) => r.nodeCreatesPerSec),
    referencePerSec: results[0].reference ? m((r) => r.reference.perSec) : null,
    referenceName: results[0].reference?.name ?? null,
    ratioToReference: results[0].reference ? m((r) => r.createsPerSec / r.reference.perSec) : null,
    watchStartMs: m((r) => r.watchStartMs),
    latencyP50Ms: m((r) => r.latencyP50Ms),
    latencyP99Ms: m((r) => r.latencyP99Ms),
    eventsPerSec: m((r) => r.eventsPerSec),
    misdelivered: Math.max(...results.map((r) => r.misdelivered)),
    peakRssMiB: m((r) => r.peakRssBytes / 2 ** 20),
    concurrency: results[0].concurrency,
  };
}

console.log(`\n@kemu/core store benchmark (medians over runs${opts['node-flags'] ? `; node flags: ${opts['node-flags']}` : ''})`);
console.log('backend | nodes | pods | creates/s | creates/CPU-s | pod creates/s | vs reference | watchers | watch start | events/s | event p50 | event p99 | peak RSS');
console.log('--- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | ---');
for (const [b, s] of Object.entries(summary)) {
  const ref =
    s.ratioToReference === null
      ? '-'
      : `${s.ratioToReference.toFixed(2)}x of ${s.referenceName} (${s.referencePerSec.toFixed(0)}/s${s.referencePerCpuSec ? `, ${s.referencePerCpuSec.toFixed(0)}/CPU-s` : ''})`;
  console.log(
    `${b} | ${s.nodes} | ${s.pods} | ${s.createsPerSec.toFixed(0)} | ${s.createsPerCpuSec.toFixed(0)} | ${s.podCreatesPerSec.toFixed(0)} | ${ref} | ${s.watchers} | ${s.watchStartMs.toFixed(0)} ms | ${s.eventsPerSec.toFixed(0)} | ${s.latencyP50Ms.toFixed(2)} ms | ${s.latencyP99Ms.toFixed(2)} ms | ${s.peakRssMiB.toFixed(0)} MiB`,
  );
}
const mem = summary.memory;
if (mem) {
  const ok = (c) => (c ? 'met' : 'MISSED');
  console.log(
    `\ntargets (memory): creates >= 50,000/s ${ok(mem.createsPerSec >= 50_000)} (wall; ${mem.createsPerCpuSec.toFixed(0)} per CPU-second); RSS <= 4 GiB ${ok(mem.peakRssMiB <= 4096)}; event p99 <= 100 ms ${ok(mem.latencyP99Ms <= 100)}`,
  );
}
for (const [b, s] of Object.entries(summary)) if (s.misdelivered) console.log(`WARNING ${b}: ${s.misdelivered} events reached a wrong or no watcher`);
if (opts.json) writeFileSync(opts.json, `${JSON.stringify(summary, null, 2)}\n`);
