import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectStream, cri, implementService, RpcError, serveUnix, shutdownServer, unaryCall } from '../index';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kemu-proto-'));
const sock = path.join(dir, 'sub', 'cri.sock');
const server = new grpc.Server();
let client: cri.RuntimeServiceClient;

beforeAll(async () => {
  server.addService(
    cri.RuntimeServiceService,
    implementService(cri.RuntimeServiceService, {
      Version: (req) => ({ version: '0.1.0', runtimeName: `kemu:${req.version}`, runtimeApiVersion: 'v1' }),
      async RunPodSandbox(req) {
        if (!req.config?.metadata?.name) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'sandbox metadata.name is required');
        return { podSandboxId: `id-${req.config.metadata.name}` };
      },
      StopPodSandbox() {
        throw new Error('disk on fire');
      },
      async *GetContainerEvents() {
        for (let i = 0; i < 3; i++) yield { containerId: `c${i}`, containerEventType: cri.ContainerEventType.CONTAINER_STARTED_EVENT };
      },
    }),
  );
  await serveUnix(server, sock);
  client = new cri.RuntimeServiceClient(`unix://${sock}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  await shutdownServer(server, 1000);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('serving a generated service on a unix socket', () => {
  it('creates the socket with mode 0660', () => {
    const st = fs.statSync(sock);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o660);
  });

  it('answers unary calls with decoded, defaulted messages', async () => {
    const res = await unaryCall(client, 'Version', { version: 'v1' });
    expect(res).toEqual({ version: '0.1.0', runtimeName: 'kemu:v1', runtimeVersion: '', runtimeApiVersion: 'v1' });
  });

  it('maps RpcError to its status code and message', async () => {
    await expect(unaryCall(client, 'RunPodSandbox', { config: { metadata: {} } })).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'sandbox metadata.name is required',
    });
    await expect(unaryCall(client, 'RunPodSandbox', { config: { metadata: { name: 'a' } } })).resolves.toEqual({
      podSandboxId: 'id-a',
    });
  });

  it('maps an unexpected error to INTERNAL without a stack trace', async () => {
    const err = await unaryCall(client, 'StopPodSandbox', { podSandboxId: 'x' }).catch((e) => e);
    expect(err.code).toBe(grpc.status.INTERNAL);
    expect(err.details).toBe('disk on fire');
    expect(err.details).not.toMatch(/\bat\b.*\.ts/);
  });

  it('answers UNIMPLEMENTED, naming the RPC, for methods without a handler', async () => {
    const err = await unaryCall(client, 'CheckpointContainer', { containerId: 'x' }).catch((e) => e);
    expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(err.details).toContain('CheckpointContainer');
    const streamErr = await collectStream(client.StreamContainers({})).catch((e) => e);
    expect(streamErr.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it('streams the items of an async generator', async () => {
    const items = await collectStream(client.GetContainerEvents({}));
    expect(items.map((i) => i.containerId)).toEqual(['c0', 'c1', 'c2']);
    expect(items[0].containerEventType).toBe(cri.ContainerEventType.CONTAINER_STARTED_EVENT);
  });

  it('replaces a stale socket but refuses to delete a regular file', async () => {
    // A process that exits without closing its listener leaves its socket file behind.
    const stale = path.join(dir, 'stale.sock');
    const script = `require('node:net').createServer().listen(${JSON.stringify(stale)}, () => process.exit(0))`;
    expect(spawnSync(process.execPath, ['-e', script]).status).toBe(0);
    expect(fs.statSync(stale).isSocket()).toBe(true);
    const again = new grpc.Server();
    await expect(serveUnix(again, stale)).resolves.toBeUndefined();
    again.forceShutdown();
    const regular = path.join(dir, 'regular');
    fs.writeFileSync(regular, 'keep me');
    await expect(serveUnix(new grpc.Server(), regular)).rejects.toThrow(/not a socket/);
    expect(fs.readFileSync(regular, 'utf8')).toBe('keep me');
  });
});
