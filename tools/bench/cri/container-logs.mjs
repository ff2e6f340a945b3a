#!/usr/bin/env node
// What a container log costs the runtime's event loop at pod start. RunPodSandbox → CreateContainer →
// StartContainer on the in-process sim runtime (no network, 16 in flight), each pod as the kubelet asks for
// it (a sandbox log_directory and a container log_path, so StartContainer creates the log file and its
// directories with the symbolic-link checks), against the same starts without a log in the same run.
// Both are measured with the log root on a memory file system (/dev/shm) and on a disk (/var/tmp):
// creation is synchronous on the first and goes through the thread pool on the second.
//
//   node tools/bench/cri/container-logs.mjs [--count 3000] [--runs 3]
//
// Reports, per pod start, the process's CPU and the event loop's busy time (medians over runs); the log's
// own cost is the difference between the two rows of a file system.
import fs from 'node:fs';
import path from 'node:path';
import { argValue, runFromSource } from '../lib/from-source.mjs';

runFromSource(import.meta.url);

const { createCri } = await import('@kemu/cri');
const count = Number(argValue('count', '3000'));
const runs = Number(argValue('runs', '3'));
const ROOTS = { memory: '/dev/shm', disk: '/var/tmp' };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function startPods(rt, logs, tag, n) {
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      const config = {
        metadata: { name: `p-${tag}-${i}`, namespace: 'bench', uid: `uid-${tag}-${i}`, attempt: 0 },
        hostname: `p-${i}`,
        ...(logs ? { logDirectory: path.join(logs, `bench_p-${tag}-${i}_uid-${tag}-${i}`) } : {}),
      };
      const { podSandboxId } = await rt.RunPodSandbox({ config });
      const { containerId } = await rt.CreateContainer({
        podSandboxId,
        config: { metadata: { name: 'app' }, image: { image: 'docker.io/library/busybox:1.36' }, command: ['sleep', '3600'], ...(logs ? { logPath: 'app/0.log' } : {}) },
        sandboxConfig: config,
      });
      await rt.StartContainer({ containerId });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

async function measure(base, withLog, run) {
  const dir = fs.mkdtempSync(path.join(base, 'kemu-bench-cri-logs-'));
  const logs = path.join(dir, 'pods');
  fs.mkdirSync(logs);
  const cri = await createCri({ backend: 'sim', stateDir: path.join(dir, 'state'), syntheticImages: true, streaming: false, simNetwork: 'ipam', allowedLogRoots: [logs] });
  try {
    await cri.imageService.PullImage({ image: { image: 'busybox:1.36' } });
    await startPods(cri.runtimeService, withLog ? logs : undefined, `w${run}`, 500); // JIT warm-up
    const cpu0 = process.cpuUsage();
    const loop0 = performance.eventLoopUtilization();
    await startPods(cri.runtimeService, withLog ? logs : undefined, `m${run}`, count);
    const cpu = process.cpuUsage(cpu0);
    const loop = performance.eventLoopUtilization(loop0);
    if (withLog && !fs.statSync(path.join(logs, `bench_p-m${run}-0_uid-m${run}-0`, 'app', '0.log')).isFile()) throw new Error('no container log');
    return { cpuMs: (cpu.user + cpu.system) / 1000 / count, loopMs: loop.active / count };
  } finally {
    await cri.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [];
for (const [fsKind, base] of Object.entries(ROOTS)) {
  for (const withLog of [false, true]) {
    const rs = [];
    for (let run = 0; run < runs; run++) rs.push(await measure(base, withLog, run));
    rows.push({ fs: fsKind, log: withLog, cpuMsPerStart: median(rs.map((r) => r.cpuMs)), loopMsPerStart: median(rs.map((r) => r.loopMs)) });
  }
}
console.log(`${count} pod starts per run, medians of ${runs} runs`);
console.log('file system | container log | CPU ms per start | event loop ms per start');
for (const r of rows) console.log(`${r.fs} | ${r.log ? 'yes' : 'no'} | ${r.cpuMsPerStart.toFixed(3)} | ${r.loopMsPerStart.toFixed(3)}`);
console.log(JSON.stringify({ count, runs, rows }));
