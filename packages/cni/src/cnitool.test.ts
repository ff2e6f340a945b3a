import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { addNetns, buildPluginBins, delAllNetns, ipJson } from './testing.js';

const here = dirname(fileURLToPath(import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'kemu-cnitool-'));
afterAll(() => {
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

function cnitool(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, ['--conditions=@kemu/source', '--import', 'tsx', join(here, 'cnitool.ts'), ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH!, ...env },
    timeout: 60_000,
  });
}

describe('kemu-cnitool', () => {
  it('explains bad usage in one line without a stack trace', () => {
    const r = cnitool(['add', 'lonet'], {});
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^kemu-cnitool: missing <netns-path> for add/);
    expect(r.stderr).not.toMatch(/\s+at\s/);
    const bad = cnitool(['add', 'lonet', '/var/run/netns/x'], { NETCONFPATH: join(tmp, 'nothing'), CAP_ARGS: '{' });
    expect(bad.stderr).toMatch(/CAP_ARGS is not valid JSON/);
  });
});

describe.runIf(requirePeers('the cnitool netns test', [peers.netns]))('kemu-cnitool with kemu-loopback', () => {
  let bin = '';
  beforeAll(async () => {
    bin = await buildPluginBins(join(tmp, 'bin'), ['loopback']);
  });

  it('add/check/del a network by name from NETCONFPATH, caching like libcni', () => {
    const conf = join(tmp, 'conf');
    mkdirSync(conf, { recursive: true });
    writeFileSync(join(conf, '99-lo.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'lonet', plugins: [{ type: 'kemu-loopback' }] }));
    const ns = addNetns('cnitool');
    const env = { NETCONFPATH: conf, CNI_PATH: bin, CNI_CACHE_DIR: join(tmp, 'cache'), CNI_IFNAME: 'lo' };
    const add = cnitool(['add', 'lonet', ns.path], env);
    expect(add.status, add.stderr).toBe(0);
    expect(JSON.parse(add.stdout).interfaces[0].name).toBe('lo');
    expect(ipJson(ns.name, ['link', 'show', 'lo'])[0].flags).toContain('UP');
    expect(readdirSync(join(tmp, 'cache', 'results'))).toEqual([expect.stringMatching(/^lonet-cni-[0-9a-f]{20}-lo$/)]);
    expect(cnitool(['check', 'lonet', ns.path], env).status).toBe(0);
    expect(cnitool(['del', 'lonet', ns.path], env).status).toBe(0);
    expect(ipJson(ns.name, ['link', 'show', 'lo'])[0].flags).not.toContain('UP');
    const missing = cnitool(['add', 'nonet', ns.path], env);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no network named "nonet".*\[CNI error code 7\]/);
  });
});
