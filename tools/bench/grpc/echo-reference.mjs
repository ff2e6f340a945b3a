// The transport reference of the gRPC benchmarks: a unary echo of raw bytes (no protobuf, no service code)
// served by one engine in its own process (or in the calling one) and driven by a grpc-js client or
// @kemu/proto's http2 client in the calling process. What it reaches is the ceiling any service on that
// engine can reach with the same client and process layout.
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

const id = (b) => b;
const ECHO_PATH = '/bench.Echo/Echo';
const ECHO_DEF = {
  Echo: {
    path: ECHO_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  },
};

/**
 * An echo server on `engine` (grpc-js: stock, grpc-js-tuned: as @kemu/proto builds it, http2: @kemu/proto's
 * engine) in this process, bound to `socket`; needs @kemu/proto (run under tsx). echo-server.mjs runs it as a
 * process of its own.
 */
export async function serveEcho(engine, socket) {
  if (!['grpc-js', 'grpc-js-tuned', 'http2'].includes(engine)) throw new Error(`unknown engine ${engine}`);
  const { createGrpcServer } = await import('@kemu/proto');
  const server = engine === 'grpc-js' ? new grpc.Server() : createGrpcServer(engine === 'grpc-js-tuned' ? 'grpc-js' : 'http2');
  server.addService(ECHO_DEF, { Echo: (call, cb) => cb(null, call.request) });
  await new Promise((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
  );
  return server;
}

/**
 * A function that echoes a buffer with the given client: `grpc-js` (a generic grpc-js client) or `http2`
 * (@kemu/proto's Http2GrpcChannel; needs the @kemu/source condition, i.e. run under tsx).
 */
export async function echoClient(client, socket) {
  if (client === 'http2') {
    const { Http2GrpcChannel } = await import('@kemu/proto');
    const channel = new Http2GrpcChannel(`unix://${socket}`);
    return {
      echo: (payload) =>
        new Promise((res, rej) => channel.makeUnaryRequest(ECHO_PATH, id, id, payload, null, null, (e, v) => (e ? rej(e) : res(v)))),
      close: () => channel.close(),
    };
  }
  if (client !== 'grpc-js') throw new Error(`unknown client ${client}: use grpc-js or http2`);
  const Client = grpc.makeGenericClientConstructor(ECHO_DEF, 'Echo');
  const c = new Client(`unix://${socket}`, grpc.credentials.createInsecure());
  return {
    echo: (payload) => new Promise((res, rej) => c.Echo(payload, (e, v) => (e ? rej(e) : res(v)))),
    close: () => c.close(),
  };
}

/**
 * Runs `calls` echo calls with `concurrency` in flight against `engine` (`grpc-js`, `grpc-js-tuned` or
 * `http2`) with `client` (`grpc-js` or `http2`) after `warmup` untimed calls, and returns calls/s plus CPU
 * milliseconds per call in the server process and in this (client) process. With `sameProcess` the
 * server runs in this process and the client figure is both sides together.
 */
export async function measureEcho({
  engine,
  client = 'grpc-js',
  calls,
  concurrency,
  size = 64,
  warmup = Math.min(calls, 3000),
  sameProcess = false,
  cpuProfDir,
}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'kemu-grpc-echo-'));
  const socket = path.join(dir, 'echo.sock');
  if (sameProcess) {
    const server = await serveEcho(engine, socket);
    try {
      return await drive(null);
    } finally {
      server.forceShutdown();
      rmSync(dir, { recursive: true, force: true });
    }
  }
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
  try {
    await new Promise((resolve, reject) => {
      proc.stdout.on('data', (d) => String(d).includes('ready') && resolve());
      proc.once('exit', (code) => reject(new Error(`${engine} echo server exited with ${code}`)));
    });
    return await drive(proc);
  } finally {
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  }

  async function drive(server) {
    const payload = Buffer.alloc(size, 7);
    const c = await echoClient(client, socket);
    try {
      const run = async (n) => {
        let sent = 0;
        const t0 = performance.now();
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            while (sent < n) {
              sent++;
              const reply = await c.echo(payload);
              if (reply.length !== payload.length) throw new Error('echo returned a different message');
            }
          }),
        );
        return performance.now() - t0;
      };
      if (warmup > 0) await run(warmup); // JIT warm-up on both sides
      const s0 = server ? cpuSeconds(server.pid) : 0;
      const c0 = process.cpuUsage();
      const ms = await run(calls);
      const cu = process.cpuUsage(c0);
      return {
        callsPerSec: calls / (ms / 1000),
        serverCpuMsPerCall: server ? ((cpuSeconds(server.pid) - s0) * 1000) / calls : undefined,
        clientCpuMsPerCall: (cu.user + cu.system) / 1000 / calls,
      };
    } finally {
      c.close();
    }
  }
}
