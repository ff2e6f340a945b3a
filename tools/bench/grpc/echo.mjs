#!/usr/bin/env node
// gRPC transport benchmark over a unix socket: a unary echo (raw bytes, no protobuf, no service code)
// served by each server engine in its own process, driven from this process by each client with N calls
// in flight — the layout of kubelet -> kemu-cri and sidecar -> kemu-csi. Servers: a stock grpc-js server
// (the reference), `grpc-js-tuned` (grpc-js as @kemu/proto builds it) and @kemu/proto's http2 engine;
// clients: grpc-js and @kemu/proto's http2 client. Each pair's calls/s is reported as a ratio to the first
// pair (grpc-js server, grpc-js client), measured in the same run, with CPU milliseconds per call in the
// server process and in the client process (CPU does not depend on what else the machine runs, calls/s does).
//
//   node tools/bench/grpc/echo.mjs [--calls 20000] [--concurrency 16] [--runs 5] [--engines grpc-js,grpc-js-tuned,http2]
//                                  [--clients grpc-js,http2] [--size 64] [--json FILE] [--cpu-prof-dir DIR]
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

// The http2 client is TypeScript resolved through the "@kemu/source" export condition; re-run under tsx.
if (!process.env.KEMU_BENCH_CHILD) {
  const child = spawn(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    cwd: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..'),
    env: { ...process.env, KEMU_BENCH_CHILD: '1' },
  });
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  await main();
}

async function main() {
const { measureEcho } = await import('./echo-reference.mjs');

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '16' },
    runs: { type: 'string', default: '5' },
    engines: { type: 'string', default: 'grpc-js,grpc-js-tuned,http2' },
    clients: { type: 'string', default: 'grpc-js,http2' },
    size: { type: 'string', default: '64' },
    json: { type: 'string' },
    // write V8 CPU profiles of the server processes here (profile the client with `node --cpu-prof`)
    'cpu-prof-dir': { type: 'string' },
  },
});
const calls = Number(values.calls);
const concurrency = Number(values.concurrency);
const runs = Number(values.runs);
const engines = values.engines.split(',');
const clients = values.clients.split(',');
const pairs = engines.flatMap((engine) => clients.map((client) => ({ engine, client, key: `${engine} / ${client}` })));
const payload = Buffer.alloc(Number(values.size), 7);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const results = Object.fromEntries(pairs.map((p) => [p.key, []]));
for (let r = 0; r < runs; r++) {
  // Interleaved so that a change in machine load hits every pair alike.
  for (const { engine, client, key } of pairs) {
    const m = await measureEcho({ engine, client, calls, concurrency, size: payload.length, cpuProfDir: values['cpu-prof-dir'] });
    results[key].push(m);
    process.stderr.write(
      `run ${r + 1}/${runs} ${key}: ${m.callsPerSec.toFixed(0)} calls/s, server ${m.serverCpuMsPerCall.toFixed(3)} ms CPU/call, client ${m.clientCpuMsPerCall.toFixed(3)} ms CPU/call\n`,
    );
  }
}
const summary = {};
const ref = median(results[pairs[0].key].map((m) => m.callsPerSec));
console.log(`\nunary echo, ${payload.length}-byte messages, ${calls} calls x ${runs} runs, ${concurrency} in flight, client in its own process (${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
console.log(`server / client            calls/s (median)  ratio to ${pairs[0].key}  server CPU ms/call  client CPU ms/call`);
for (const { key } of pairs) {
  const rs = results[key];
  summary[key] = {
    callsPerSec: median(rs.map((m) => m.callsPerSec)),
    serverCpuMsPerCall: median(rs.map((m) => m.serverCpuMsPerCall)),
    clientCpuMsPerCall: median(rs.map((m) => m.clientCpuMsPerCall)),
  };
  summary[key].ratio = summary[key].callsPerSec / ref;
  const s = summary[key];
  console.log(
    `${key.padEnd(26)} ${s.callsPerSec.toFixed(0).padStart(16)}  ${s.ratio.toFixed(2).padStart(12 + pairs[0].key.length)}  ${s.serverCpuMsPerCall.toFixed(4).padStart(18)}  ${s.clientCpuMsPerCall.toFixed(4).padStart(18)}`,
  );
}
if (values.json) writeFileSync(values.json, `${JSON.stringify({ calls, concurrency, runs, size: payload.length, summary, results }, null, 2)}\n`);
}
