// `:authority` as real gRPC clients send it on a unix socket: the socket path (grpc-go < 1.58, so crictl and
// the kubelet up to 1.30; grpc-java), its %-encoding (grpcio >= 1.57), `localhost`, nothing, or an empty
// value. Every unix-socket server of either engine must answer them all — a CRI Version, a CSI
// GetPluginInfo and a plugin-registration GetInfo — and still refuse malformed HTTP/2. Witnesses: a raw
// HTTP/2 client writing exactly grpc-go 1.51's frames, curl, and Python grpcio.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cri,
  csi,
  type GrpcEngine,
  type GrpcServer,
  implementService,
  pluginregistration,
  serveUnix,
  shutdownServer,
} from '../index';
import { ACK, END_HEADERS, frame, grpcGoHeaders, grpcMessage, grpcStatus, literal, PREFACE, RawConnection, T } from './raw-http2';

const here = path.dirname(fileURLToPath(import.meta.url));
const PYTHON = '/usr/bin/python3';
const canPython = requirePeers('the Python grpcio authority checks', [peers.pythonGrpc]);
const canCurl = requirePeers('the curl authority checks', [peers.curl]);

/** Runs a peer program without blocking this process, which also serves the sockets it calls. */
function run(cmd: string, args: string[], input?: Buffer): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], timeout: 20_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(input);
  });
}

const PROTOCOL_ERROR = 0x1;
const FRAME_SIZE_ERROR = 0x6;
const COMPRESSION_ERROR = 0x9;

interface Target {
  name: string;
  path: string;
  /** Checks a decoded reply of this method. */
  check(reply: Buffer): void;
}

const TARGETS: Target[] = [
  {
    name: 'cri',
    path: '/runtime.v1.RuntimeService/Version',
    check: (b) => expect(cri.RuntimeServiceService.Version.responseDeserialize(b)).toMatchObject({ runtimeName: 'kemu' }),
  },
  {
    name: 'csi',
    path: '/csi.v1.Identity/GetPluginInfo',
    check: (b) => expect(csi.IdentityService.GetPluginInfo.responseDeserialize(b)).toMatchObject({ name: 'test.kemu.io' }),
  },
  {
    name: 'registration',
    path: '/pluginregistration.Registration/GetInfo',
    check: (b) =>
      expect(pluginregistration.RegistrationService.GetInfo.responseDeserialize(b)).toMatchObject({ type: 'CSIPlugin' }),
  },
];

for (const engine of ['http2', 'grpc-js'] as GrpcEngine[]) {
  describe(`unix-socket :authority, ${engine} engine`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-authority-${engine}-`));
    const sockets: Record<string, string> = {};
    const servers: GrpcServer[] = [];
    /** What the CRI handler saw as the call's host. */
    const hosts: string[] = [];

    beforeAll(async () => {
      sockets.cri = path.join(dir, 'cri.sock');
      sockets.csi = path.join(dir, 'csi.sock');
      sockets.registration = path.join(dir, 'registration', 'test.kemu.io-reg.sock');
      servers.push(
        await serveUnix(
          [
            [
              cri.RuntimeServiceService,
              implementService(cri.RuntimeServiceService, {
                Version: (_req, call) => {
                  hosts.push(call.getHost());
                  return { version: '0.1.0', runtimeName: 'kemu', runtimeVersion: '1', runtimeApiVersion: 'v1' };
                },
              }),
            ],
          ],
          sockets.cri,
          { engine },
        ),
        await serveUnix(
          [[csi.IdentityService, implementService(csi.IdentityService, { GetPluginInfo: () => ({ name: 'test.kemu.io', vendorVersion: '1' }) })]],
          sockets.csi,
          { engine },
        ),
        await serveUnix(
          [
            [
              pluginregistration.RegistrationService,
              implementService(pluginregistration.RegistrationService, {
                GetInfo: () => ({ type: 'CSIPlugin', name: 'test.kemu.io', endpoint: sockets.csi, supportedVersions: ['1.0.0'] }),
              }),
            ],
          ],
          sockets.registration,
          { engine },
        ),
      );
    });

    afterAll(async () => {
      await Promise.all(servers.map((s) => shutdownServer(s, 1000)));
      fs.rmSync(dir, { recursive: true, force: true });
    });

    const shapes = (sock: string): [string, string | undefined][] => [
      ['the socket path (grpc-go < 1.58, grpc-java)', sock],
      ['the %-encoded path (grpcio >= 1.57)', encodeURIComponent(sock)],
      ['localhost (grpc-go >= 1.58, grpc-js)', 'localhost'],
      ['no :authority at all', undefined],
      ['an empty :authority', ''],
    ];

    for (const target of TARGETS) {
      it(`${target.name}: answers grpc-go 1.51's frames whatever the :authority`, async () => {
        const sock = sockets[target.name]!;
        for (const [shape, authority] of shapes(sock)) {
          const conn = await RawConnection.open(sock);
          try {
            const reply = await conn.request(grpcGoHeaders(target.path, authority), grpcMessage(Buffer.alloc(0)));
            expect(reply.reset, shape).toBeUndefined();
            expect(reply.headers[':status'], shape).toBe('200');
            expect(grpcStatus(reply), shape).toMatchObject({ code: 0 });
            target.check(reply.data.subarray(5));
          } finally {
            conn.close();
          }
        }
      });
    }

    it('keeps answering on a connection whose later requests refer to the path through the dynamic table', async () => {
      const sock = sockets.cri!;
      const conn = await RawConnection.open(sock);
      try {
        for (let i = 0; i < 5; i++) {
          // The first block carries literals with incremental indexing; later ones are mostly indexed fields.
          const block = conn.encode(grpcGoHeaders(TARGETS[0]!.path, sock));
          if (i > 0) expect(block.length).toBeLessThan(12);
          const reply = await conn.request(block, grpcMessage(Buffer.alloc(0)));
          expect(grpcStatus(reply)).toMatchObject({ code: 0 });
          TARGETS[0]!.check(reply.data.subarray(5));
        }
        // A header block split over CONTINUATION frames, with a metadata entry too long for one frame.
        const big = [...grpcGoHeaders(TARGETS[0]!.path, sock), ['x-kemu-big', 'b'.repeat(40_000)]] as [string, string][];
        const reply = await conn.request(big, grpcMessage(Buffer.alloc(0)), { continuationAt: 7 });
        expect(grpcStatus(reply)).toMatchObject({ code: 0 });
      } finally {
        conn.close();
      }
    });

    it('lets handlers see the authority the client sent', async () => {
      if (engine !== 'http2') return; // grpc-js reports the :authority node:http2 saw, `localhost`
      const sock = sockets.cri!;
      const conn = await RawConnection.open(sock);
      try {
        hosts.length = 0;
        await conn.request(grpcGoHeaders(TARGETS[0]!.path, sock), grpcMessage(Buffer.alloc(0)));
        expect(hosts).toEqual([sock]);
      } finally {
        conn.close();
      }
    });

    it('answers a PING sent before the first request, and the SETTINGS a waiting client needs', async () => {
      const ping = frame(T.PING, 0, 0, Buffer.from('kemu-png'));
      const conn = await RawConnection.open(sockets.cri!, Buffer.concat([PREFACE, frame(T.SETTINGS, 0, 0), ping]));
      try {
        const until = Date.now() + 5000;
        while (!conn.received.some((f) => f.type === T.PING && f.flags === ACK) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
        expect(conn.received.some((f) => f.type === T.PING && f.flags === ACK)).toBe(true);
        expect(conn.received[0]).toMatchObject({ type: T.SETTINGS, flags: 0 });
        const reply = await conn.request(grpcGoHeaders(TARGETS[0]!.path, sockets.cri!), grpcMessage(Buffer.alloc(0)));
        expect(grpcStatus(reply)).toMatchObject({ code: 0 });
      } finally {
        conn.close();
      }
    });

    describe('still refuses malformed HTTP/2', () => {
      const sockPath = () => sockets.cri!;

      // Each case opens with a well-formed call carrying the path (so the connection is being rewritten) or
      // `localhost` (so it was handed to node:http2 as it is), then sends the malformed request. A client
      // keeps one authority per connection, so the well-formed calls of a connection all carry the first's.
      for (const first of ['path', 'localhost'] as const) {
        const good = () => grpcGoHeaders(TARGETS[0]!.path, first === 'path' ? sockPath() : 'localhost');
        const open = async () => {
          const conn = await RawConnection.open(sockPath());
          const ok = await conn.request(good(), grpcMessage(Buffer.alloc(0)));
          expect(grpcStatus(ok)).toMatchObject({ code: 0 });
          return conn;
        };

        it(`resets a request with a malformed header, and the connection serves on (first call: ${first})`, async () => {
          const conn = await open();
          try {
            const cases: Buffer[] = [
              // :authority holding CR LF: malformed as any header value, not merely a path.
              Buffer.concat(good().filter(([n]) => n !== ':authority').map(([n, v]) => literal(n, v)).concat(literal(':authority', 'a\r\nb'))),
              // An upper-case header name.
              Buffer.concat(good().map(([n, v]) => literal(n, v)).concat(literal('X-Upper', '1'))),
              // No :path.
              Buffer.concat(good().filter(([n]) => n !== ':path').map(([n, v]) => literal(n, v))),
              // A connection-specific header.
              Buffer.concat(good().map(([n, v]) => literal(n, v)).concat(literal('connection', 'keep-alive'))),
            ];
            for (const block of cases) {
              const reply = await conn.request(block, grpcMessage(Buffer.alloc(0)));
              expect(reply.reset).toBe(PROTOCOL_ERROR);
            }
            const after = await conn.request(good(), grpcMessage(Buffer.alloc(0)));
            expect(grpcStatus(after)).toMatchObject({ code: 0 });
          } finally {
            conn.close();
          }
        });

        it(`closes the connection with COMPRESSION_ERROR on a broken header block (first call: ${first})`, async () => {
          const conn = await open();
          try {
            // Indexed field 200: past the static table and the connection's dynamic table.
            conn.write(frame(T.HEADERS, END_HEADERS, 101, Buffer.from([0xff, 0x49])));
            expect(await conn.waitGoaway()).toBe(COMPRESSION_ERROR);
          } finally {
            conn.close();
          }
        });

        it(`closes the connection with FRAME_SIZE_ERROR on a frame over the maximum size (first call: ${first})`, async () => {
          const conn = await open();
          try {
            // Only the header of a DATA frame announcing 16 MiB: refused at once, not waited for.
            const header = Buffer.alloc(9);
            header.writeUIntBE(0xffffff, 0, 3);
            header[3] = T.DATA;
            header.writeUInt32BE(101, 5);
            conn.write(header);
            expect(await conn.waitGoaway()).toBe(FRAME_SIZE_ERROR);
          } finally {
            conn.close();
          }
        });

        it(`closes the connection with PROTOCOL_ERROR on a CONTINUATION without HEADERS (first call: ${first})`, async () => {
          const conn = await open();
          try {
            conn.write(frame(T.CONTINUATION, END_HEADERS, 101, literal('x-a', 'b')));
            expect(await conn.waitGoaway()).toBe(PROTOCOL_ERROR);
          } finally {
            conn.close();
          }
        });
      }

      it('closes a connection whose first request has a broken header block', async () => {
        const conn = await RawConnection.open(sockPath());
        try {
          conn.write(frame(T.HEADERS, END_HEADERS, 1, Buffer.from([0xff, 0x49])));
          expect(await conn.waitGoaway()).toBe(COMPRESSION_ERROR);
        } finally {
          conn.close();
        }
      });

      it('closes a connection that does not start with the HTTP/2 preface', async () => {
        const conn = await RawConnection.open(sockPath(), Buffer.from('POST /runtime.v1.RuntimeService/Version HTTP/1.1\r\nHost: x\r\n\r\n'));
        try {
          expect(await conn.waitClosed()).toBe(true);
        } finally {
          conn.close();
        }
      });
    });

    describe.runIf(canCurl)('curl --http2-prior-knowledge', () => {
      for (const target of TARGETS) {
        it(`${target.name}: answers with Host set to the socket path, its %-encoding or localhost`, async () => {
          const sock = sockets[target.name]!;
          for (const host of [sock, encodeURIComponent(sock), 'localhost']) {
            const out = path.join(dir, `curl-${target.name}.bin`);
            const r = await run(
              'curl',
              [
                '-sS', '--http2-prior-knowledge', '--unix-socket', sock,
                '-H', `Host: ${host}`, '-H', 'content-type: application/grpc', '-H', 'te: trailers',
                '--data-binary', `@-`, '-o', out, '-w', '%{http_code}',
                `http://localhost${target.path}`,
              ],
              grpcMessage(Buffer.alloc(0)),
            );
            expect(r.stderr, host).toBe('');
            expect(r.stdout, host).toBe('200');
            target.check(fs.readFileSync(out).subarray(5));
          }
        });
      }
    });

    describe.runIf(canPython)('Python grpcio with grpc.default_authority', () => {
      for (const target of TARGETS) {
        it(`${target.name}: answers the socket path, its %-encoding and an empty authority`, async () => {
          const sock = sockets[target.name]!;
          for (const authority of [sock, encodeURIComponent(sock), '']) {
            const r = await run(PYTHON, [path.join(here, 'authority_peer.py'), sock, target.path, authority]);
            expect(r.status, r.stderr).toBe(0);
            const out = JSON.parse(r.stdout) as { code: string; reply?: string; details?: string };
            expect(out.code, `${JSON.stringify(authority)}: ${out.details}`).toBe('OK');
            target.check(Buffer.from(out.reply!, 'base64'));
          }
        });
      }
    });
  });
}
