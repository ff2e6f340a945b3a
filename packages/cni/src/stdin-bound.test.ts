import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CniError } from './errors.js';
import { execPlugin } from './invoke-exec.js';
import { buildPluginBins, buildPluginLaunchers } from './testing.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-stdin-'));
let bin = '';
let launchers = '';
let daemon: Server;
const socket = join(tmp, 'daemon.sock');
beforeAll(async () => {
  bin = await buildPluginBins(join(tmp, 'bin'), ['loopback']);
  launchers = await buildPluginLaunchers(join(tmp, 'launchers'), ['loopback']);
  // A daemon socket makes the launcher read stdin itself; this one never answers (it must not be reached).
  daemon = createServer((c) => c.destroy());
  await new Promise<void>((r) => daemon.listen(socket, r));
}, 60_000);
afterAll(() => {
  daemon?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const env = {
  PATH: process.env.PATH,
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'c1',
  CNI_NETNS: '/var/run/netns/none',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/nonexistent',
};

/** Runs `file` with stdin from /dev/zero, or a pipe fed `bytes` bytes; resolves with exit status and stdout. */
function run(file: string, stdin: 'zero' | number, extra: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(file, [], {
      env: { ...env, ...extra },
      stdio: [stdin === 'zero' ? openSync('/dev/zero', 'r') : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (b: Buffer) => (stdout += b));
    child.stderr!.on('data', (b: Buffer) => (stderr += b));
    if (typeof stdin === 'number') {
      child.stdin!.on('error', () => {});
      child.stdin!.end(Buffer.alloc(stdin, 0x20));
    }
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('stdin is read with a bound', () => {
  it('a plugin given /dev/zero on stdin answers code 5 at once instead of reading forever', async () => {
    const r = await run(join(bin, 'kemu-loopback'), 'zero');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({
      cniVersion: '1.1.0',
      code: 5,
      msg: 'network config on stdin is larger than 4194304 bytes',
    });
  });

  it('a piped config over 4 MiB is refused, by the plugin and by the launcher reading it for the daemon', async () => {
    const direct = await run(join(bin, 'kemu-loopback'), 5 << 20);
    expect(JSON.parse(direct.stdout)).toMatchObject({ code: 5, msg: 'network config on stdin is larger than 4194304 bytes' });
    const viaLauncher = await run(join(launchers, 'kemu-loopback'), 5 << 20, { KEMU_CNI_DAEMON: socket });
    expect(viaLauncher.code).toBe(1);
    expect(JSON.parse(viaLauncher.stdout)).toMatchObject({ code: 5, msg: 'network config on stdin is larger than 4194304 bytes' });
    expect(viaLauncher.stderr).toBe('');
  });
});

describe('a delegated plugin\'s output is read with a bound', () => {
  it('a plugin that writes without end is stopped with code 5', async () => {
    let err: unknown;
    await execPlugin('/usr/bin/yes', env, '').catch((e) => (err = e));
    expect(err).toBeInstanceOf(CniError);
    expect((err as CniError).code).toBe(5);
    expect((err as CniError).message).toBe('plugin /usr/bin/yes wrote more than 4194304 bytes to stdout; stopped');
  });
});
