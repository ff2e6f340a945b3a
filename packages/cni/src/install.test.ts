import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
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
