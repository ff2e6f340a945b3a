// The streaming server with the sim backend: channel protocol variants, exit status, stdin, attach,
// port-forward framing, single-use URLs, and refusing plain HTTP and unknown upgrades (SPDY has its own test file).
import http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import type { cri } from '@kemu/proto';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcError, startCatPod, type TestShim, wsStream } from './test-util.js';

let shim: TestShim;
let pod: string;
let cid: string;

beforeAll(async () => {
  ({ shim, pod, cid } = await startCatPod('streamer'));
});

afterAll(async () => {
  await shim?.close();
});

const exec = (req: Partial<cri.ExecRequest>) => shim.call('Exec', { containerId: cid, stdout: true, stderr: true, ...req });

describe('exec over WebSocket', () => {
  for (const protocol of ['v5.channel.k8s.io', 'v4.channel.k8s.io', 'v4.base64.channel.k8s.io']) {
    it(`runs a command with ${protocol} and reports the exit status`, async () => {
      const { url } = await exec({ cmd: ['hostname'] });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/exec\/[\w-]+$/);
      const r = await wsStream(url!, protocol);
      expect(r.protocol).toBe(protocol);
      expect(r.stdout).toBe('streamer\n');
      expect(JSON.parse(r.error)).toEqual({ metadata: {}, status: 'Success' });
      // The first frame is the empty "stream established" frame on stdout.
      expect(r.frames[0]).toEqual({ channel: 1, data: Buffer.alloc(0) });
    });
  }

  it('reports a non-zero exit code as a Status with an ExitCode cause', async () => {
    const { url } = await exec({ cmd: ['sh', '-c', 'exit 3'] });
    const r = await wsStream(url!, 'v4.channel.k8s.io');
    expect(JSON.parse(r.error)).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
  });

  it('speaks the unversioned channel.k8s.io protocol with a plain error string', async () => {
    const { url } = await exec({ cmd: ['false'] });
    const r = await wsStream(url!, 'channel.k8s.io');
    // Kubelet's v1 status writer: the Status message, as plain text.
    expect(r.error).toBe('command terminated with non-zero exit code: error executing command ["false"], exit code 1');
  });

  it('feeds stdin and closes it with the v5 close frame', async () => {
    const { url } = await exec({ cmd: ['cat'], stdin: true, stderr: false });
    const r = await wsStream(url!, 'v5.channel.k8s.io', 'typed input\n', true);
    expect(r.stdout).toBe('typed input\n');
    expect(JSON.parse(r.error).status).toBe('Success');
  });

  it('validates requests and serves each URL once', async () => {
    expect((await grpcError(exec({ cmd: [] }))).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await grpcError(exec({ cmd: ['x'], stdout: false, stderr: false }))).code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await grpcError(exec({ cmd: ['x'], tty: true }))).details).toBe('tty and stderr cannot both be true');
    expect((await grpcError(shim.call('Exec', { containerId: 'f'.repeat(64), cmd: ['x'], stdout: true }))).code).toBe(grpc.status.NOT_FOUND);
    const { url } = await exec({ cmd: ['true'] });
    await wsStream(url!, 'v4.channel.k8s.io');
    await expect(wsStream(url!, 'v4.channel.k8s.io')).rejects.toMatchObject({ statusCode: 404 });
    await expect(wsStream(`${url!.replace(/\/exec\/.*/, '/exec/forged-token')}`, 'v4.channel.k8s.io')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('refuses a SPDY upgrade without a sub-protocol, and plain HTTP, with a clear message', async () => {
    const { url } = await exec({ cmd: ['true'] });
    const u = new URL(url!);
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1' } });
      req.on('upgrade', () => reject(new Error('unexpected upgrade')));
      req.on('response', (r) => {
        let body = '';
        r.on('data', (d) => {
          body += d;
        });
        // A refused upgrade ends with the connection, which may close before 'end' is emitted.
        r.on('end', () => resolve({ status: r.statusCode!, body }));
        r.on('close', () => resolve({ status: r.statusCode!, body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(res.status).toBe(400);
    expect(res.body).toBe('unable to upgrade: X-Stream-Protocol-Version is required\n');
    const plain = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      http
        .get({ host: u.hostname, port: u.port, path: u.pathname }, (r) => {
          let body = '';
          r.on('data', (d) => {
            body += d;
          });
          r.on('end', () => resolve({ status: r.statusCode!, body }));
        })
        .on('error', reject);
    });
    expect(plain.status).toBe(400);
    expect(plain.body).toContain('needs a connection upgrade');
  });
});

describe('attach and port-forward', () => {
  it('attaches to the container and echoes stdin for a cat-like simulated container', async () => {
    const { url } = await shim.call('Attach', { containerId: cid, stdin: true, stdout: true });
    const out = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(url!.replace(/^http/, 'ws'), 'v4.channel.k8s.io');
      let got = '';
      ws.on('open', () => ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('ping\n')])));
      ws.on('message', (raw: Buffer) => {
        if (raw[0] === 1) got += raw.subarray(1).toString();
        if (got.includes('ping\n')) ws.close();
      });
      ws.on('close', () => resolve(got));
      ws.on('error', reject);
    });
    expect(out).toBe('ping\n');
    expect((await shim.call('ContainerStatus', { containerId: cid })).status!.state).toBe(1);
  });

  it('forwards a port with the port number as the first frame of each channel', async () => {
    const { url } = await shim.call('PortForward', { podSandboxId: pod, port: [8080] });
    const frames = await new Promise<Buffer[]>((resolve, reject) => {
      const ws = new WebSocket(`${url!.replace(/^http/, 'ws')}?port=8080`, 'v4.channel.k8s.io');
      const got: Buffer[] = [];
      ws.on('message', (raw: Buffer) => {
        got.push(raw);
        if (got.length === 2) ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('echo me')]));
        if (got.length === 3) ws.close();
      });
      ws.on('close', () => resolve(got));
      ws.on('error', reject);
    });
    expect(frames[0]).toEqual(Buffer.from([0, 0x90, 0x1f]));
    expect(frames[1]).toEqual(Buffer.from([1, 0x90, 0x1f]));
    expect(frames[2]).toEqual(Buffer.concat([Buffer.from([0]), Buffer.from('echo me')]));
  });

  it('reports a closed port on the error channel and rejects ports outside the request', async () => {
    const { url } = await shim.call('PortForward', { podSandboxId: pod, port: [9999] });
    const err = await new Promise<string>((resolve, reject) => {
      const ws = new WebSocket(`${url!.replace(/^http/, 'ws')}?port=9999`, 'v4.channel.k8s.io');
      let e = '';
      ws.on('message', (raw: Buffer) => {
        if (raw[0] === 1 && raw.length > 3) {
          e = raw.subarray(1).toString();
          ws.close();
        }
      });
      ws.on('close', () => resolve(e));
      ws.on('error', reject);
    });
    expect(err).toContain('nothing listens on port 9999');
    const { url: url2 } = await shim.call('PortForward', { podSandboxId: pod, port: [8080] });
    const r = await wsStream(`${url2}?port=22`, 'v4.channel.k8s.io');
    expect(r.stdout).toContain('invalid port list');
    expect((await grpcError(shim.call('PortForward', { podSandboxId: pod, port: [70000] }))).code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});
