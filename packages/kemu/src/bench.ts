// `kemu bench pods`: N pods on M nodes, everything simulated, measured the way the pod startup SLO is
// defined: from the pod's creation to all of its containers started, as observed through a watch.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pod } from '@kemu/core';
import cliProgress from 'cli-progress';
import { Cluster } from './cluster.js';
import type { Out } from './commands.js';

export interface BenchResult {
  nodes: number;
  pods: number;
  qps: number;
  clusterStartSeconds: number;
  allRunningSeconds: number;
  podsPerSecond: number;
  startupP50Ms: number;
  startupP99Ms: number;
  peakRssMiB: number;
  /** CPU time of this process per pod, from the first creation to the last pod Running (steadier than wall time on a busy machine). */
  cpuMsPerPod: number;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

export interface BenchOptions {
  nodes: number;
  pods: number;
  /**
   * Pod creations per second, as a load generator paces them (clusterloader2's tuning sets); 0 creates them
   * all at once, which makes every pod's latency include the queue in front of it.
   */
  qps?: number;
  createConcurrency?: number;
  /** Shorter periods than upstream's (default false: the kubelet's and controllers' real settings). */
  fast?: boolean;
  /** Cross-node networking, as `kemu up --network` (default bridge). */
  network?: 'bridge' | 'vxlan' | 'bgp';
  /** Called as nodes start (the cluster's own progress). */
  onNodes?: (done: number, total: number) => void;
}

export async function benchPods(o: BenchOptions, onProgress?: (running: number) => void): Promise<BenchResult> {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-'));
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 250);
  const t0 = performance.now();
  const cluster = await Cluster.start({
    stateDir,
    nodes: o.nodes,
    fast: o.fast ?? false,
    network: o.network,
    onProgress: (_s, d, t) => o.onNodes?.(d, t),
  });
  const clusterStart = (performance.now() - t0) / 1000;
  try {
    const store = cluster.store;
    const created = new Map<string, number>();
    const startup: number[] = [];
    const watch = await store.watch('Pod', { namespace: 'bench' });
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench' } });
    const done = new Promise<void>((resolve) => {
      void (async () => {
        for await (const ev of watch) {
          if (ev.type !== 'MODIFIED' && ev.type !== 'ADDED') continue;
          const pod = ev.object as Pod;
          const name = pod.metadata.name ?? '';
          const t = created.get(name);
          if (t === undefined) continue;
          const cs = pod.status?.containerStatuses ?? [];
          if (cs.length === pod.spec.containers.length && cs.every((c) => c.state?.running)) {
            startup.push(performance.now() - t);
            created.delete(name);
            onProgress?.(startup.length);
            if (startup.length === o.pods) resolve();
          }
        }
      })();
    });
    const start = performance.now();
    const cpu0 = process.cpuUsage();
    const conc = o.createConcurrency ?? 64;
    const qps = o.qps ?? 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: conc }, async () => {
        while (next < o.pods) {
          const i = next++;
          // Paced: pod i is due i/qps seconds after the start.
          const due = qps > 0 ? start + (i * 1000) / qps : 0;
          const wait = due - performance.now();
          if (wait > 1) await new Promise((r) => setTimeout(r, wait));
          const name = `bench-${i}`;
          created.set(name, performance.now());
          await store.create({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name, namespace: 'bench', labels: { app: 'bench' } },
            spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '10m', memory: '16Mi' } } }] },
          });
        }
      }),
    );
    await done;
    const cpu = process.cpuUsage(cpu0);
    watch.stop();
    const total = (performance.now() - start) / 1000;
    startup.sort((a, b) => a - b);
    return {
      nodes: o.nodes,
      pods: o.pods,
      qps,
      clusterStartSeconds: Number(clusterStart.toFixed(2)),
      allRunningSeconds: Number(total.toFixed(2)),
      podsPerSecond: Math.round(o.pods / total),
      startupP50Ms: Math.round(pct(startup, 50)),
      startupP99Ms: Math.round(pct(startup, 99)),
      // getrusage's high-water mark: the sampler alone can miss peaks while the event loop is busy.
      peakRssMiB: Math.round(Math.max(peakRss, process.resourceUsage().maxRSS * 1024) / 2 ** 20),
      cpuMsPerPod: Number(((cpu.user + cpu.system) / 1000 / o.pods).toFixed(2)),
    };
  } finally {
    clearInterval(sampler);
    await cluster.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

export async function runBench(workload: string, o: BenchOptions, out: Out) {
  if (workload !== 'pods') throw new Error(`unknown workload "${workload}": try \`kemu bench pods --nodes 100 --pods 10000\``);
  const bar = process.stderr.isTTY
    ? new cliProgress.SingleBar({ format: 'pods running [{bar}] {value}/{total}', stream: process.stderr }, cliProgress.Presets.shades_classic)
    : undefined;
  bar?.start(o.pods, 0);
  const r = await benchPods(o, (n) => bar?.update(n));
  bar?.stop();
  out.log(JSON.stringify(r, null, 2));
}
