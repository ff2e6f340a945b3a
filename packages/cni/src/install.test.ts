import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'kemu-install-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const install = (args: string[]) =>
  spawnSync(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', join(here, 'install.ts'), ...args], {
    encoding: 'utf8',
    timeout: 60_000,
  });
const plugins = ['bridge', 'host-local', 'portmap', 'loopback'];
const binOf = (p: string) => {
  const dir = resolve(here, '../..', `cni-${p}`);
  const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  return resolve(dir, bin[`kemu-${p}`]!);
};
const built = plugins.every((p) => existsSync(binOf(p)));

describe('kemu-cni install', () => {
  it('requires --bin-dir', () => {
    const r = install(['install']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/--bin-dir/);
  });

  it('links every plugin executable into the bin dir, refusing to overwrite without --force', () => {
    const dir = join(tmp, 'bin');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'kemu-bridge'), 'someone else');
    const r = install(['install', '--bin-dir', dir]);
    expect(r.status).toBe(1);
    if (!built) {
      // Without a build there is nothing to link: the message says how to fix it.
      expect(r.stderr).toMatch(/is not built .* run "npm run build" first/);
      return;
    }
    expect(r.stderr).toMatch(/kemu-bridge already exists; pass --force/);
    const f = install(['install', '--bin-dir', dir, '--force']);
    expect(f.status, f.stderr).toBe(0);
    for (const p of plugins) {
      expect(readlinkSync(join(dir, `kemu-${p}`))).toBe(binOf(p));
    }
    // Every installed executable starts (launcher, bundle, what the bundle requires) and answers VERSION.
    for (const p of plugins) {
      const v = spawnSync(join(dir, `kemu-${p}`), [], { env: { CNI_COMMAND: 'VERSION' }, input: '{}', encoding: 'utf8' });
      expect([p, v.status, v.stderr]).toEqual([p, 0, '']);
      expect(JSON.parse(v.stdout).supportedVersions).toContain('1.1.0');
    }
  });
});

describe('kemu-cni install --names reference', () => {
  it('links the executables under the reference plugins\' names; refuses an unknown style', () => {
    const bad = install(['install', '--bin-dir', join(tmp, 'x'), '--names', 'other']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/--names must be kemu or reference/);
    if (!built) return;
    const dir = join(tmp, 'refbin');
    const r = install(['install', '--bin-dir', dir, '--names', 'reference']);
    expect(r.status, r.stderr).toBe(0);
    for (const p of plugins) expect(readlinkSync(join(dir, p))).toBe(binOf(p));
    expect(existsSync(join(dir, 'kemu-bridge'))).toBe(false);
  });
});

describe('kemu-cni daemon', () => {
  const started: ReturnType<typeof spawn>[] = [];
  // A failed assertion must not leave a daemon running.
  afterAll(() => {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  });
  // Through tsx with the source condition, the plugin packages load from source: no build needed.
  const start = (socket: string) => {
    const c = spawn(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', join(here, 'install.ts'), 'daemon', '--socket', socket], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    started.push(c);
    return c;
  };
  const stderrOf = (c: ReturnType<typeof start>) =>
    new Promise<{ text: string; code: number | null }>((res) => {
      let text = '';
      c.stderr.on('data', (b: Buffer) => {
        text += b.toString();
        if (text.startsWith('kemu-cni daemon: serving') && text.endsWith('\n')) res({ text, code: null });
      });
      c.on('exit', (code) => res({ text, code }));
    });

  it('serves the installed plugin packages on a 0600 socket, refuses a second daemon there, and removes the socket on SIGTERM', async () => {
    const socket = join(tmp, 'd', 'cni.sock');
    const first = start(socket);
    const up = await stderrOf(first);
    expect(up.text).toBe(`kemu-cni daemon: serving kemu-bridge, kemu-host-local, kemu-portmap, kemu-loopback on ${socket}\n`);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(socket)).mode & 0o777).toBe(0o700);

    const second = await stderrOf(start(socket));
    expect(second.code).toBe(1);
    expect(second.text).toBe(`kemu-cni: another daemon is serving ${socket}; stop it first\n`);

    const exited = new Promise<number | null>((res) => first.on('exit', res));
    first.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(existsSync(socket)).toBe(false);
  });
});
