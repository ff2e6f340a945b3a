// Test helpers for registry pulls: a real registry (Debian's docker-registry) on loopback, optionally behind
// bearer-token auth served by a small token issuer here, and busybox images built with umoci and pushed
// with skopeo, as a single manifest and as a two-platform index.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash, createSign, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';

const mkTemp = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

async function waitFor(fn: () => Promise<boolean | undefined>, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const IMAGE_APPLETS = ['sh', 'ls', 'cat', 'echo', 'id', 'sleep', 'touch', 'chmod', 'rm', 'mkdir', 'hostname', 'ps', 'wc', 'nc', 'httpd', 'head', 'true', 'false', 'grep', 'stat', 'mount', 'umask', 'kill', 'env', 'pwd', 'ln', 'swapon', 'unshare', 'top', 'tr', 'dd'];

const run = (cmd: string, args: string[], cwd?: string) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] }).toString();

export interface BuiltImages {
  layout: string;
  /** Tags in the layout: `v1` (this platform, user app, entrypoint + cmd), `arm` (arm64 config), `multi` (an index of both). */
  tags: string[];
}

/**
 * Builds the test images from busybox-static: `app` (uid 1000) is the image's user, the entrypoint is
 * `/bin/sh -c`, the cmd prints who runs it and sleeps, PATH and GREETING are set, /home/app is the workdir.
 */
export function buildBusyboxImages(dir = mkTemp('kemu-cri-images-')): BuiltImages {
  const layout = path.join(dir, 'layout');
  const bundle = path.join(dir, 'bundle');
  run('umoci', ['init', '--layout', layout]);
  run('umoci', ['new', '--image', `${layout}:base`]);
  run('umoci', ['unpack', '--image', `${layout}:base`, bundle]);
  const r = path.join(bundle, 'rootfs');
  for (const d of ['bin', 'etc', 'tmp', 'proc', 'dev', 'sys', 'home/app', 'www', 'data']) fs.mkdirSync(path.join(r, d), { recursive: true });
  fs.chmodSync(path.join(r, 'tmp'), 0o1777);
  fs.chownSync(path.join(r, 'home/app'), 1000, 1000);
  fs.copyFileSync('/bin/busybox', path.join(r, 'bin/busybox'));
  fs.chmodSync(path.join(r, 'bin/busybox'), 0o755);
  for (const a of IMAGE_APPLETS) fs.symlinkSync('busybox', path.join(r, 'bin', a));
  fs.writeFileSync(path.join(r, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n');
  fs.writeFileSync(path.join(r, 'etc/group'), 'root:x:0:\napp:x:1000:\nextra:x:2000:app\n');
  fs.writeFileSync(path.join(r, 'www/index.html'), 'hello from the registry image\n');
  run('umoci', ['repack', '--image', `${layout}:base`, bundle]);
  run('umoci', [
    'config', '--image', `${layout}:base`, '--tag', 'v1',
    '--config.user', 'app', '--config.entrypoint', '/bin/sh', '--config.entrypoint', '-c',
    '--config.cmd', 'echo hello from $(id -un) $GREETING; exec sleep 3600',
    '--config.env', 'PATH=/bin', '--config.env', 'GREETING=hi', '--config.workingdir', '/home/app',
    '--config.exposedports', '8080/tcp',
  ]);
  run('umoci', ['config', '--image', `${layout}:v1`, '--tag', 'arm', '--architecture', 'arm64', '--config.env', 'ARCH=arm64']);
  fs.rmSync(bundle, { recursive: true, force: true });
  // An index of the two platform manifests, tagged `multi`.
  const index = JSON.parse(fs.readFileSync(path.join(layout, 'index.json'), 'utf8')) as { manifests: any[] };
  const byTag = (t: string) => index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === t);
  const plat = (arch: string) => ({ os: 'linux', architecture: arch });
  const inner = JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      { mediaType: byTag('arm').mediaType, digest: byTag('arm').digest, size: byTag('arm').size, platform: plat('arm64') },
      { mediaType: byTag('v1').mediaType, digest: byTag('v1').digest, size: byTag('v1').size, platform: plat('amd64') },
    ],
  });
  const digest = `sha256:${createHash('sha256').update(inner).digest('hex')}`;
  fs.writeFileSync(path.join(layout, 'blobs/sha256', digest.slice(7)), inner);
  index.manifests.push({
    mediaType: 'application/vnd.oci.image.index.v1+json',
    digest,
    size: inner.length,
    annotations: { 'org.opencontainers.image.ref.name': 'multi' },
  });
  fs.writeFileSync(path.join(layout, 'index.json'), JSON.stringify(index));
  return { layout, tags: ['v1', 'arm', 'multi'] };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export interface TestRegistry {
  /** host:port, e.g. 127.0.0.1:40123 */
  host: string;
  /** Credentials the token issuer accepts, when auth is on. */
  user?: string;
  password?: string;
  /** The CA (self-signed certificate) of a TLS registry. */
  caFile?: string;
  /** How many tokens the issuer handed out. */
  tokensIssued(): number;
  /** Pushes with skopeo (asynchronously: the token issuer answers from this process). */
  push(layout: string, tag: string, repo: string, opts?: { all?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

/** Starts docker-registry on loopback; with `auth`, behind bearer tokens from an issuer started here. */
export async function startRegistry(opts: { auth?: boolean; tls?: boolean } = {}): Promise<TestRegistry> {
  const dir = mkTemp('kemu-cri-registry-');
  const port = await freePort();
  let tokenServer: http.Server | undefined;
  let issued = 0;
  const user = 'puller';
  const password = 'sesame';
  let authYaml = '';
  if (opts.auth) {
    const key = path.join(dir, 'token.key');
    const cert = path.join(dir, 'token.crt');
    run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=kemu-test-token']);
    const der = Buffer.from(
      fs.readFileSync(cert, 'utf8').replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''),
      'base64',
    ).toString('base64');
    const pem = fs.readFileSync(key);
    const b64u = (b: Buffer | string) => Buffer.from(b).toString('base64url');
    tokenServer = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      const given = basic ? Buffer.from(basic[1], 'base64').toString('utf8') : '';
      if (given !== `${user}:${password}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"details":"bad credentials"}');
        return;
      }
      const scope = url.searchParams.get('scope') ?? '';
      const [type, name, actions] = scope.split(':');
      const now = Math.floor(Date.now() / 1000);
      const header = b64u(JSON.stringify({ typ: 'JWT', alg: 'RS256', x5c: [der] }));
      const claims = b64u(
        JSON.stringify({
          iss: 'kemu-test-issuer',
          sub: user,
          aud: url.searchParams.get('service'),
          exp: now + 300,
          nbf: now - 10,
          iat: now,
          jti: randomUUID(),
          access: type ? [{ type, name, actions: (actions ?? '').split(',') }] : [],
        }),
      );
      const sig = createSign('RSA-SHA256').update(`${header}.${claims}`).sign(pem).toString('base64url');
      issued++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: `${header}.${claims}.${sig}` }));
    });
    await new Promise<void>((r) => tokenServer!.listen(0, '127.0.0.1', () => r()));
    const tport = (tokenServer.address() as net.AddressInfo).port;
    authYaml = `auth:\n  token:\n    realm: http://127.0.0.1:${tport}/token\n    service: kemu-test-registry\n    issuer: kemu-test-issuer\n    rootcertbundle: ${cert}\n`;
  }
  let tlsYaml = '';
  let caFile: string | undefined;
  if (opts.tls) {
    caFile = path.join(dir, 'registry.crt');
    const key = path.join(dir, 'registry.key');
    run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', caFile, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
    tlsYaml = `  tls:\n    certificate: ${caFile}\n    key: ${key}\n`;
  }
  const config = path.join(dir, 'config.yml');
  fs.writeFileSync(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:${port}\n${tlsYaml}${authYaml}`,
  );
  const proc: ChildProcess = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr?.on('data', (d) => (stderr += d));
  const host = `127.0.0.1:${port}`;
  await waitFor(
    () =>
      new Promise<boolean | undefined>((resolve) => {
        const req = (opts.tls ? https : http).get(`${opts.tls ? 'https' : 'http'}://${host}/v2/`, { rejectUnauthorized: false }, (res) => {
          res.resume();
          resolve(res.statusCode === 200 || res.statusCode === 401 ? true : undefined);
        });
        req.on('error', () => resolve(undefined));
      }),
    10_000,
    () => `docker-registry on ${host} (${stderr})`,
  );
  return {
    host,
    caFile,
    user: opts.auth ? user : undefined,
    password: opts.auth ? password : undefined,
    tokensIssued: () => issued,
    async push(layout, tag, repo, o = {}) {
      const args = ['copy', '--quiet', '--dest-tls-verify=false'];
      if (o.all) args.push('--all');
      if (opts.auth) args.push('--dest-creds', `${user}:${password}`);
      await promisify(execFile)('skopeo', [...args, `oci:${layout}:${tag}`, `docker://${host}/${repo}`], { timeout: 60_000 });
    },
    async stop() {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
      if (tokenServer) await new Promise((r) => tokenServer!.close(r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
