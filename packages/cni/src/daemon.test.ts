// The daemon hand-over as a plugin executable sees it: an executable built like the shipped ones (launcher
// + CommonJS bundle) and a daemon serving a plugin of the same name. The two copies of the plugin differ
// in one field of their result, so every test knows which one answered.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CniDaemon, serveCniDaemon } from './daemon.js';
import { CniError, CniErrorCode } from './errors.js';
import type { CniPlugin } from './skeleton.js';

const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, '..', '..', '..', 'node_modules', '.cache', 'kemu-daemon-test', String(process.pid));
const socketPath = join(dir, 'run', 'cni.sock');

/** A plugin that reports who ran it (`dns.domain`) and echoes the network name; `fail` makes it fail. */
function echoPlugin(where: string): CniPlugin {
  return {
    name: 'kemu-echo',
    async add(ctx) {
      if ((ctx.conf as { fail?: boolean }).fail) throw new CniError(CniErrorCode.InvalidNetworkConfig, 'fail was asked for');
      return { cniVersion: ctx.version, ips: [], dns: { domain: where, search: [ctx.conf.name] } } as never;
    },
    async del() {},
  };
}

beforeAll(async () => {
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'plugin.ts'),
    [
      `import { main } from ${JSON.stringify(join(here, 'plugin-main.ts'))};`,
      `import { CniError } from ${JSON.stringify(join(here, 'errors.ts'))};`,
      `const plugin = { name: 'kemu-echo', async add(ctx) { if (ctx.conf.fail) throw new CniError(7, 'fail was asked for'); return { cniVersion: ctx.version, ips: [], dns: { domain: 'local', search: [ctx.conf.name] } }; }, async del() {} };`,
      'void main(plugin);',
    ].join('\n'),
  );
  await esbuild.build({
    entryPoints: [join(dir, 'plugin.ts')],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['koffi', 'netlink'],
    define: { 'import.meta.url': '__url' },
    banner: { js: "const __url = require('node:url').pathToFileURL(__filename).href;" },
    outfile: join(dir, 'main.cjs'),
    logLevel: 'silent',
  });
  writeFileSync(
    join(dir, 'bin.ts'),
    `import { launchPlugin } from ${JSON.stringify(join(here, 'launcher.ts'))};\nlaunchPlugin('kemu-echo', new URL('./main.cjs', import.meta.url));\n`,
  );
  await esbuild.build({ entryPoints: [join(dir, 'bin.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: join(dir, 'bin.mjs'), logLevel: 'silent' });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Execs the plugin asynchronously: the daemon answering it lives in this process. */
async function run(command: string, conf: Record<string, unknown>, daemonSetting: string, transport = '') {
  const child = spawn(process.execPath, [join(dir, 'bin.mjs')], {
    env: {
      PATH: process.env.PATH,
      CNI_COMMAND: command,
      CNI_CONTAINERID: 'c1',
      CNI_NETNS: '/proc/self/ns/net',
      CNI_IFNAME: 'eth0',
      CNI_PATH: dir,
      KEMU_CNI_DAEMON: daemonSetting,
      KEMU_CNI_DAEMON_TRANSPORT: transport,
    },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  child.stdin.end(JSON.stringify({ cniVersion: '1.0.0', name: 'n1', type: 'kemu-echo', ...conf }));
  const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const stdout = Buffer.concat(out).toString('utf8');
  let json: any;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { status, stdout, stderr: Buffer.concat(err).toString('utf8'), json };
}

/** Sends raw bytes to the socket and returns what comes back. */
function raw(bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socketPath);
    const out: Buffer[] = [];
    c.on('connect', () => c.end(bytes));
    c.on('data', (b) => out.push(b));
    c.on('error', reject);
    c.on('close', () => resolve(Buffer.concat(out).toString('utf8')));
  });
}

describe('kemu-cni daemon hand-over', () => {
  let daemon: CniDaemon;
  const calls: { handled: boolean; reason?: string }[] = [];
  beforeAll(async () => {
    daemon = await serveCniDaemon({
      socketPath,
      plugins: [echoPlugin('daemon')],
      datapath: async () => {
        throw new Error('no datapath in this test');
      },
      onRequest: (r) => calls.push(r),
    });
  });
  afterAll(() => daemon.close());

  it('creates the socket 0600 and refuses a second daemon on it', async () => {
    expect(statSync(socketPath).mode & 0o777).toBe(0o600);
    await expect(serveCniDaemon({ socketPath, plugins: [] })).rejects.toThrow(/another daemon is serving/);
    const file = join(dir, 'not-a-socket');
    writeFileSync(file, '');
    await expect(serveCniDaemon({ socketPath: file, plugins: [] })).rejects.toThrow(/is not a socket/);
  });

  it.each(['pipe', 'net'])('a plugin started while the daemon runs prints the daemon answer (%s); VERSION stays local', async (transport) => {
    const before = daemon.served;
    const r = await run('ADD', { name: 'net-a' }, socketPath, transport);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.json.dns).toEqual({ domain: 'daemon', search: ['net-a'] });
    const v = await run('VERSION', {}, socketPath);
    expect(v.status).toBe(0);
    expect(v.json.supportedVersions).toContain('1.1.0');
    expect(daemon.served).toBe(before + 1);
  });

  it('the daemon plugin error reaches the caller unchanged', async () => {
    const r = await run('ADD', { fail: true }, socketPath);
    expect(r.status).toBe(1);
    expect(r.json).toMatchObject({ code: 7, msg: 'fail was asked for' });
    expect(r.stderr).toBe('');
  });

  it.each(['pipe', 'net'])('runs locally with KEMU_CNI_DAEMON=off, without a socket, and with a socket nobody listens on (%s)', async (transport) => {
    expect((await run('ADD', {}, 'off')).json.dns.domain).toBe('local');
    expect((await run('ADD', {}, join(dir, 'absent.sock'), transport)).json.dns.domain).toBe('local');
    // A socket file left by a daemon that was killed.
    const stale = join(dir, `stale-${transport}.sock`);
    const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(stale)}, () => console.log('up'))`]);
    await new Promise((r) => child.stdout.once('data', r));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    expect(statSync(stale).isSocket()).toBe(true);
    const r = await run('ADD', { name: 'net-s' }, stale, transport);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json.dns).toEqual({ domain: 'local', search: ['net-s'] });
  });

  it.each(['pipe', 'net'])('a declined call runs locally with the same stdin (%s)', async (transport) => {
    const other = await serveCniDaemon({
      socketPath: join(dir, `other-${transport}.sock`),
      plugins: [{ ...echoPlugin('other'), name: 'kemu-other' }],
    });
    try {
      const r = await run('ADD', { name: 'net-d' }, other.socketPath, transport);
      expect(r.status, r.stderr).toBe(0);
      expect(r.json.dns).toEqual({ domain: 'local', search: ['net-d'] });
      expect(other.served).toBe(1);
    } finally {
      await other.close();
    }
  });

  it.each(['pipe', 'net'])('a daemon that takes the call and goes away gives "try again later", not a second run (%s)', async (transport) => {
    const sock = join(dir, `vanishing-${transport}.sock`);
    const server = net.createServer({ allowHalfOpen: true }, (c) => c.on('data', () => c.destroy()));
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      const r = await run('ADD', {}, sock, transport);
      expect(r.status).toBe(1);
      expect(r.json).toMatchObject({ code: 11 });
      expect(r.json.msg).toMatch(/closed the connection before answering/);
    } finally {
      server.close();
    }
  });

  it('answers malformed and impersonating requests with a reason and keeps serving', async () => {
    expect(JSON.parse(await raw('not json\n'))).toEqual({ handled: false, reason: 'request is not JSON' });
    expect(JSON.parse(await raw('{"v":2}\n')).reason).toMatch(/protocol version 2/);
    expect(JSON.parse(await raw('{"v":1,"plugin":"kemu-echo","env":{"A":1},"stdin":"","pid":1,"net":"","mnt":""}\n')).reason).toBe(
      'malformed request',
    );
    expect(JSON.parse(await raw(Buffer.alloc(1100 * 1024, 0x61))).reason).toMatch(/larger than/);
    // Claims to be another process: its namespaces do not match.
    const lie = { v: 1, plugin: 'kemu-echo', env: { CNI_COMMAND: 'ADD' }, stdin: '{}', pid: process.pid, net: '0:1', mnt: '0:1', views: {} };
    expect(JSON.parse(await raw(`${JSON.stringify(lie)}\n`))).toEqual({ handled: false, reason: 'the caller is not who it says it is' });
    const gone = { ...lie, pid: 2 ** 30 };
    expect(JSON.parse(await raw(`${JSON.stringify(gone)}\n`)).reason).toMatch(/is gone/);
    expect((await run('ADD', {}, socketPath)).json.dns.domain).toBe('daemon');
    expect(calls.filter((c) => !c.handled).length).toBeGreaterThanOrEqual(5);
  });
});
