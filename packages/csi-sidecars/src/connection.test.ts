// The socket connection's contract, on both gRPC clients: calls fail UNAVAILABLE while the driver's socket
// is absent and work once it appears; driver errors keep their gRPC code and details.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { csi, grpc, type GrpcClientEngine, implementService, RpcError, serveUnix, shutdownServer } from '@kemu/proto';
import { afterAll, describe, expect, it } from 'vitest';
import { connectCsiSocket, describeError, grpcCode, isFinalError } from './connection';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-sidecar-conn-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe.each(['http2', 'grpc-js'] as GrpcClientEngine[])('connectCsiSocket on the %s client', (client) => {
  it('fails UNAVAILABLE while the socket is absent, then reaches the driver on all three services', async () => {
    const sock = path.join(dir, `${client}.sock`);
    const conn = connectCsiSocket(`unix://${sock}`, { client, maxReconnectBackoffMs: 200 });
    const server = { current: undefined as Awaited<ReturnType<typeof serveUnix>> | undefined };
    try {
      const early = await conn.identity.Probe({}).catch((e) => e);
      expect(grpcCode(early)).toBe(grpc.status.UNAVAILABLE);
      expect(isFinalError(early)).toBe(false);
      server.current = await serveUnix(
        [
          [csi.IdentityService, implementService(csi.IdentityService, { GetPluginInfo: () => ({ name: 'kemu.test' }), Probe: () => ({}) })],
          [
            csi.ControllerService,
            implementService(csi.ControllerService, {
              DeleteVolume: () => {
                throw new RpcError(grpc.status.FAILED_PRECONDITION, 'volume “v1” is still published');
              },
            }),
          ],
          [csi.NodeService, implementService(csi.NodeService, { NodeGetInfo: () => ({ nodeId: 'n1' }) })],
        ],
        sock,
        { engine: 'http2' },
      );
      const deadline = Date.now() + 5000;
      let info;
      for (;;) {
        info = await conn.identity.GetPluginInfo({}, { timeoutMs: 1000 }).catch((e) => e);
        if (!(info instanceof Error)) break;
        expect(grpcCode(info)).toBe(grpc.status.UNAVAILABLE);
        if (Date.now() > deadline) throw info;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(info.name).toBe('kemu.test');
      expect((await conn.node.NodeGetInfo({})).nodeId).toBe('n1');
      const err = await conn.controller.DeleteVolume({ volumeId: 'v1' }).catch((e) => e);
      expect(grpcCode(err)).toBe(grpc.status.FAILED_PRECONDITION);
      expect(describeError(err)).toBe('rpc error: code = FailedPrecondition desc = volume “v1” is still published');
      expect(isFinalError(err)).toBe(true);
    } finally {
      conn.close();
      if (server.current) await shutdownServer(server.current, 500);
    }
  });
});
