import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  addNetns,
  buildPluginBins,
  delAllNetns,
  delNetns,
  ipJson,
  REFERENCE_BIN_DIR,
  runPlugin,
} from '@kemu/cni/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';

const ok = requirePeers('the loopback tests', [peers.netns, peers.referenceCni]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-lo-'));
let bin = '';
beforeAll(async () => {
  if (ok) bin = await buildPluginBins(join(tmp, 'bin'), ['loopback']);
});
afterAll(() => {
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

const conf = (type: string) => ({ cniVersion: '1.0.0', name: 'lonet', type });
const lo = (ns: string) =>
  ipJson(ns, ['addr', 'show', 'lo']).map((l: any) => ({
    flags: l.flags,
    operstate: l.operstate,
    addrs: l.addr_info.map((a: any) => `${a.local}/${a.prefixlen}`),
  }));

describe.runIf(ok)('kemu-loopback vs reference loopback', () => {
  it('brings lo up with the same result and state, and DEL brings it down (also after the netns is gone)', async () => {
    const out = [];
    for (const [file, type] of [
      [join(REFERENCE_BIN_DIR, 'loopback'), 'loopback'],
      [join(bin, 'kemu-loopback'), 'kemu-loopback'],
    ] as const) {
      const ns = addNetns('lo');
      const env = { containerId: 'c1', netns: ns.path, ifname: 'lo', path: bin };
      const r = await runPlugin(file, 'ADD', conf(type), env);
      expect(r.exitCode, r.stdout).toBe(0);
      const up = lo(ns.name);
      expect((await runPlugin(file, 'DEL', conf(type), env)).exitCode).toBe(0);
      const down = lo(ns.name);
      delNetns(ns.name);
      const gone = await runPlugin(file, 'DEL', conf(type), env);
      out.push({ result: { ...r.json, interfaces: r.json.interfaces.map((i: any) => ({ ...i, sandbox: !!i.sandbox })) }, up, down, goneExit: gone.exitCode });
    }
    expect(out[1]).toEqual(out[0]);
    expect(out[1]!.up[0].flags).toContain('UP');
  });

  it('ADD into a missing netns fails with a CNI error, not a stack trace', async () => {
    const r = await runPlugin(join(bin, 'kemu-loopback'), 'ADD', conf('kemu-loopback'), {
      containerId: 'c1',
      netns: '/var/run/netns/kemu-does-not-exist',
      ifname: 'lo',
      path: bin,
    });
    expect(r.exitCode).toBe(1);
    expect(r.json.code).toBe(4);
    expect(r.stdout).not.toMatch(/\n\s+at /);
  });
});
