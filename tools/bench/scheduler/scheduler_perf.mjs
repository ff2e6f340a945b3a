#!/usr/bin/env node
// Scheduling throughput benchmark for @kemu/scheduler, modelled on kube-scheduler's scheduler_perf:
//
//   SchedulingBasic           5,000 nodes, 1,000 initial pods, 10,000 measured pods
//   SchedulingPodAntiAffinity 5,000 nodes, 1,000 initial pods, 2,000 measured pods (required anti-affinity on hostname)
//   TopologySpreading         5,000 nodes in 3 zones, 1,000 initial pods, 2,000 measured pods (maxSkew 1 on zone)
//   PreemptionBasic           5,000 full nodes (20,000 low-priority pods), 2,000 measured high-priority pods
//
//   node tools/bench/scheduler/scheduler_perf.mjs [--workload NAME|all] [--runs 3] [--backend memory|store|both]
//                                                 [--nodes N] [--scale F] [--dist] [--json FILE]
//
// Reports pods/s (measured pods / wall time from the first measured pod queued to the last one bound), pods
// per CPU-second of this process (steadier than wall time on a shared machine), and
// p50/p99 scheduling-attempt latency (one scheduling cycle, pop to decision), medians over the runs.
// Backends: `memory` binds through an in-process client; `store` runs against a @kemu/core memory store
// (list/watch, Binding, status and Event writes) the way the composed cluster does. The reference is
// kube-scheduler's CI floor for the same workload (680 pods/s basic, 570 preemption), shown as a ratio.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

const FLOORS = { SchedulingBasic: 680, SchedulingPodAntiAffinity: null, TopologySpreading: null, PreemptionBasic: 570 };
const TARGETS = { SchedulingBasic: 1500, SchedulingPodAntiAffinity: 600, TopologySpreading: 600, PreemptionBasic: 600 };

function node(name, zone) {
  const alloc = { cpu: '4', memory: '32Gi', pods: '110' };
  const labels = { 'kubernetes.io/hostname': name };
  if (zone) labels['topology.kubernetes.io/zone'] = zone;
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels },
    spec: {},
    status: { capacity: alloc, allocatable: alloc, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function pod(name, { cpu = '100m', memory = '500Mi', labels, affinity, spread, priority, nodeName } = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', uid: `uid-${name}`, labels, creationTimestamp: new Date().toISOString() },
    spec: {
      containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu, memory } } }],
      affinity,
      topologySpreadConstraints: spread,
      priority,
      nodeName,
    },
  };
}

const anti = {
  podAntiAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: [
      { labelSelector: { matchLabels: { color: 'green' } }, topologyKey: 'kubernetes.io/hostname' },
    ],
  },
};

function workloads(nodes, scale) {
  const n = (x) => Math.max(1, Math.round(x * scale));
  return {
    SchedulingBasic: {
      nodes: Array.from({ length: nodes }, (_, i) => node(`node-${i}`)),
      init: Array.from({ length: n(1000) }, (_, i) => pod(`init-${i}`, { nodeName: `node-${i % nodes}` })),
      measured: Array.from({ length: n(10000) }, (_, i) => pod(`pod-${i}`)),
    },
    SchedulingPodAntiAffinity: {
      nodes: Array.from({ length: nodes }, (_, i) => node(`node-${i}`)),
      init: Array.from({ length: n(1000) }, (_, i) => pod(`init-${i}`, { nodeName: `node-${i}`, labels: { color: 'green' }, affinity: anti })),
      measured: Array.from({ length: n(2000) }, (_, i) => pod(`pod-${i}`, { labels: { color: 'green' }, affinity: anti })),
    },
    TopologySpreading: {
      nodes: Array.from({ length: nodes }, (_, i) => node(`node-${i}`, `zone-${i % 3}`)),
      init: Array.from({ length: n(1000) }, (_, i) => pod(`init-${i}`, { nodeName: `node-${i % nodes}` })),
      measured: Array.from({ length: n(2000) }, (_, i) =>
        pod(`pod-${i}`, {
          labels: { app: 'spread' },
          spread: [
            { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'spread' } } },
          ],
        }),
      ),
    },
    PreemptionBasic: {
      nodes: Array.from({ length: nodes }, (_, i) => node(`node-${i}`)),
      init: Array.from({ length: nodes * 4 }, (_, i) =>
        pod(`low-${i}`, { cpu: '1', memory: '1Gi', priority: 1, nodeName: `node-${i % nodes}` }),
      ),
      measured: Array.from({ length: n(2000) }, (_, i) => pod(`high-${i}`, { cpu: '1', memory: '1Gi', priority: 10 })),
    },
  };
}

function pct(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Wrap scheduleOne to time every scheduling attempt. */
function instrument(sched, latencies) {
  const orig = sched.runCycle.bind(sched);
  sched.runCycle = (qpi, awaitBinding) => {
    const t0 = performance.now();
    const p = orig(qpi, awaitBinding);
    // The synchronous part of the cycle is the scheduling attempt; PostFilter (preemption) adds its awaits.
    return p.then((r) => {
      latencies.push(performance.now() - t0);
      return r;
    });
  };
}

async function runMemory(lib, w, bar) {
  const { Scheduler, MemoryClient } = lib;
  const client = new MemoryClient();
  const sched = new Scheduler({ client, random: lib.seededRandom(7) });
  let bound = 0;
  const measuredKeys = new Set(w.measured.map((p) => `default/${p.metadata.name}`));
  let done;
  const finished = new Promise((r) => {
    done = r;
  });
  client.onPodChange = (p) => {
    sched.onPodUpsert(p);
    if (p.spec.nodeName && measuredKeys.has(`default/${p.metadata.name}`)) {
      bound++;
      if (bound % 100 === 0) bar.update(bound);
      if (bound === measuredKeys.size) done();
    }
  };
  client.onPodDeleted = (p) => sched.onPodDelete(p);
  for (const n of w.nodes) sched.onNodeAdd(n);
  for (const p of w.init) {
    client.pods.set(`default/${p.metadata.name}`, p);
    sched.onPodUpsert(p);
  }
  const latencies = [];
  instrument(sched, latencies);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (const p of w.measured) {
    client.pods.set(`default/${p.metadata.name}`, p);
    sched.onPodUpsert(p);
  }
  await sched.start();
  await finished;
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  await sched.stop();
  return { secs, cpuSecs: (cpu.user + cpu.system) / 1e6, latencies };
}

/**
 * The store runs priority admission, which rejects a literal spec.priority: give each priority value a
 * PriorityClass and name it instead. No kubelet runs here to finish a graceful deletion, so preemption
 * victims go at once (grace period 0).
 */
async function admitPriorities(store, pods) {
  const classes = new Set();
  for (const p of pods) {
    p.spec.terminationGracePeriodSeconds ??= 0;
    const v = p.spec.priority;
    if (v === undefined) continue;
    const name = `bench-priority-${v}`;
    if (!classes.has(name)) {
      classes.add(name);
      await store.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value: v });
    }
    delete p.spec.priority;
    p.spec.priorityClassName = name;
  }
}

async function runStore(lib, core, w, bar) {
  const store = await core.createMemoryStore();
  await admitPriorities(store, [...w.init, ...w.measured]);
  for (const n of w.nodes) await store.create(n);
  for (const p of w.init) await store.create(p);
  const sched = new lib.Scheduler({ store, random: lib.seededRandom(7) });
  const latencies = [];
  instrument(sched, latencies);
  await sched.start();
  const measured = new Set(w.measured.map((p) => p.metadata.name));
  const watch = await store.watch('Pod', { resourceVersion: await store.resourceVersion() });
  let bound = 0;
  const seen = new Set();
  const finished = (async () => {
    for await (const ev of watch) {
      if (ev.type !== 'MODIFIED') continue;
      const p = ev.object;
      if (p.spec.nodeName && measured.has(p.metadata.name) && !seen.has(p.metadata.name)) {
        seen.add(p.metadata.name);
        bound++;
        if (bound % 100 === 0) bar.update(bound);
        if (bound === measured.size) return;
      }
    }
  })();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (const p of w.measured) await store.create(p);
  await finished;
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  watch.stop();
  await sched.stop();
  await store.close();
  return { secs, cpuSecs: (cpu.user + cpu.system) / 1e6, latencies };
}

async function main() {
  const { values } = parseArgs({
    options: {
      workload: { type: 'string', default: 'all' },
      runs: { type: 'string', default: '3' },
      backend: { type: 'string', default: 'memory' },
      nodes: { type: 'string', default: '5000' },
      scale: { type: 'string', default: '1' },
      json: { type: 'string', default: path.join(repo, '.bench-out', 'scheduler-perf.json') },
      dist: { type: 'boolean', default: false },
    },
  });
  // --dist measures the published build (tsup output) instead of the TypeScript sources under tsx.
  const lib = values.dist ? await import(path.join(repo, 'packages/scheduler/dist/index.js')) : await import('@kemu/scheduler');
  const core = await import('@kemu/core');
  const cliProgress = (await import('cli-progress')).default;
  const runs = Number(values.runs);
  const nodes = Number(values.nodes);
  const scale = Number(values.scale);
  const names = values.workload === 'all' ? Object.keys(FLOORS) : values.workload.split(',');
  const backends = values.backend === 'both' ? ['memory', 'store'] : [values.backend];
  const report = [];
  for (const backend of backends) {
    for (const name of names) {
      const samples = [];
      for (let r = 0; r < runs; r++) {
        const w = workloads(nodes, scale)[name];
        if (!w) throw new Error(`unknown workload ${name}; one of ${Object.keys(FLOORS).join(', ')}`);
        const bar = new cliProgress.SingleBar(
          { format: `${name.padEnd(26)} ${backend.padEnd(6)} run ${r + 1}/${runs} [{bar}] {value}/{total} pods  {duration}s`, hideCursor: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(w.measured.length, 0);
        const res = backend === 'store' ? await runStore(lib, core, w, bar) : await runMemory(lib, w, bar);
        bar.update(w.measured.length);
        bar.stop();
        const lat = res.latencies.sort((a, b) => a - b);
        samples.push({ podsPerSec: w.measured.length / res.secs, podsPerCpuSec: w.measured.length / res.cpuSecs, p50: pct(lat, 50), p99: pct(lat, 99), attempts: lat.length });
      }
      const row = {
        workload: name,
        backend,
        nodes,
        pods: workloads(nodes, scale)[name].measured.length,
        runs,
        podsPerSec: Math.round(median(samples.map((s) => s.podsPerSec))),
        podsPerCpuSec: Math.round(median(samples.map((s) => s.podsPerCpuSec))),
        p50Ms: Number(median(samples.map((s) => s.p50)).toFixed(3)),
        p99Ms: Number(median(samples.map((s) => s.p99)).toFixed(3)),
        attempts: median(samples.map((s) => s.attempts)),
        target: TARGETS[name],
        kubeFloor: FLOORS[name],
      };
      row.vsFloor = row.kubeFloor ? Number((row.podsPerSec / row.kubeFloor).toFixed(2)) : null;
      report.push(row);
      console.log(
        `${name.padEnd(26)} ${backend.padEnd(6)} ${String(row.podsPerSec).padStart(6)} pods/s (${row.podsPerCpuSec} per CPU-s)  p50 ${row.p50Ms.toFixed(2)} ms  p99 ${row.p99Ms.toFixed(2)} ms  ` +
          `target ${row.target}${row.kubeFloor ? `  kube floor ${row.kubeFloor} (x${row.vsFloor})` : ''}`,
      );
    }
  }
  mkdirSync(path.dirname(values.json), { recursive: true });
  writeFileSync(values.json, JSON.stringify({ date: new Date().toISOString(), results: report }, null, 2));
  console.log(`wrote ${path.relative(repo, values.json)}`);
}

// Everything above is declared; now either re-exec under tsx or run.
if (!process.env.KEMU_BENCH_CHILD) {
  const child = spawn(
    process.execPath,
    ['--conditions=@kemu/source', '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    { stdio: 'inherit', cwd: repo, env: { ...process.env, KEMU_BENCH_CHILD: '1' } },
  );
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}

