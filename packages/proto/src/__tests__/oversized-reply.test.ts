// A reply larger than the client's receive limit fails that one call (RESOURCE_EXHAUSTED) and nothing else:
// the client resets the stream, and every later call on the same connection is answered. node:http2 used
// to keep counting the dropped reply's bytes against the session's memory, so after ~10 MB of them the
// http2 engine refused every new stream ("Bandwidth exhausted or memory limit exceeded").
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cri, type GrpcClientEngine, type GrpcEngine, type GrpcServer, grpc, implementService, openChannel, serveUnix, shutdownServer } from '../index';

// About 6 MB: over the 4 MiB both clients accept by default, and two of them over node:http2's 10 MB.
const SANDBOXES = 60_000;

for (const engine of ['http2', 'grpc-js'] as GrpcEngine[]) {
  describe(`an oversized reply, ${engine} engine`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kemu-oversized-${engine}-`));
    const sock = path.join(dir, 'cri.sock');
    let server: GrpcServer;

    beforeAll(async () => {
      server = await serveUnix(
        [
          [
            cri.RuntimeServiceService,
            implementService(cri.RuntimeServiceService, {
              Version: () => ({ version: '0.1.0', runtimeName: 'kemu' }),
              ListPodSandbox: () => ({
                items: Array.from({ length: SANDBOXES }, (_, i) => ({
                  id: `${i}`.padStart(64, '0'),
                  metadata: { name: 'sandbox', uid: 'uid', namespace: 'default' },
                })),
              }),
            }),
          ],
        ],
        sock,
        { engine },
      );
    });

    afterAll(async () => {
      await shutdownServer(server, 1000);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    for (const client of ['grpc-js', 'http2'] as GrpcClientEngine[]) {
      it(`fails only its own call; later calls on the connection succeed (${client} client)`, async () => {
        const channel = openChannel(`unix://${sock}`, { client });
        try {
          const runtime = channel.service(cri.RuntimeServiceService);
          for (let round = 0; round < 3; round++) {
            const err = await runtime.ListPodSandbox({}).catch((e) => e);
            expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
            expect(err.details).toMatch(/larger than max/);
            for (let i = 0; i < 3; i++) await expect(runtime.Version({ version: 'v1' })).resolves.toMatchObject({ runtimeName: 'kemu' });
          }
        } finally {
          channel.close();
        }
      });
    }
  });
}
