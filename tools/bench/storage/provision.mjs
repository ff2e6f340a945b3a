#!/usr/bin/env node
// Dynamic provisioning benchmark: N PersistentVolumeClaims of an Immediate class provisioned and bound
// through the PV binder and the external-provisioner, against the kemu CSI driver's sim backend.
//
//   node tools/bench/storage/provision.mjs [--count 1000] [--runs 3] [--workers 100] [--json FILE]
//
// Per run and path it reports PVCs/s (count / time from the first create to the last Bound) and p50/p99
// of each claim's create-to-Bound latency; the summary gives medians over runs. Paths measured in the same
// run:
//   socket     the provisioner talks gRPC over a unix socket to the kemu-csi command running as its own
//              process (the shape of a real deployment: driver and sidecar containers side by side)
//   in-process the same driver's service objects called directly (the composed stack's scale path)
//   static     N pre-created PV/PVC pairs bound by the binder alone (upstream's "1,000 static pairs" case)
// Upstream anchors for orientation: the Kubernetes e2e bar of 0.5 PVC/s, and about 60 s at p99 for 1,000
// static pairs.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

// The packages are TypeScript resolved through the "@kemu/source" export condition; re-run under tsx.
if (!process.env.KEMU_BENCH_CHILD) {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@kemu/source',
      '--import',
      'tsx',
      fileURLToPath(import.meta.url),
      ...process.argv.slice(2),
    ],
    {
      stdio: 'inherit',
      cwd: repo,
      env: { ...process.env, KEMU_BENCH_CHILD: '1' },
    },
  );
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}

function pct(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function main() {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '1000' },
      runs: { type: 'string', default: '3' },
      workers: { type: 'string', default: '100' },
      json: { type: 'string', default: path.join(repo, '.bench-out', 'storage-provision.json') },
    },
  });
  const count = Number(values.count);
  const runs = Number(values.runs);
  const workers = Number(values.workers);
  const { MemoryStore } = await import('@kemu/core');
  const { PersistentVolumeBinder } = await import('@kemu/core/controllers');
  const { createCsiDriver, DEFAULT_DRIVER_NAME: DRIVER } = await import('@kemu/csi');
  const { ExternalProvisioner, connectCsiSocket, inProcessCsi } = await import('@kemu/csi-sidecars');

  /** Create `count` claims, wait for all Bound; returns timings. */
  async function measure(store, makeClaims) {
    const created = new Map();
    const bound = new Map();
    const watch = await store.watch('PersistentVolumeClaim', {
      resourceVersion: await store.resourceVersion(),
    });
    const done = (async () => {
      for await (const ev of watch) {
        if (ev.type !== 'MODIFIED') continue;
        const c = ev.object;
        if (c.status?.phase === 'Bound' && !bound.has(c.metadata.name)) {
          bound.set(c.metadata.name, performance.now());
          if (bound.size === count) break;
        }
      }
    })();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await makeClaims(created);
    await done;
    watch.stop();
    const end = Math.max(...bound.values());
    const lat = [...bound.entries()].map(([n, t]) => t - created.get(n)).sort((a, b) => a - b);
    const cpu = process.cpuUsage(cpu0);
    // CPU seconds of this process (store, binder, provisioner; not the driver process): on a busy
    // machine wall time can be far above it.
    return {
      seconds: (end - t0) / 1000,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      perSecond: count / ((end - t0) / 1000),
      p50: pct(lat, 50),
      p99: pct(lat, 99),
    };
  }

  async function createClaims(store, created, cls, prefix) {
    // Claims arrive as fast as the store takes them, 100 writes in flight.
    let next = 0;
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        while (next < count) {
          const name = `${prefix}-${next++}`;
          created.set(name, performance.now());
          await store.create({
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name, namespace: 'default' },
            spec: {
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: '1Gi' } },
              storageClassName: cls,
            },
          });
        }
      }),
    );
  }

  /** The kemu-csi command in its own process, as a driver container runs beside the sidecars. */
  async function startDriverProcess(dir) {
    const sock = path.join(dir, 'csi.sock');
    const proc = spawn(
      process.execPath,
      [
        '--conditions=@kemu/source',
        '--import',
        'tsx',
        path.join(repo, 'packages/csi/src/cli.ts'),
        '--endpoint',
        `unix://${sock}`,
        '--node-id',
        'node-1',
        '--backend',
        'sim',
        '--state-dir',
        path.join(dir, 'state'),
        '--capacity',
        '1Pi',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const conn = connectCsiSocket(`unix://${sock}`);
    const end = Date.now() + 30_000;
    for (;;) {
      try {
        await conn.identity.GetPluginInfo({}, { timeoutMs: 1000 });
        break;
      } catch (e) {
        if (Date.now() > end) throw new Error(`kemu-csi did not come up: ${e.message}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return {
      conn,
      /** CPU seconds the driver process used so far (Linux /proc). */
      cpuSeconds() {
        try {
          const f = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
          return (Number(f[11]) + Number(f[12])) / 100;
        } catch {
          return Number.NaN;
        }
      },
      async close() {
        conn.close();
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      },
    };
  }

  async function dynamicRun(pathName) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-storage-'));
    const store = await MemoryStore.open();
    let conn;
    let close;
    let driverCpu = () => Number.NaN;
    if (pathName === 'socket') {
      const d = await startDriverProcess(dir);
      conn = d.conn;
      close = d.close;
      driverCpu = d.cpuSeconds;
    } else {
      const drv = await createCsiDriver({ nodeId: 'node-1', backend: 'sim', capacityBytes: 2 ** 50 });
      conn = inProcessCsi(drv);
      close = async () => {};
    }
    const binder = new PersistentVolumeBinder({ store });
    const prov = new ExternalProvisioner({ store, csi: conn, driverName: DRIVER, workers });
    await binder.start();
    await prov.start();
    await store.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'bench' },
      provisioner: DRIVER,
    });
    const driverCpu0 = driverCpu();
    const r = await measure(store, (created) => createClaims(store, created, 'bench', 'claim'));
    r.driverCpuSeconds = driverCpu() - driverCpu0;
    const vols = (await conn.controller.ListVolumes({ maxEntries: 0, startingToken: '' })).entries.length;
    const pvs = (await store.list('PersistentVolume')).items.length;
    if (vols !== count || pvs !== count)
      throw new Error(`expected ${count} volumes and PVs, got ${vols} and ${pvs}`);
    r.createVolumeCalls = prov.stats.createVolumeCalls;
    r.claimSyncs = prov.claims.stats.reconciled;
    await prov.stop();
    await binder.stop();
    await close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    return r;
  }

  async function staticRun() {
    const store = await MemoryStore.open();
    const binder = new PersistentVolumeBinder({ store });
    await binder.start();
    for (let i = 0; i < count; i++) {
      await store.create({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `pv-${i}` },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          csi: { driver: DRIVER, volumeHandle: `h-${i}` },
        },
      });
    }
    const r = await measure(store, (created) => createClaims(store, created, '', 'static'));
    await binder.stop();
    await store.close();
    return r;
  }

  const results = { socket: [], 'in-process': [], static: [] };
  for (let run = 1; run <= runs; run++) {
    for (const p of ['socket', 'in-process']) {
      const r = await dynamicRun(p);
      results[p].push(r);
      console.log(
        `run ${run} ${p.padEnd(10)} ${r.perSecond.toFixed(0).padStart(6)} PVC/s  p50 ${r.p50.toFixed(0)} ms  p99 ${r.p99.toFixed(0)} ms  (${r.seconds.toFixed(2)} s wall, ${r.cpuSeconds.toFixed(2)} s CPU, ${r.createVolumeCalls} CreateVolume calls, ${r.claimSyncs} claim syncs${Number.isNaN(r.driverCpuSeconds) ? '' : `, driver process ${r.driverCpuSeconds.toFixed(2)} s CPU`})`,
      );
    }
    const r = await staticRun();
    results.static.push(r);
    console.log(
      `run ${run} ${'static'.padEnd(10)} ${r.perSecond.toFixed(0).padStart(6)} PVC/s  p50 ${r.p50.toFixed(0)} ms  p99 ${r.p99.toFixed(0)} ms  (${r.seconds.toFixed(2)} s wall, ${r.cpuSeconds.toFixed(2)} s CPU)`,
    );
  }
  const summary = {};
  for (const [p, rs] of Object.entries(results)) {
    summary[p] = {
      pvcPerSecond: median(rs.map((r) => r.perSecond)),
      p50Ms: median(rs.map((r) => r.p50)),
      p99Ms: median(rs.map((r) => r.p99)),
      cpuSeconds: median(rs.map((r) => r.cpuSeconds)),
    };
  }
  console.log(
    `\n${count} claims, median of ${runs} runs (provisioner workers ${workers}, sim backend, ${os.cpus().length} cores)`,
  );
  for (const [p, s] of Object.entries(summary)) {
    console.log(
      `  ${p.padEnd(10)} ${s.pvcPerSecond.toFixed(0).padStart(6)} PVC/s   create-to-Bound p50 ${s.p50Ms.toFixed(0)} ms, p99 ${s.p99Ms.toFixed(0)} ms, ${s.cpuSeconds.toFixed(2)} s CPU`,
    );
  }
  console.log(
    `  load average during the runs: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  console.log(
    `  socket path vs in-process: ${(summary.socket.pvcPerSecond / summary['in-process'].pvcPerSecond).toFixed(2)}x the throughput`,
  );
  console.log(
    `  socket path vs the upstream e2e bar of 0.5 PVC/s: ${(summary.socket.pvcPerSecond / 0.5).toFixed(0)}x`,
  );
  console.log(
    `  static pairs p99 vs upstream's ~60 s for 1,000: ${(60_000 / summary.static.p99Ms).toFixed(0)}x faster`,
  );
  console.log(
    `  target (>= 200 PVC/s, p99 <= 2 s) on the socket path: ${summary.socket.pvcPerSecond >= 200 && summary.socket.p99Ms <= 2000 ? 'met' : 'NOT met'}`,
  );
  mkdirSync(path.dirname(values.json), { recursive: true });
  writeFileSync(values.json, `${JSON.stringify({ count, runs, workers, results, summary }, null, 2)}\n`);
}
