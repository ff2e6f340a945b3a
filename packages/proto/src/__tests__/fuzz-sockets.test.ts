// A short, seeded fuzz of every unix socket kemu serves — kemu-cri's, kemu-csi's and the plugin-registration
// socket kemu-csi serves for the kubelet — on both gRPC engines. The servers are the real commands, run as
// child processes on temp sockets; the client is the raw HTTP/2 client of raw-http2.ts, sending random and
// mutated calls (random method names, random and truncated protobuf, lying length prefixes, compressed
// flags, wrong content types, bad timeouts, odd authorities, huge headers) and random frames. Asserted:
// the server never exits, every call is answered with a gRPC status (or an HTTP error status) or ends in a
// clean stream or connection error, and a well-formed call succeeds afterwards.
// Reproduce a run with KEMU_FUZZ_SEED=<seed printed in the failure>; KEMU_FUZZ_CALLS sets its length.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cri, csi, type GrpcEngine, grpc, pluginregistration, unaryCall } from '../index';
import { END_HEADERS, END_STREAM, frame, grpcGoHeaders, grpcMessage, grpcStatus, literal, RawConnection, type Reply, T } from './raw-http2';

const here = path.dirname(fileURLToPath(import.meta.url));
const packages = path.resolve(here, '../../..');
// The servers run from their TypeScript sources, in a temp working directory: tsx is loaded by its path.
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const SEED = Number(process.env.KEMU_FUZZ_SEED ?? 0x6b656d75);
const CALLS = Number(process.env.KEMU_FUZZ_CALLS ?? 120);
/** How long one call may go unanswered: every fuzzed call carries a grpc-timeout well below this. */
const ANSWER_MS = 4000;

/** mulberry32: a small seeded PRNG, so a failing run can be replayed exactly. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Socket {
  name: string;
  path: string;
  methods: string[];
  /** A well-formed call and a check of its answer. */
  probe(sock: string): Promise<void>;
}

function methodsOf(...services: grpc.ServiceDefinition[]): string[] {
  return services.flatMap((s) => Object.values(s).map((m) => m.path));
}

function child(args: string[], engine: GrpcEngine, cwd: string): ChildProcess {
  const proc = spawn(process.execPath, ['--conditions=@kemu/source', '--import', tsx, ...args], {
    cwd,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, KEMU_GRPC_ENGINE: engine },
  });
  let stderr = '';
  proc.stderr!.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  proc.on('exit', (code) => {
    if (code) console.error(`${path.basename(args[0]!)} exited ${code}: ${stderr}`);
  });
  return proc;
}

async function waitForSocket(sock: string, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!fs.existsSync(sock)) {
    if (proc.exitCode !== null) throw new Error(`server exited (${proc.exitCode}) before serving ${sock}`);
    if (Date.now() > deadline) throw new Error(`${sock} did not appear`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One fuzzed call's bytes: a header block and the DATA payload (undefined: HEADERS ends the stream). */
interface FuzzCall {
  headers: [string, string][] | Buffer;
  body: Buffer | undefined;
  continuationAt?: number;
  what: string;
}

function fuzzCall(rand: () => number, sock: Socket, sockPath: string): FuzzCall {
  const pick = <X>(xs: readonly X[]): X => xs[Math.floor(rand() * xs.length)]!;
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  const what: string[] = [];
  let method = pick(sock.methods);
  if (rand() < 0.15) {
    method = pick(['/', '/x', `/${bytes(4).toString('hex')}/${bytes(3).toString('hex')}`, method.toUpperCase(), `${method}/extra`, '/runtime.v1.RuntimeService/']);
    what.push(`method ${method}`);
  }
  const authority = pick([sockPath, encodeURIComponent(sockPath), 'localhost', undefined, '']);
  const headers = grpcGoHeaders(method, authority);
  if (rand() < 0.1) {
    const ct = pick(['text/plain', 'application/json', 'application/grpc+json', 'application/grpcx', '']);
    headers.splice(headers.findIndex(([n]) => n === 'content-type'), 1, ['content-type', ct]);
    what.push(`content-type ${ct}`);
  }
  // Malformed timeouts both engines refuse (grpc-js reads "1.5S" as 5 s and "999999999S" as 99999999 s,
  // which leaves a silent stream legitimately silent).
  const timeout = rand() < 0.08 ? pick(['1x', '-1S', 'S', 'abc']) : '1S';
  headers.push(['grpc-timeout', timeout]);
  if (timeout !== '1S') what.push(`grpc-timeout ${timeout}`);
  if (rand() < 0.1) headers.push(['grpc-encoding', pick(['gzip', 'deflate', 'snappy', 'identity'])]);
  let continuationAt: number | undefined;
  if (rand() < 0.08) {
    headers.push(['x-kemu-fuzz', 'v'.repeat(Math.floor(rand() * 200_000))]);
    continuationAt = 1 + Math.floor(rand() * 16_000);
    what.push('huge header');
  }
  // The message: random bytes, or a truncated / bit-flipped encoding of a small valid one.
  let message: Buffer;
  const shape = rand();
  if (shape < 0.3) message = bytes(Math.floor(rand() * 64));
  else if (shape < 0.6) {
    const valid = Buffer.concat([Buffer.from([0x0a, 0x06]), Buffer.from('kemu-x'), Buffer.from([0x10, 0x01])]);
    message = valid.subarray(0, Math.floor(rand() * valid.length));
  } else if (shape < 0.8) {
    message = Buffer.concat([Buffer.from([0x0a, 0x06]), Buffer.from('kemu-x')]);
    message[Math.floor(rand() * message.length)]! ^= 1 << Math.floor(rand() * 8);
  } else message = Buffer.alloc(0);
  let body = grpcMessage(message);
  const framing = rand();
  if (framing < 0.1) {
    body.writeUInt32BE(message.length + 1 + Math.floor(rand() * 1000), 1);
    what.push('length past the end');
  } else if (framing < 0.15) {
    body.writeUInt32BE(0xffffffff, 1);
    what.push('huge length');
  } else if (framing < 0.2) {
    body[0] = 1;
    what.push('compressed flag');
  } else if (framing < 0.25) {
    body = body.subarray(0, Math.floor(rand() * 5));
    what.push('partial prefix');
  } else if (framing < 0.3) {
    body = Buffer.concat([body, body]);
    what.push('two messages');
  }
  return { headers, body: framing > 0.97 ? undefined : body, continuationAt, what: [method, ...what].join(', ') };
}

/** Random frames and broken header blocks on a connection that has made one good call. */
function fuzzFrames(rand: () => number): Buffer[] {
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  const stream = 1001 + 2 * Math.floor(rand() * 100);
  const cases = [
    () => frame(Math.floor(rand() * 12), Math.floor(rand() * 256), Math.floor(rand() * 8), bytes(Math.floor(rand() * 40))),
    () => frame(T.HEADERS, END_HEADERS, stream, bytes(1 + Math.floor(rand() * 30))),
    () => frame(T.HEADERS, 0, stream, literal(':method', 'POST')),
    () => frame(T.CONTINUATION, END_HEADERS, stream, literal('x-a', 'b')),
    () => frame(T.DATA, END_STREAM, stream, bytes(10)),
    () => frame(T.WINDOW_UPDATE, 0, 0, Buffer.from([0, 0, 0, 0])),
    () => frame(T.SETTINGS, 0, 0, bytes(5)),
    () => {
      const out = Buffer.alloc(9);
      out.writeUIntBE(0xffffff, 0, 3);
      out[3] = T.DATA;
      out.writeUInt32BE(stream, 5);
      return out;
    },
  ];
  return Array.from({ length: 1 + Math.floor(rand() * 3) }, () => cases[Math.floor(rand() * cases.length)]!());
}

/** Waits for a call's end; a stream that has started answering (a long-lived stream, say) is cancelled. */
async function settle(conn: RawConnection, reply: Promise<Reply>, streamId: number): Promise<Reply | 'unanswered'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ANSWER_MS);
  });
  const r = await Promise.race([reply, late]);
  clearTimeout(timer);
  if (r !== 'late') return r;
  const partial = conn.partial(streamId);
  conn.cancel(streamId);
  return partial && Object.keys(partial.headers).length > 0 ? partial : 'unanswered';
}

function answered(r: Reply, conn: RawConnection): boolean {
  if (r.reset !== undefined || conn.goaway !== undefined || conn.closed) return true;
  if (grpcStatus(r) !== undefined) return true;
  // An HTTP error (415 for a content type that is not gRPC's), or headers of a stream still going.
  return r.headers[':status'] !== undefined;
}

for (const engine of ['http2', 'grpc-js'] as GrpcEngine[]) {
  describe(`fuzzing kemu's sockets, ${engine} engine (seed ${SEED}, ${CALLS} calls per socket)`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-fuzz-${engine}-`));
    const procs: ChildProcess[] = [];
    const sockets: Socket[] = [
      {
        name: 'kemu-cri',
        path: path.join(dir, 'cri.sock'),
        methods: methodsOf(cri.RuntimeServiceService, cri.ImageServiceService),
        probe: async (sock) => {
          const client = new cri.RuntimeServiceClient(`unix://${sock}`, grpc.credentials.createInsecure());
          try {
            await expect(unaryCall(client, 'Version', { version: 'v1' }, { timeoutMs: 10_000 })).resolves.toMatchObject({ runtimeApiVersion: 'v1' });
          } finally {
            client.close();
          }
        },
      },
      {
        name: 'kemu-csi',
        path: path.join(dir, 'csi.sock'),
        methods: methodsOf(csi.IdentityService, csi.ControllerService, csi.NodeService, csi.GroupControllerService),
        probe: async (sock) => {
          const client = new csi.IdentityClient(`unix://${sock}`, grpc.credentials.createInsecure());
          try {
            await expect(unaryCall(client, 'GetPluginInfo', {}, { timeoutMs: 10_000 })).resolves.toMatchObject({ name: 'fuzz.kemu.io' });
          } finally {
            client.close();
          }
        },
      },
      {
        name: 'registration',
        path: path.join(dir, 'plugins_registry', 'fuzz.kemu.io-reg.sock'),
        methods: methodsOf(pluginregistration.RegistrationService),
        probe: async (sock) => {
          const client = new pluginregistration.RegistrationClient(`unix://${sock}`, grpc.credentials.createInsecure());
          try {
            await expect(unaryCall(client, 'GetInfo', {}, { timeoutMs: 10_000 })).resolves.toMatchObject({ name: 'fuzz.kemu.io' });
          } finally {
            client.close();
          }
        },
      },
    ];

    beforeAll(async () => {
      const [criSock, csiSock, regSock] = sockets.map((s) => s.path) as [string, string, string];
      procs.push(
        child(
          [
            path.join(packages, 'cri/src/cli.ts'),
            '--listen', `unix://${criSock}`, '--backend', 'sim', '--state-dir', path.join(dir, 'cri-state'),
            '--synthetic-images', '--sim-network', 'ipam', '--allowed-log-root', dir,
          ],
          engine,
          dir,
        ),
        child(
          [
            path.join(packages, 'csi/src/cli.ts'),
            '--endpoint', `unix://${csiSock}`, '--node-id', 'fuzz-node', '--backend', 'sim', '--drivername', 'fuzz.kemu.io',
            '--state-dir', path.join(dir, 'csi-state'), '--path-root', path.join(dir, 'kubelet'),
            '--registration-dir', path.dirname(regSock),
          ],
          engine,
          dir,
        ),
      );
      await Promise.all([waitForSocket(criSock, procs[0]!), waitForSocket(csiSock, procs[1]!), waitForSocket(regSock, procs[1]!)]);
    }, 120_000);

    afterAll(async () => {
      for (const p of procs) {
        if (p.exitCode !== null) continue;
        p.kill('SIGTERM');
        await new Promise((r) => p.once('exit', r));
      }
      fs.rmSync(dir, { recursive: true, force: true });
    });

    sockets.forEach((sock, index) => {
      it(`${sock.name}: answers every fuzzed call and still serves`, { timeout: 120_000 }, async () => {
        const rand = prng(SEED + index);
        const proc = procs[sock.name === 'kemu-cri' ? 0 : 1]!;
        let conn = await RawConnection.open(sock.path);
        const unanswered: string[] = [];
        for (let i = 0; i < CALLS; i++) {
          if (conn.closed || conn.goaway !== undefined) {
            conn.close();
            conn = await RawConnection.open(sock.path);
          }
          if (rand() < 0.1) {
            // A burst of random frames: the connection may end, the server may not.
            const before = (conn as unknown as { nextStream: number }).nextStream;
            const ok = await settle(conn, conn.request(grpcGoHeaders(sock.methods[0]!, 'localhost'), grpcMessage(Buffer.alloc(0))), before);
            if (ok === 'unanswered' || !answered(ok, conn)) unanswered.push(`seed ${SEED} call ${i}: the call before random frames`);
            for (const f of fuzzFrames(rand)) conn.write(f);
            // Random frames may leave the connection legitimately stalled (a SETTINGS frame that shrinks the
            // window to nothing, a header block left open): later calls go on a new connection.
            conn.close();
            conn = await RawConnection.open(sock.path);
            continue;
          }
          const call = fuzzCall(rand, sock, sock.path);
          const block = Array.isArray(call.headers) ? conn.encode(call.headers) : call.headers;
          const streamId = (conn as unknown as { nextStream: number }).nextStream;
          const r = await settle(conn, conn.request(block, call.body, { continuationAt: call.continuationAt }), streamId);
          if (r === 'unanswered' || !answered(r, conn)) unanswered.push(`seed ${SEED} call ${i}: ${call.what}`);
        }
        conn.close();
        expect(unanswered).toEqual([]);
        expect(proc.exitCode, `${sock.name} exited`).toBeNull();
        await sock.probe(sock.path);
        // And the raw client's well-formed call, with the socket path as grpc-go 1.51 sends it.
        const last = await RawConnection.open(sock.path);
        try {
          const reply = await last.request(grpcGoHeaders(sock.methods.find((m) => /Version|GetPluginInfo|GetInfo/.test(m))!, sock.path), grpcMessage(Buffer.alloc(0)));
          expect(grpcStatus(reply)?.code).toBe(0);
        } finally {
          last.close();
        }
      });
    });
  });
}
