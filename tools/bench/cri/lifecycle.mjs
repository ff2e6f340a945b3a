#!/usr/bin/env node
// Pod lifecycle benchmark for @kemu/cri: RunPodSandbox, CreateContainer, StartContainer, StopPodSandbox,
// RemovePodSandbox with the `sim` backend, N lifecycles with 16 in flight, against `kemu-cri` running as
// its own process over its unix socket (state persisted to a state dir, as in production).
//
//   node tools/bench/cri/lifecycle.mjs [--count 10000] [--concurrency 16] [--runs 3] [--network ipam|netsim|both]
//                                      [--engine http2|grpc-js] [--client http2|grpc-js] [--json FILE]
//
// --network picks the sim backend's pod network: `ipam` hands out addresses only (the scale path),
// `netsim` is the built-in default (bridge + host-local + portmap run in process on a simulated datapath).
// Reports lifecycles/s and per-RPC p50/p99 (medians over runs). The reference measured in the same run
// is the same lifecycle on the same service objects called in process (no socket, no second process),
// so the ratio shows what the gRPC hop and process boundary cost. The transport ceiling is measured in the
// same run too: a bare unary echo (raw bytes, no service code) on a grpc-js server and on @kemu/proto's
// http2 engine, driven by the same client with the same concurrency (tools/bench/grpc); a lifecycle is 5
// calls. --engine picks kemu-cri's gRPC server engine (default: kemu-cri's own, http2); --client the client
// the benchmark calls it with (default: the one kemu's own callers use, KEMU_GRPC_CLIENT or http2).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { measureEcho } from '../grpc/echo-reference.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

const RPCS = ['RunPodSandbox', 'CreateContainer', 'StartContainer', 'StopPodSandbox', 'RemovePodSandbox'];

function quantile(sorted, q) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function runLifecycles(call, count, concurrency, tag) {
  const lat = Object.fromEntries(RPCS.map((r) => [r, []]));
  let next = 0;
  const timed = async (rpc, req) => {
    const t0 = process.hrtime.bigint();
    const res = await call(rpc, req);
    lat[rpc].push(Number(process.hrtime.bigint() - t0) / 1e6);
    return res;
  };
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const config = {
        metadata: { name: `bench-${tag}-${i}`, namespace: 'bench', uid: `uid-${tag}-${i}`, attempt: 0 },
        hostname: `bench-${i}`,
        labels: { bench: 'cri' },
      };
      const { podSandboxId } = await timed('RunPodSandbox', { config });
      const { containerId } = await timed('CreateContainer', {
        podSandboxId,
        config: { metadata: { name: 'app' }, image: { image: 'docker.io/library/busybox:1.36' }, command: ['sleep', '3600'] },
        sandboxConfig: config,
      });
      await timed('StartContainer', { containerId });
      await timed('StopPodSandbox', { podSandboxId });
      await timed('RemovePodSandbox', { podSandboxId });
    }
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const perRpc = {};
  for (const r of RPCS) {
    const s = lat[r].sort((a, b) => a - b);
    perRpc[r] = { p50: quantile(s, 0.5), p99: quantile(s, 0.99) };
  }
  return { lifecyclesPerSec: count / seconds, seconds, perRpc };
}

async function main() {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', default: '10000' },
      concurrency: { type: 'string', default: '16' },
      runs: { type: 'string', default: '3' },
      json: { type: 'string' },
      network: { type: 'string', default: 'both' },
      engine: { type: 'string', default: 'http2' },
      client: { type: 'string' },
    },
  });
  const networks = values.network === 'both' ? ['ipam', 'netsim'] : [values.network];
  const all = {};
  for (const network of networks) all[network] = await benchNetwork(network, values);
  if (values.json) writeFileSync(values.json, JSON.stringify(all, null, 2));
}

async function benchNetwork(network, values) {
  const count = Number(values.count);
  const concurrency = Number(values.concurrency);
  const runs = Number(values.runs);
  const { cri, defaultGrpcClient, openChannel, parseGrpcClient } = await import('@kemu/proto');
  const client = parseGrpcClient(values.client) ?? defaultGrpcClient();
  const { createCri } = await import('@kemu/cri');

  const results = { socket: [], inProcess: [], echo: { 'grpc-js': [], http2: [] } };
  for (let run = 0; run < runs; run++) {
    // Over the socket, against kemu-cri as a separate process.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-cri-'));
    const socket = path.join(dir, 'cri.sock');
    const server = spawn(
      process.execPath,
      ['--conditions=@kemu/source', '--import', 'tsx', path.join(repo, 'packages/cri/src/cli.ts'), '--listen', `unix://${socket}`, '--backend', 'sim', '--state-dir', path.join(dir, 'state'), '--synthetic-images', '--sim-network', network],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, KEMU_GRPC_ENGINE: values.engine } },
    );
    let stderr = '';
    server.stderr.on('data', (d) => {
      stderr += d;
    });
    const deadline = Date.now() + 30_000;
    while (!stderr.includes('serving on')) {
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`kemu-cri did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // As kemu's kubelet connects: one channel for both services.
    const channel = openChannel(`unix://${socket}`, { client });
    const rt = channel.service(cri.RuntimeServiceService);
    const img = channel.service(cri.ImageServiceService);
    await img.PullImage({ image: { image: 'busybox:1.36' } });
    // Same-run reference for the transport: Version is a no-op in kemu-cri, so N of them with the same
    // concurrency measure what a gRPC round trip costs here; a lifecycle is 5 round trips.
    const noopN = Math.min(count * 5, 20000);
    for (let i = 0; i < 2000; i++) await rt.Version({}); // JIT warm-up on both sides
    let sent = 0;
    const n0 = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (sent < noopN) {
          sent++;
          await rt.Version({});
        }
      }),
    );
    const noopRpcPerSec = noopN / (Number(process.hrtime.bigint() - n0) / 1e9);
    const cpu0 = cpuSeconds(server.pid);
    const clientCpu0 = process.cpuUsage();
    // GC pauses in this (client) process during the timed run: every call in flight waits them out.
    const gcPauses = [];
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcPauses.push(e.duration);
    });
    gcObserver.observe({ entryTypes: ['gc'] });
    const socketResult = await runLifecycles((m, r) => rt[m](r), count, concurrency, `s${run}`);
    gcObserver.disconnect();
    socketResult.clientGcMsPerLifecycle = gcPauses.reduce((a, b) => a + b, 0) / count;
    socketResult.clientGcMaxPauseMs = Math.max(0, ...gcPauses);
    // CPU per lifecycle does not depend on what else the machine runs: 1000 / ms is what one core sustains.
    socketResult.serverCpuMsPerLifecycle = ((cpuSeconds(server.pid) - cpu0) * 1000) / count;
    const cu = process.cpuUsage(clientCpu0);
    socketResult.clientCpuMsPerLifecycle = (cu.user + cu.system) / 1000 / count;
    socketResult.noopRpcPerSec = noopRpcPerSec;
    const left = await rt.ListPodSandbox({});
    if (left.items.length !== 0) throw new Error(`${left.items.length} sandboxes left behind`);
    channel.close();
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
    results.socket.push(socketResult);

    // Reference: the same service objects in process, with the same persisted state dir.
    const dir2 = mkdtempSync(path.join(os.tmpdir(), 'kemu-bench-cri-ref-'));
    const inst = await createCri({ backend: 'sim', stateDir: path.join(dir2, 'state'), syntheticImages: true, streaming: false, simNetwork: network });
    await inst.imageService.PullImage({ image: { image: 'busybox:1.36' } });
    const refCpu0 = process.cpuUsage();
    const ref = await runLifecycles((m, r) => inst.runtimeService[m](r), count, concurrency, `p${run}`);
    const rc = process.cpuUsage(refCpu0);
    ref.serverCpuMsPerLifecycle = (rc.user + rc.system) / 1000 / count;
    await inst.close();
    rmSync(dir2, { recursive: true, force: true });
    results.inProcess.push(ref);

    for (const engine of ['grpc-js', 'http2'])
      results.echo[engine].push(await measureEcho({ engine, client, calls: Math.min(count * 5, 20000), concurrency }));
    console.error(
      `[${network}] run ${run + 1}/${runs}: socket ${socketResult.lifecyclesPerSec.toFixed(0)} lifecycles/s, in-process ${ref.lifecyclesPerSec.toFixed(0)} lifecycles/s, bare echo grpc-js ${results.echo['grpc-js'].at(-1).callsPerSec.toFixed(0)} / http2 ${results.echo.http2.at(-1).callsPerSec.toFixed(0)} calls/s`,
    );
  }

  const summarize = (rs) => ({
    lifecyclesPerSec: median(rs.map((r) => r.lifecyclesPerSec)),
    serverCpuMsPerLifecycle: median(rs.map((r) => r.serverCpuMsPerLifecycle)),
    ...(rs[0].clientCpuMsPerLifecycle !== undefined ? { clientCpuMsPerLifecycle: median(rs.map((r) => r.clientCpuMsPerLifecycle)) } : {}),
    ...(rs[0].noopRpcPerSec !== undefined ? { noopRpcPerSec: median(rs.map((r) => r.noopRpcPerSec)) } : {}),
    ...(rs[0].clientGcMsPerLifecycle !== undefined
      ? {
          clientGcMsPerLifecycle: median(rs.map((r) => r.clientGcMsPerLifecycle)),
          clientGcMaxPauseMs: median(rs.map((r) => r.clientGcMaxPauseMs)),
        }
      : {}),
    perRpc: Object.fromEntries(RPCS.map((rpc) => [rpc, { p50: median(rs.map((r) => r.perRpc[rpc].p50)), p99: median(rs.map((r) => r.perRpc[rpc].p99)) }])),
  });
  const socket = summarize(results.socket);
  const inProcess = summarize(results.inProcess);
  const echo = Object.fromEntries(
    Object.entries(results.echo).map(([engine, rs]) => {
      const callsPerSec = median(rs.map((r) => r.callsPerSec));
      return [
        engine,
        {
          callsPerSec,
          ceilingLifecyclesPerSec: callsPerSec / 5,
          serverCpuMsPerCall: median(rs.map((r) => r.serverCpuMsPerCall)),
          clientCpuMsPerCall: median(rs.map((r) => r.clientCpuMsPerCall)),
        },
      ];
    }),
  );
  const out = {
    benchmark: `cri pod lifecycle (sim backend, ${network} network, ${values.engine} engine, ${client} client)`,
    engine: values.engine,
    client,
    loadAverage: os.loadavg(),
    count,
    concurrency,
    runs,
    cpus: os.cpus().length,
    socket,
    inProcess,
    ratioSocketToInProcess: socket.lifecyclesPerSec / inProcess.lifecyclesPerSec,
    bareEcho: echo,
    ratioToGrpcJsEchoCeiling: socket.lifecyclesPerSec / echo['grpc-js'].ceilingLifecyclesPerSec,
    target: { lifecyclesPerSec: 1000, p99Ms: 10 },
    meetsTarget: socket.lifecyclesPerSec >= 1000 && RPCS.every((r) => socket.perRpc[r].p99 <= 10),
  };
  console.log(`\n[${network} network, ${values.engine} engine, ${client} client] ${count} lifecycles, ${concurrency} in flight, median of ${runs} runs (${out.cpus} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
  console.log(`over the socket: ${socket.lifecyclesPerSec.toFixed(0)} lifecycles/s   in process: ${inProcess.lifecyclesPerSec.toFixed(0)} lifecycles/s   ratio ${out.ratioSocketToInProcess.toFixed(2)}`);
  console.log(
    `transport reference: no-op Version RPCs ${socket.noopRpcPerSec.toFixed(0)}/s with ${concurrency} in flight -> ceiling ${(socket.noopRpcPerSec / 5).toFixed(0)} lifecycles/s (5 RPCs each); lifecycles reach ${((100 * socket.lifecyclesPerSec * 5) / socket.noopRpcPerSec).toFixed(0)}% of it`,
  );
  console.log(
    `bare echo (same run, ${client} client): grpc-js server ${echo['grpc-js'].callsPerSec.toFixed(0)} calls/s -> ceiling ${echo['grpc-js'].ceilingLifecyclesPerSec.toFixed(0)} lifecycles/s (lifecycles reach ${out.ratioToGrpcJsEchoCeiling.toFixed(2)} of it); http2 engine ${echo.http2.callsPerSec.toFixed(0)} calls/s -> ${echo.http2.ceilingLifecyclesPerSec.toFixed(0)}`,
  );
  console.log(
    `  echo CPU per call: grpc-js server ${echo['grpc-js'].serverCpuMsPerCall.toFixed(4)} ms, http2 server ${echo.http2.serverCpuMsPerCall.toFixed(4)} ms; ${client} client ${echo['grpc-js'].clientCpuMsPerCall.toFixed(4)} / ${echo.http2.clientCpuMsPerCall.toFixed(4)} ms`,
  );
  console.log(
    `CPU per lifecycle: kemu-cri ${socket.serverCpuMsPerLifecycle.toFixed(3)} ms (one core sustains ~${(1000 / socket.serverCpuMsPerLifecycle).toFixed(0)} lifecycles/s), client ${socket.clientCpuMsPerLifecycle.toFixed(3)} ms (of it GC ${socket.clientGcMsPerLifecycle.toFixed(3)} ms, longest pause ${socket.clientGcMaxPauseMs.toFixed(1)} ms); in process ${inProcess.serverCpuMsPerLifecycle.toFixed(3)} ms`,
  );
  console.log('RPC                  socket p50   socket p99   in-proc p50   in-proc p99  (ms)');
  for (const r of RPCS) {
    const s = socket.perRpc[r];
    const p = inProcess.perRpc[r];
    console.log(`${r.padEnd(20)} ${s.p50.toFixed(3).padStart(10)} ${s.p99.toFixed(3).padStart(12)} ${p.p50.toFixed(3).padStart(13)} ${p.p99.toFixed(3).padStart(13)}`);
  }
  console.log(`target (>= 1000 lifecycles/s, p99 <= 10 ms per call): ${out.meetsTarget ? 'met' : 'NOT met'}`);
  return out;
}

// The packages are TypeScript resolved through the "@kemu/source" export condition; re-run under tsx.
if (!process.env.KEMU_BENCH_CHILD) {
  const child = spawn(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    cwd: repo,
    env: { ...process.env, KEMU_BENCH_CHILD: '1' },
  });
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}
