// The transport reference of the gRPC benchmarks: a unary echo of raw bytes (no protobuf, no service code)
// served by one engine in its own process and driven by a grpc-js client in the calling process. What it
// reaches is the ceiling any service on that engine can reach with the same client and process layout.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime + stime, in clock ticks of 1/100 s on Linux
  return (Number(f[11]) + Number(f[12])) / 100;
}

/**
 * Runs `calls` echo calls with `concurrency` in flight against `engine` (`grpc-js` or `http2`) and returns
 * calls/s plus CPU milliseconds per call in the server process and in this (client) process.
 */
export async function measureEcho({ engine, calls, concurrency, size = 64, cpuProfDir }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-grpc-echo-'));
  const socket = path.join(dir, 'echo.sock');
  const proc = spawn(
    process.execPath,
    [
      ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(cpuProfDir)}`] : []),
      '--conditions=@kemu/source',
      '--import',
      'tsx',
      path.join(here, 'echo-server.mjs'),
      '--engine',
      engine,
      '--socket',
      socket,
    ],
    { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const payload = Buffer.alloc(size, 7);
  const id = (b) => b;
  let client;
  try {
    await new Promise((resolve, reject) => {
      proc.stdout.on('data', (d) => String(d).includes('ready') && resolve());
      proc.once('exit', (code) => reject(new Error(`${engine} echo server exited with ${code}`)));
    });
    const Client = grpc.makeGenericClientConstructor(
      {
        Echo: {
          path: '/bench.Echo/Echo',
          requestStream: false,
          responseStream: false,
          requestSerialize: id,
          requestDeserialize: id,
          responseSerialize: id,
          responseDeserialize: id,
        },
      },
      'Echo',
    );
    client = new Client(`unix://${socket}`, grpc.credentials.createInsecure());
    const echo = () => new Promise((res, rej) => client.Echo(payload, (e, v) => (e ? rej(e) : res(v))));
    const drive = async (n) => {
      let sent = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (sent < n) {
            sent++;
            const reply = await echo();
            if (reply.length !== payload.length) throw new Error('echo returned a different message');
          }
        }),
      );
      return performance.now() - t0;
    };
    await drive(Math.min(calls, 3000)); // JIT warm-up on both sides
    const s0 = cpuSeconds(proc.pid);
    const c0 = process.cpuUsage();
    const ms = await drive(calls);
    const cu = process.cpuUsage(c0);
    return {
      callsPerSec: calls / (ms / 1000),
      serverCpuMsPerCall: ((cpuSeconds(proc.pid) - s0) * 1000) / calls,
      clientCpuMsPerCall: (cu.user + cu.system) / 1000 / calls,
    };
  } finally {
    client?.close();
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
