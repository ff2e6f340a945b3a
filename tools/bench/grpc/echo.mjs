#!/usr/bin/env node
// gRPC transport benchmark over a unix socket: a unary echo (raw bytes, no protobuf, no service code)
// served by each server engine in its own process, driven by a grpc-js client in this process with N calls
// in flight — the layout of kubelet -> kemu-cri and sidecar -> kemu-csi. The grpc-js server is the
// reference (stock options; `grpc-js-tuned` is grpc-js as @kemu/proto builds it); each engine's calls/s is reported as a ratio to it, measured in the same run, along with CPU
// milliseconds per call in the server process and in the client process (CPU does not depend on what else
// the machine runs, calls/s does).
//
//   node tools/bench/grpc/echo.mjs [--calls 20000] [--concurrency 16] [--runs 5] [--engines grpc-js,grpc-js-tuned,http2]
//                                  [--size 64] [--json FILE] [--cpu-prof-dir DIR]
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { measureEcho } from './echo-reference.mjs';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '16' },
    runs: { type: 'string', default: '5' },
    engines: { type: 'string', default: 'grpc-js,grpc-js-tuned,http2' },
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
const payload = Buffer.alloc(Number(values.size), 7);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const results = Object.fromEntries(engines.map((e) => [e, []]));
for (let r = 0; r < runs; r++) {
  // Interleaved so that a change in machine load hits every engine alike.
  for (const engine of engines) {
    const m = await measureEcho({ engine, calls, concurrency, size: payload.length, cpuProfDir: values['cpu-prof-dir'] });
    results[engine].push(m);
    process.stderr.write(
      `run ${r + 1}/${runs} ${engine}: ${m.callsPerSec.toFixed(0)} calls/s, server ${m.serverCpuMsPerCall.toFixed(3)} ms CPU/call, client ${m.clientCpuMsPerCall.toFixed(3)} ms CPU/call\n`,
    );
  }
}
const summary = {};
const ref = median(results[engines[0]].map((m) => m.callsPerSec));
console.log(`\nunary echo, ${payload.length}-byte messages, ${calls} calls x ${runs} runs, ${concurrency} in flight, grpc-js client in its own process (${os.cpus().length} CPUs, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`);
console.log('engine       calls/s (median)  ratio to ' + engines[0] + '  server CPU ms/call  client CPU ms/call');
for (const engine of engines) {
  const rs = results[engine];
  summary[engine] = {
    callsPerSec: median(rs.map((m) => m.callsPerSec)),
    serverCpuMsPerCall: median(rs.map((m) => m.serverCpuMsPerCall)),
    clientCpuMsPerCall: median(rs.map((m) => m.clientCpuMsPerCall)),
  };
  summary[engine].ratio = summary[engine].callsPerSec / ref;
  const s = summary[engine];
  console.log(
    `${engine.padEnd(12)} ${s.callsPerSec.toFixed(0).padStart(16)}  ${s.ratio.toFixed(2).padStart(10 + engines[0].length)}  ${s.serverCpuMsPerCall.toFixed(4).padStart(18)}  ${s.clientCpuMsPerCall.toFixed(4).padStart(18)}`,
  );
}
if (values.json) writeFileSync(values.json, `${JSON.stringify({ calls, concurrency, runs, size: payload.length, summary, results }, null, 2)}\n`);
