import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callPlugin } from '@kemu/cni/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { hostLocal } from './host-local.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-hl-bad-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const conf = (dataDir: string, ipam: Record<string, unknown> = {}) => ({
  cniVersion: '1.0.0',
  name: 'badnet',
  type: 'kemu-host-local',
  ipam: { type: 'kemu-host-local', dataDir, ranges: [[{ subnet: '10.93.0.0/24' }]], ...ipam },
});
const env = { containerId: 'c1', netns: '/var/run/netns/x', ifname: 'eth0' };
const add = (dataDir: string, ipam: Record<string, unknown> = {}, id = 'c1') =>
  callPlugin(hostLocal, 'ADD', conf(dataDir, ipam), { ...env, containerId: id });
const allocated = (dataDir: string) => {
  try {
    return readdirSync(join(dataDir, 'badnet')).filter((f) => /^\d/.test(f));
  } catch {
    return [];
  }
};

describe('kemu-host-local: files a config names are read with a bound', () => {
  it('a resolvConf of /dev/zero fails at once with code 7 instead of reading forever', async () => {
    const d = join(tmp, 'zero');
    const r = await add(d, { resolvConf: '/dev/zero' });
    expect(r.json).toEqual({
      cniVersion: '1.0.0',
      code: 7,
      msg: 'ipam "resolvConf" /dev/zero is not a regular file',
    });
    expect(allocated(d)).toEqual([]);
  });

  it('refuses a FIFO, a directory, a symlink to a device and a file over 64 KiB; reads a symlink to a file', async () => {
    const d = join(tmp, 'kinds');
    const fifo = join(tmp, 'resolv.fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    mkdirSync(join(tmp, 'resolv.dir'));
    symlinkSync('/dev/urandom', join(tmp, 'resolv.link'));
    writeFileSync(join(tmp, 'resolv.big'), `nameserver 10.0.0.1\n${'#'.repeat(70 << 10)}\n`);
    writeFileSync(join(tmp, 'resolv.ok'), 'nameserver 10.0.0.53\nsearch a.example b.example\n');
    symlinkSync(join(tmp, 'resolv.ok'), join(tmp, 'resolv.oklink'));
    const cases: [string, RegExp][] = [
      [fifo, /is not a regular file/],
      [join(tmp, 'resolv.dir'), /is not a regular file/],
      [join(tmp, 'resolv.link'), /is not a regular file/],
      [join(tmp, 'resolv.big'), /is larger than 65536 bytes/],
    ];
    for (const [path, msg] of cases) {
      const r = await add(d, { resolvConf: path });
      expect(r.json?.code, r.stdout).toBe(7);
      expect(r.json.msg).toMatch(msg);
    }
    expect(allocated(d)).toEqual([]);
    const ok = await add(d, { resolvConf: join(tmp, 'resolv.oklink') });
    expect(ok.json.dns).toEqual({ nameservers: ['10.0.0.53'], search: ['a.example', 'b.example'] });
  });

  it('a missing resolvConf is an I/O failure (code 5) naming the file', async () => {
    const r = await add(join(tmp, 'missing'), { resolvConf: join(tmp, 'no-such-resolv.conf') });
    expect(r.json).toMatchObject({ code: 5, msg: expect.stringMatching(/ipam "resolvConf" .*no-such-resolv\.conf: ENOENT/) });
  });
});

describe('kemu-host-local: state files in the dataDir are read with a bound', () => {
  it('a last_reserved_ip that is a device or oversized fails with code 5 and reserves nothing', async () => {
    const d = join(tmp, 'state');
    mkdirSync(join(d, 'badnet'), { recursive: true });
    symlinkSync('/dev/zero', join(d, 'badnet', 'last_reserved_ip.0'));
    const r = await add(d);
    expect(r.json).toMatchObject({ code: 5, msg: expect.stringMatching(/host-local state .*last_reserved_ip\.0 is not a regular file/) });
    expect(allocated(d)).toEqual([]);
    rmSync(join(d, 'badnet', 'last_reserved_ip.0'));
    writeFileSync(join(d, 'badnet', 'last_reserved_ip.0'), 'x'.repeat(70 << 10));
    const big = await add(d);
    expect(big.json).toMatchObject({ code: 5, msg: expect.stringMatching(/is larger than 65536 bytes/) });
    expect(allocated(d)).toEqual([]);
  });

  it('an index entry pointing at a device fails DEL with code 5, not a hang', async () => {
    const d = join(tmp, 'index');
    expect((await add(d, {}, 'ix')).exitCode).toBe(0);
    const idx = join(d, '.kemu-index', 'badnet', 'ix@eth0');
    rmSync(idx);
    symlinkSync('/dev/zero', idx);
    const r = await callPlugin(hostLocal, 'DEL', conf(d), { containerId: 'ix', ifname: 'eth0' });
    expect(r.json).toMatchObject({ code: 5, msg: expect.stringMatching(/is not a regular file/) });
  });
});
