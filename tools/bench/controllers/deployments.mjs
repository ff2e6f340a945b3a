#!/usr/bin/env node
// Deployments to Available on the composed cluster, everything simulated (store, controllers, scheduler,
// kubelets, CRI sim, CNI on netsim): N Deployments of R replicas, created at once or paced, timed from the
// first create to the last Deployment whose status says all replicas are available. The same-run baseline
// is the same number of bare pods on a fresh cluster of the same size: the ratio is what the controller
// path (Deployment -> ReplicaSet -> Pod, status back up) costs over pods alone. Medians over --runs.
//
//   node --conditions=@kemu/source --import tsx tools/bench/controllers/deployments.mjs \
//        --nodes 100 --deployments 500 --replicas 5 --runs 3 [--qps 0]
//
// Like load.mjs, the bench runs in a node with the V8 flags `kemu up` gives its cluster process
// (packages/kemu/src/v8-flags.ts), starting itself again when they are missing; flags on the command line win.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Cluster, clusterV8Flags, runWithV8Flags } from '../../../packages/kemu/src/index.ts';

const v8Flags = clusterV8Flags();
if (v8Flags.length) process.exit(await runWithV8Flags(v8Flags));

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: '100' },
    deployments: { type: 'string', default: '500' },
    replicas: { type: 'string', default: '5' },
    runs: { type: 'string', default: '3' },
    qps: { type: 'string', default: '0' },
    // Where the nodes' files go: tmpfs when there is one (on this machine's disk every inode the kubelet
    // and runtime create per pod costs ~0.8 ms, which the first rows of the README measured).
    'state-root': { type: 'string', default: fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir() },
  },
});
const nodes = Number(values.nodes);
const N = Number(values.deployments);
const R = Number(values.replicas);
const qps = Number(values.qps);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function withCluster(fn) {
  const stateDir = fs.mkdtempSync(path.join(values['state-root'], 'kemu-bench-deploy-'));
  const cluster = await Cluster.start({ stateDir, nodes, fast: false });
  try {
    await cluster.store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
    return await fn(cluster.store);
  } finally {
    await cluster.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

async function paced(count, create) {
  const t0 = performance.now();
  const inflight = [];
  for (let i = 0; i < count; i++) {
    if (qps > 0) {
      const due = t0 + (i * 1000) / qps;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    inflight.push(create(i));
    if (inflight.length >= 256) await Promise.all(inflight.splice(0));
  }
  await Promise.all(inflight);
}

const podSpec = { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] };

async function deploymentsRun() {
  return withCluster(async (store) => {
    const w = await store.watch('Deployment', { namespace: 'bench' });
    let ready = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const done = new Promise((resolve) => {
      const seen = new Set();
      void (async () => {
        for await (const ev of w) {
          if (ev.type !== 'MODIFIED') continue;
          const d = ev.object;
          if (!seen.has(d.metadata.name) && d.status?.availableReplicas === R && d.status?.updatedReplicas === R && d.status?.observedGeneration === d.metadata.generation) {
            seen.add(d.metadata.name);
            if (++ready === N) resolve();
          }
        }
      })();
    });
    await paced(N, (i) =>
      store.create({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: `d${i}`, namespace: 'bench' },
        spec: { replicas: R, selector: { matchLabels: { app: `d${i}` } }, template: { metadata: { labels: { app: `d${i}` } }, spec: podSpec } },
      }),
    );
    await done;
    const s = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    w.stop();
    return { seconds: s, deploymentsPerSecond: N / s, cpuMsPerPod: (cpu.user + cpu.system) / 1000 / (N * R) };
  });
}

async function podsRun() {
  return withCluster(async (store) => {
    const total = N * R;
    const w = await store.watch('Pod', { namespace: 'bench' });
    let running = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const done = new Promise((resolve) => {
      const seen = new Set();
      void (async () => {
        for await (const ev of w) {
          if (ev.type !== 'MODIFIED') continue;
          const p = ev.object;
          if (!seen.has(p.metadata.name) && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) {
            seen.add(p.metadata.name);
            if (++running === total) resolve();
          }
        }
      })();
    });
    // Paced per Deployment's worth of pods, so both runs offer the same load shape.
    await paced(N, (i) => Promise.all(Array.from({ length: R }, (_, j) => store.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `p${i}-${j}`, namespace: 'bench', labels: { app: `d${i}` } }, spec: podSpec }))));
    await done;
    const s = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    w.stop();
    return { seconds: s, cpuMsPerPod: (cpu.user + cpu.system) / 1000 / total };
  });
}

const runs = [];
for (let i = 0; i < Number(values.runs); i++) {
  const d = await deploymentsRun();
  const p = await podsRun();
  const r = { deploymentSeconds: d.seconds, deploymentsPerSecond: d.deploymentsPerSecond, deploymentCpuMsPerPod: d.cpuMsPerPod, barePodSeconds: p.seconds, barePodCpuMsPerPod: p.cpuMsPerPod, ratio: d.seconds / p.seconds };
  console.error(`run ${i + 1}: ${JSON.stringify(r)}`);
  runs.push(r);
}
const keys = Object.keys(runs[0]);
console.log(JSON.stringify({ nodes, deployments: N, replicas: R, qps, runs: runs.length, median: Object.fromEntries(keys.map((k) => [k, Number(median(runs.map((r) => r[k])).toFixed(3))])) }, null, 2));
process.exit(0);
