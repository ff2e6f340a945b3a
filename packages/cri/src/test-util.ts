// Helpers for this package's tests: a shim on a temporary socket and typed promise clients for it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { cri, unaryCall } from '@kemu/proto';
import WebSocket from 'ws';
import { type CriRuntimeConfig, type CriServer, startCriServer } from './server.js';

export interface TestShim {
  server: CriServer;
  dir: string;
  stateDir: string;
  socket: string;
  rt: cri.RuntimeServiceClient;
  img: cri.ImageServiceClient;
  call<K extends keyof cri.RuntimeServiceMethods & string>(
    method: K,
    req: cri.RuntimeServiceMethods[K]['request'],
  ): Promise<cri.RuntimeServiceMethods[K]['response']>;
  icall<K extends keyof cri.ImageServiceMethods & string>(
    method: K,
    req: cri.ImageServiceMethods[K]['request'],
  ): Promise<cri.ImageServiceMethods[K]['response']>;
  restart(overrides?: Partial<CriRuntimeConfig>): Promise<void>;
  close(): Promise<void>;
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export async function startTestShim(cfg: Partial<CriRuntimeConfig> = {}, dir = tempDir('kemu-cri-test-')): Promise<TestShim> {
  const socket = path.join(dir, 'cri.sock');
  const stateDir = cfg.stateDir ?? path.join(dir, 'state');
  let current: CriRuntimeConfig & { listen: string } = {
    backend: 'sim',
    syntheticImages: true,
    stateDir,
    allowedLogRoots: [dir, '/tmp'],
    ...cfg,
    listen: `unix://${socket}`,
  };
  const shim: TestShim = {
    server: await startCriServer(current),
    dir,
    stateDir,
    socket,
    rt: new cri.RuntimeServiceClient(`unix://${socket}`, grpc.credentials.createInsecure()),
    img: new cri.ImageServiceClient(`unix://${socket}`, grpc.credentials.createInsecure()),
    call: (method, req) => unaryCall(shim.rt, method, req as never) as never,
    icall: (method, req) => unaryCall(shim.img, method, req as never) as never,
    async restart(overrides = {}) {
      await shim.server.close();
      current = { ...current, ...overrides };
      shim.server = await startCriServer(current);
    },
    async close() {
      shim.rt.close();
      shim.img.close();
      await shim.server.close();
    },
  };
  return shim;
}

/** Resolves with the gRPC error a call fails with (and fails the test if it succeeds). */
export async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error('expected the call to fail');
}

let seq = 0;
export function podConfig(dir: string, over: Partial<cri.PodSandboxConfig> = {}): cri.PodSandboxConfig {
  seq++;
  const name = `pod-${process.pid}-${seq}`;
  return {
    metadata: { name, namespace: 'default', uid: `uid-${process.pid}-${seq}`, attempt: 0 },
    hostname: name,
    logDirectory: path.join(dir, 'logs', name),
    labels: { app: 'test' },
    annotations: {},
    ...over,
  };
}

export function containerConfig(over: Partial<cri.ContainerConfig> = {}): cri.ContainerConfig {
  return {
    metadata: { name: 'c', attempt: 0 },
    image: { image: 'docker.io/library/busybox:1.36' },
    command: ['sleep', '3600'],
    logPath: 'c/0.log',
    labels: { tier: 'x' },
    ...over,
  };
}

export interface WsResult {
  stdout: string;
  stderr: string;
  error: string;
  protocol: string;
  frames: { channel: number; data: Buffer }[];
}

/** A minimal client of the channel protocol: optional stdin, collects every channel until close. */
export function wsStream(url: string, protocol: string | string[], stdin?: Buffer | string, closeStdin = false): Promise<WsResult> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), protocol);
    const res: WsResult = { stdout: '', stderr: '', error: '', protocol: '', frames: [] };
    const b64 = () => ws.protocol.includes('base64');
    ws.on('open', () => {
      res.protocol = ws.protocol;
      if (stdin !== undefined) {
        const data = Buffer.from(stdin);
        if (b64()) ws.send(`0${data.toString('base64')}`);
        else ws.send(Buffer.concat([Buffer.from([0]), data]));
      }
      if (closeStdin) ws.send(Buffer.from([255, 0]));
    });
    ws.on('message', (raw: Buffer, isBinary) => {
      let channel: number;
      let data: Buffer;
      if (b64() || !isBinary) {
        const s = raw.toString();
        channel = s.charCodeAt(0) - 48;
        data = Buffer.from(s.slice(1), 'base64');
      } else {
        channel = raw[0];
        data = raw.subarray(1);
      }
      res.frames.push({ channel, data });
      if (channel === 1) res.stdout += data.toString();
      if (channel === 2) res.stderr += data.toString();
      if (channel === 3) res.error += data.toString();
    });
    ws.on('close', () => resolve(res));
    ws.on('error', reject);
    ws.on('unexpected-response', (_req, resp) => {
      let body = '';
      resp.on('data', (d: Buffer) => {
        body += d;
      });
      resp.on('end', () => reject(Object.assign(new Error(`HTTP ${resp.statusCode}: ${body.trim()}`), { statusCode: resp.statusCode })));
    });
  });
}

export async function waitFor<T>(fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
