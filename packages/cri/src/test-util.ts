// Helpers for this package's tests: a shim on a temporary socket and typed promise clients for it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { cri, unaryCall } from '@kemu/proto';
import { probe } from '@kemu/test-peers';
import { afterAll } from 'vitest';
import WebSocket from 'ws';
import { ptyAvailable } from './pty.js';
import { type CriRuntimeConfig, type CriServer, startCriServer } from './server.js';

/** node-pty, for tty exec/attach: optional, and its install compiles a native addon. */
export const nodePty = probe(
  'node-pty',
  "the optional npm dependency node-pty, which npm ci builds with build-essential, python3 and Node's headers",
  ptyAvailable,
);

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

const created: string[] = [];
// Temporary directories go after the last hook of the test file that made them (shims are closed by then).
afterAll(() => {
  for (const d of created.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

export function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  created.push(d);
  return d;
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
/** A sim-backend shim with one running container reading stdin (`cat`) that listens on 8080 in the pod. */
export async function startCatPod(hostname: string): Promise<{ shim: TestShim; pod: string; cid: string }> {
  const shim = await startTestShim();
  await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
  const config = podConfig(shim.dir, { hostname });
  const pod = (await shim.call('RunPodSandbox', { config })).podSandboxId!;
  const cid = (
    await shim.call('CreateContainer', {
      podSandboxId: pod,
      config: containerConfig({ command: ['cat'], stdin: true, annotations: { 'kemu.io/sim-listen': '8080' } }),
      sandboxConfig: config,
    })
  ).containerId!;
  await shim.call('StartContainer', { containerId: cid });
  return { shim, pod, cid };
}

/**
 * A process-backend shim with a loopback-only network (the pod is reachable from the host only through
 * port-forward) and one running container serving a TCP echo on 127.0.0.1:`port` inside the pod.
 */
export async function startEchoPod(
  netnsPrefix: string,
  port: number,
): Promise<{ shim: TestShim; pod: { id: string; config: cri.PodSandboxConfig }; cid: string; dir: string }> {
  const dir = tempDir(`kemu-cri-${netnsPrefix}`);
  const confDir = path.join(dir, 'net.d');
  fs.mkdirSync(confDir);
  fs.writeFileSync(
    path.join(confDir, '10-lo.conflist'),
    JSON.stringify({ cniVersion: '1.0.0', name: 'lo-only', plugins: [{ type: 'loopback' }] }),
  );
  const shim = await startTestShim(
    {
      backend: 'process',
      syntheticImages: true,
      cni: { confDir, binDirs: ['/usr/lib/cni'], cacheDir: path.join(dir, 'cni-cache') },
      process: { netnsPrefix: `${netnsPrefix}${process.pid}-` },
    },
    dir,
  );
  await shim.icall('PullImage', { image: { image: 'busybox:1.36' } });
  const config = podConfig(dir);
  const pod = { id: (await shim.call('RunPodSandbox', { config })).podSandboxId!, config };
  const echo = `require('node:net').createServer((s) => s.pipe(s)).listen(${port}, '127.0.0.1')`;
  const cid = (
    await shim.call('CreateContainer', {
      podSandboxId: pod.id,
      config: containerConfig({ image: { image: 'busybox:1.36' }, command: [process.execPath, '-e', echo] }),
      sandboxConfig: config,
    })
  ).containerId!;
  await shim.call('StartContainer', { containerId: cid });
  // Listening once the port shows in the pod's /proc/net/tcp.
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  await waitFor(async () => {
    const r = await shim.call('ExecSync', { containerId: cid, cmd: ['sh', '-c', `grep -qi ':${hexPort} ' /proc/net/tcp`], timeout: 5 });
    return r.exitCode === 0 || undefined;
  });
  return { shim, pod, cid, dir };
}

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

const BUSYBOX_APPLETS = ['sh', 'echo', 'cat', 'sleep', 'hostname', 'id', 'env', 'ls', 'httpd', 'nc', 'ip', 'ps', 'true', 'false', 'wc', 'head', 'mkdir', 'touch', 'printf', 'kill'];

/**
 * Builds a real OCI image layout (gzip layer, config, manifest, index) holding a static busybox, so
 * the process backend can run containers in an image root filesystem with no registry.
 */
export async function buildBusyboxLayout(dest: string, ref: string, user?: string): Promise<{ configDigest: string; manifestDigest: string }> {
  const { createHash } = await import('node:crypto');
  const zlib = await import('node:zlib');
  const tar = await import('tar');
  const rootfs = tempDir('kemu-cri-rootfs-');
  fs.mkdirSync(path.join(rootfs, 'bin'));
  fs.copyFileSync('/bin/busybox', path.join(rootfs, 'bin/busybox'));
  fs.chmodSync(path.join(rootfs, 'bin/busybox'), 0o755);
  for (const a of BUSYBOX_APPLETS) fs.symlinkSync('busybox', path.join(rootfs, 'bin', a));
  for (const d of ['etc', 'proc', 'dev', 'tmp', 'www']) fs.mkdirSync(path.join(rootfs, d));
  fs.writeFileSync(path.join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
  fs.writeFileSync(path.join(rootfs, 'www/index.html'), 'hello from the image\n');
  const tarFile = path.join(rootfs, '..', `${path.basename(rootfs)}.tar`);
  await tar.c({ cwd: rootfs, file: tarFile, portable: true }, ['.']);
  const raw = fs.readFileSync(tarFile);
  const gz = zlib.gzipSync(raw);
  fs.rmSync(tarFile);
  fs.rmSync(rootfs, { recursive: true, force: true });
  const sha = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
  const config = JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    config: { Env: ['PATH=/bin', 'FROM_IMAGE=yes'], Cmd: ['sh'], WorkingDir: '/', ...(user ? { User: user } : {}) },
    rootfs: { type: 'layers', diff_ids: [sha(raw)] },
  });
  const manifest = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha(config), size: config.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: sha(gz), size: gz.length }],
  });
  const blobs = path.join(dest, 'blobs', 'sha256');
  fs.mkdirSync(blobs, { recursive: true });
  for (const b of [config, manifest, gz]) fs.writeFileSync(path.join(blobs, sha(b).slice(7)), b);
  fs.writeFileSync(path.join(dest, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  fs.writeFileSync(
    path.join(dest, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: sha(manifest),
          size: manifest.length,
          annotations: { 'org.opencontainers.image.ref.name': ref },
        },
      ],
    }),
  );
  return { configDigest: sha(config), manifestDigest: sha(manifest) };
}
