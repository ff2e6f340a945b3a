#!/usr/bin/env node
// Volume lifecycle benchmark for @kemu/csi: CreateVolume, ControllerPublishVolume, NodeStageVolume,
// NodePublishVolume, then NodeUnpublishVolume, NodeUnstageVolume, ControllerUnpublishVolume, DeleteVolume,
// with N lifecycles in flight, against the kemu-csi command over its unix socket.
//
//   node tools/bench/csi/lifecycle.mjs [--backend sim|hostpath|both] [--count N] [--hostpath-count N]
//                                      [--concurrency 16] [--runs 3] [--driver process|same-process]
//                                      [--engine http2|grpc-js] [--client http2|grpc-js] [--json FILE]
//
// Reports lifecycles/s (median over runs) and p50/p99 per call (median over runs). Two references are
// measured in the same run: a bare unary echo on a stock grpc-js server, driven by the same client with the
// same concurrency and process layout (tools/bench/grpc/echo-reference.mjs; the ceiling of a gRPC server
// in Node on this machine; a lifecycle is 8 calls), and the same lifecycle on the same service objects
// called in process (no socket), so the ratios show what the driver adds over gRPC itself and what the
// gRPC hop costs. The same echo on @kemu/proto's http2 engine is measured too, and CPU milliseconds per
// lifecycle in the driver and in the client process, which unlike rates do not depend on what else the
// machine runs. Both the echo and the lifecycles are warmed up before they are timed. --engine picks
// kemu-csi's gRPC server engine (default: kemu-csi's own, http2); --client the client the benchmark
// calls it with (default: the one kemu's own callers use, KEMU_GRPC_CLIENT or http2).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuSeconds, measureEcho } from '../grpc/echo-reference.mjs';

const ECHO_SIZE = 64;

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

async function main() {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string', default: 'both' },
      count: { type: 'string', default: '10000' },
      'hostpath-count': { type: 'string', default: '1000' },
      concurrency: { type: 'string', default: '16' },
      runs: { type: 'string', default: '3' },
      // process: kemu-csi as its own process (the real deployment); same-process: the socket server runs
      // in the benchmark's process, which on a crowded machine avoids a process wake-up per call
      driver: { type: 'string', default: 'process' },
      engine: { type: 'string', default: 'http2' },
      client: { type: 'string' },
      // untimed lifecycles before each timed socket run (default: a tenth of the count, at most 500)
      warmup: { type: 'string' },
      json: { type: 'string', default: path.join(repo, '.bench-out', 'csi-lifecycle.json') },
      // where the kubelet root (staging and target paths) lives: publish makes real directories there, so a
      // slow file system's mkdir shows in the rate (e.g. --root /dev/shm to take the disk out)
      root: { type: 'string', default: os.tmpdir() },
    },
  });
  const { csi, defaultGrpcClient, openChannel, parseGrpcClient } = await import('@kemu/proto');
  const client = parseGrpcClient(values.client) ?? defaultGrpcClient();
  const { createCsiDriver, serveCsiDriver } = await import('@kemu/csi');
  const concurrency = Number(values.concurrency);
  const runs = Number(values.runs);
  const backends = values.backend === 'both' ? ['sim', 'hostpath'] : [values.backend];
  const CALLS = [
    'CreateVolume',
    'ControllerPublishVolume',
    'NodeStageVolume',
    'NodePublishVolume',
    'NodeUnpublishVolume',
    'NodeUnstageVolume',
    'ControllerUnpublishVolume',
    'DeleteVolume',
  ];
  const cap = { mount: {}, accessMode: { mode: csi.VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER } };
  const NODE = 'bench-node';

  /** Runs `count` lifecycles with `concurrency` in flight through `invoke(service, method, req)`. */
  async function lifecycles(invoke, count, kubelet, tag, needDirs) {
    const lat = Object.fromEntries(CALLS.map((c) => [c, []]));
    const timed = async (svc, method, req) => {
      const t = performance.now();
      const r = await invoke(svc, method, req);
      lat[method].push(performance.now() - t);
      return r;
    };
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const i = next++;
        const staging = path.join(kubelet, 'plugins', `${tag}-${i}`);
        const target = path.join(kubelet, 'pods', `${tag}-${i}`, 'mount');
        // the CO creates the staging directory; the sim backend never touches the disk
        if (needDirs) mkdirSync(staging, { recursive: true });
        const v = await timed('controller', 'CreateVolume', {
          name: `${tag}-${i}`,
          volumeCapabilities: [cap],
          capacityRange: { requiredBytes: 1 << 20 },
        });
        const volumeId = v.volume.volumeId;
        const pub = await timed('controller', 'ControllerPublishVolume', {
          volumeId,
          nodeId: NODE,
          volumeCapability: cap,
        });
        await timed('node', 'NodeStageVolume', {
          volumeId,
          stagingTargetPath: staging,
          volumeCapability: cap,
          publishContext: pub.publishContext,
        });
        await timed('node', 'NodePublishVolume', {
          volumeId,
          stagingTargetPath: staging,
          targetPath: target,
          volumeCapability: cap,
          publishContext: pub.publishContext,
        });
        await timed('node', 'NodeUnpublishVolume', { volumeId, targetPath: target });
        await timed('node', 'NodeUnstageVolume', { volumeId, stagingTargetPath: staging });
        await timed('controller', 'ControllerUnpublishVolume', { volumeId, nodeId: NODE });
        await timed('controller', 'DeleteVolume', { volumeId });
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    const seconds = (performance.now() - t0) / 1000;
    const pct = (xs, p) => {
      const s = [...xs].sort((a, b) => a - b);
      return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
    };
    const perCall = Object.fromEntries(CALLS.map((c) => [c, { p50: pct(lat[c], 50), p99: pct(lat[c], 99) }]));
    return { rate: count / seconds, perCall };
  }

  async function overSocket(backend, count, run) {
    const root = mkdtempSync(path.join(values.root, `kemu-csi-bench-${backend}-`));
    const kubelet = path.join(root, 'kubelet');
    const sock = path.join(root, 'csi.sock');
    const cli = path.join(repo, 'packages/csi/src/cli.ts');
    const inline =
      values.driver === 'same-process'
        ? await serveCsiDriver({
            endpoint: `unix://${sock}`,
            nodeId: NODE,
            backend,
            stateDir: path.join(root, 'state'),
            enableAttach: true,
            pathRoots: [kubelet],
            capacityBytes: 2 ** 40,
            grpcEngine: values.engine,
          })
        : null;
    const proc = inline
      ? null
      : spawn(
          process.execPath,
          [
            '--conditions=@kemu/source',
            '--import',
            'tsx',
            cli,
            '--endpoint',
            `unix://${sock}`,
            '--node-id',
            NODE,
            '--backend',
            backend,
            '--state-dir',
            path.join(root, 'state'),
            '--enable-attach',
            '--path-root',
            kubelet,
            '--capacity',
            '1Ti',
          ],
          { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, KEMU_GRPC_ENGINE: values.engine } },
        );
    // As kemu's sidecars and kubelet connect: one channel for the three services.
    const channel = openChannel(`unix://${sock}`, { client, channelOptions: { 'grpc.initial_reconnect_backoff_ms': 100 } });
    const apis = {
      controller: channel.service(csi.ControllerService),
      node: channel.service(csi.NodeService),
      identity: channel.service(csi.IdentityService),
    };
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          if (
            existsSync(sock) &&
            (await apis.identity.Probe({}, { timeoutMs: 1000 })).ready?.value
          )
            break;
        } catch {}
        if (Date.now() > deadline) throw new Error('kemu-csi did not start');
        await new Promise((r) => setTimeout(r, 100));
      }
      const invoke = (svc, m, req) => apis[svc][m](req);
      const warmup = values.warmup !== undefined ? Number(values.warmup) : Math.min(Math.floor(count / 10), 500);
      if (warmup > 0) await lifecycles(invoke, warmup, kubelet, `w${run}`, backend === 'hostpath');
      const s0 = proc ? cpuSeconds(proc.pid) : 0;
      const c0 = process.cpuUsage();
      const result = await lifecycles(
        invoke,
        count,
        kubelet,
        `r${run}`,
        backend === 'hostpath',
      );
      const cu = process.cpuUsage(c0);
      // with the driver in this process, "client" is both sides together
      result.clientCpuMsPerLifecycle = (cu.user + cu.system) / 1000 / count;
      if (proc) result.driverCpuMsPerLifecycle = ((cpuSeconds(proc.pid) - s0) * 1000) / count;
      return result;
    } finally {
      channel.close();
      if (proc) {
        proc.kill('SIGTERM');
        await new Promise((r) => proc.once('exit', r));
      }
      await inline?.close();
      rmSync(root, { recursive: true, force: true });
    }
  }

  async function inProcess(backend, count, run) {
    const root = mkdtempSync(path.join(values.root, `kemu-csi-bench-inproc-${backend}-`));
    const kubelet = path.join(root, 'kubelet');
    const d = await createCsiDriver({
      nodeId: NODE,
      backend,
      stateDir: path.join(root, 'state'),
      enableAttach: true,
      pathRoots: [kubelet],
      capacityBytes: 2 ** 40,
    });
    try {
      return await lifecycles(
        (svc, m, req) => d[svc][m](req),
        count,
        kubelet,
        `i${run}`,
        backend === 'hostpath',
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }

  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const report = {
    machine: {
      cpus: os.cpus().length,
      node: process.version,
      root: process.getuid?.() === 0,
      loadavg: os.loadavg(),
    },
    driver: values.driver,
    kubeletRoot: values.root,
    concurrency,
    runs,
    results: {},
  };
  for (const backend of backends) {
    const count = backend === 'sim' ? Number(values.count) : Number(values['hostpath-count']);
    const socketRuns = [];
    const refRuns = [];
    const echoRuns = [];
    const leanEchoRuns = [];
    for (let r = 0; r < runs; r++) {
      socketRuns.push(await overSocket(backend, count, r));
      refRuns.push(await inProcess(backend, count, r));
      // The same client and process layout as the lifecycles; 64-byte messages, about a lifecycle call's size.
      const echoOpts = { client, calls: Math.min(count, 2000) * CALLS.length, concurrency, size: ECHO_SIZE, sameProcess: values.driver === 'same-process' };
      echoRuns.push((await measureEcho({ engine: 'grpc-js', ...echoOpts })).callsPerSec);
      leanEchoRuns.push(await measureEcho({ engine: 'http2', ...echoOpts }));
      process.stderr.write(
        `${backend} run ${r + 1}/${runs}: ${socketRuns.at(-1).rate.toFixed(0)} lifecycles/s over the socket, ${refRuns.at(-1).rate.toFixed(0)} in process, bare echo on grpc-js ${echoRuns.at(-1).toFixed(0)} / http2 engine ${leanEchoRuns.at(-1).callsPerSec.toFixed(0)} calls/s (${client} client)\n`,
      );
    }
    const echo = median(echoRuns);
    const ceiling = echo / CALLS.length;
    const rate = median(socketRuns.map((x) => x.rate));
    const ref = median(refRuns.map((x) => x.rate));
    const perCall = Object.fromEntries(
      CALLS.map((c) => [
        c,
        {
          p50Ms: median(socketRuns.map((x) => x.perCall[c].p50)),
          p99Ms: median(socketRuns.map((x) => x.perCall[c].p99)),
        },
      ]),
    );
    const driverCpu = values.driver === 'process' ? median(socketRuns.map((x) => x.driverCpuMsPerLifecycle)) : undefined;
    const clientCpu = median(socketRuns.map((x) => x.clientCpuMsPerLifecycle));
    const leanEcho = leanEchoRuns.length ? median(leanEchoRuns.map((x) => x.callsPerSec)) : undefined;
    report.results[backend] = {
      engine: values.engine,
      client,
      lifecycles: count,
      driverCpuMsPerLifecycle: driverCpu,
      clientCpuMsPerLifecycle: clientCpu,
      http2EngineEchoCallsPerSecond: leanEcho,
      lifecyclesPerSecond: rate,
      inProcessLifecyclesPerSecond: ref,
      socketOverInProcessRatio: rate / ref,
      bareGrpcEchoCallsPerSecond: echo,
      grpcCeilingLifecyclesPerSecond: ceiling,
      socketOverGrpcCeilingRatio: rate / ceiling,
      perCall,
    };
    console.log(
      `\n${backend}: ${count} lifecycles x ${runs} runs, ${concurrency} in flight, driver ${values.driver}, ${values.engine} engine, ${client} client (load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`,
    );
    console.log(
      `  over the socket: ${rate.toFixed(0)} lifecycles/s (median)   in process (reference): ${ref.toFixed(0)} lifecycles/s   ratio ${(rate / ref).toFixed(2)}`,
    );
    console.log(
      `  bare echo on a grpc-js server, ${client} client (reference): ${echo.toFixed(0)} calls/s = ceiling of ${ceiling.toFixed(0)} lifecycles/s   ratio ${(rate / ceiling).toFixed(2)}`,
    );
    if (leanEcho !== undefined)
      console.log(
        `  bare echo on the http2 engine, ${client} client: ${leanEcho.toFixed(0)} calls/s = ceiling of ${(leanEcho / CALLS.length).toFixed(0)} lifecycles/s`,
      );
    console.log(
      driverCpu !== undefined
        ? `  CPU per lifecycle: kemu-csi ${driverCpu.toFixed(3)} ms (one core sustains ~${(1000 / driverCpu).toFixed(0)}/s), ${client} client ${clientCpu.toFixed(3)} ms (~${(1000 / clientCpu).toFixed(0)}/s)`
        : `  CPU per lifecycle (driver and client in one process): ${clientCpu.toFixed(3)} ms`,
    );
    console.log('  call                        p50 ms   p99 ms');
    for (const c of CALLS)
      console.log(
        `  ${c.padEnd(26)} ${perCall[c].p50Ms.toFixed(2).padStart(7)}  ${perCall[c].p99Ms.toFixed(2).padStart(7)}`,
      );
  }
  mkdirSync(path.dirname(values.json), { recursive: true });
  writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwritten ${values.json}`);
}
