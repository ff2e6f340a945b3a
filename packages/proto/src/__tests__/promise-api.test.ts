import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { cri, csi, implementService, inProcessApi, promiseClient, RpcError, serveUnix, shutdownServer } from '../index';

const handlers: cri.ImageServiceHandlers = {
  PullImage: (req) => {
    if (!req.image?.image) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'image is required');
    return { imageRef: `sha256:${req.image.image.length}` };
  },
  ImageStatus: (req) => ({ image: req.image?.image === 'busybox' ? { id: 'sha256:1', size: 42 } : null }),
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-promise-'));
const sock = path.join(dir, 'img.sock');
const server = new grpc.Server();
server.addService(cri.ImageServiceService, implementService(cri.ImageServiceService, handlers));
const ready = serveUnix(server, sock);

afterAll(async () => {
  await shutdownServer(server, 500);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe.each([
  ['in process', async () => inProcessApi(cri.ImageServiceService, handlers)],
  [
    'over the socket',
    async () => {
      await ready;
      return promiseClient(cri.ImageServiceService, new cri.ImageServiceClient(`unix://${sock}`, grpc.credentials.createInsecure()));
    },
  ],
])('promise API %s', (_name, make) => {
  it('returns decoded responses with proto3 defaults', async () => {
    const api = await make();
    expect(await api.PullImage({ image: { image: 'nginx' } })).toEqual({ imageRef: 'sha256:5' });
    const status = await api.ImageStatus({ image: { image: 'busybox' } });
    expect(status.image).toMatchObject({ id: 'sha256:1', size: 42, repoTags: [], username: '' });
    expect((await api.ImageStatus({ image: { image: 'nope' } })).image).toBeNull();
  });

  it('rejects with the handler status code and message', async () => {
    const api = await make();
    await expect(api.PullImage({})).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: 'image is required' });
    await expect(api.RemoveImage({ image: { image: 'x' } })).rejects.toMatchObject({ code: grpc.status.UNIMPLEMENTED });
  });
});

describe('inProcessApi', () => {
  it('never shares objects between caller and handler', async () => {
    let seen: csi.NodeGetInfoRequest | undefined;
    const api = inProcessApi(csi.NodeService, { NodeGetInfo: (req) => ((seen = req), { nodeId: 'n1', maxVolumesPerNode: 3 }) });
    const req = {};
    const res = await api.NodeGetInfo(req);
    expect(seen).not.toBe(req);
    expect(res).toEqual({ nodeId: 'n1', maxVolumesPerNode: 3, accessibleTopology: null });
  });
});
