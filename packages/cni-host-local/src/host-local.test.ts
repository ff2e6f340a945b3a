import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPluginBins, callPlugin, hostLocalFiles, REFERENCE_BIN_DIR, runPlugin } from '@kemu/cni/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import type { CniPlugin } from '@kemu/cni';
import { createHostLocal, hostLocal } from './host-local.js';
import { MemoryIpam } from './store-memory.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-hl-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const netconf = (dataDir: string, ipam: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
  cniVersion: '1.0.0',
  name: 'hlnet',
  type: 'x',
  ipam: {
    type: 'host-local',
    dataDir,
    ranges: [[{ subnet: '10.88.0.0/24', rangeStart: '10.88.0.10', rangeEnd: '10.88.0.200' }], [{ subnet: 'fd00:88::/64' }]],
    routes: [{ dst: '0.0.0.0/0' }, { dst: '192.168.0.0/16', gw: '10.88.0.1' }],
    ...ipam,
  },
  ...top,
});


interface StoreCase {
  name: string;
  plugin: CniPlugin;
  /** Allocations of network hlnet under dataDir as ip -> owner record, whatever the store. */
  allocations(dataDir: string): Promise<Record<string, string>>;
  lastReserved(dataDir: string, set: number): Promise<string | undefined>;
}

const isIPName = (f: string) => /^[0-9a-f.:]+$/.test(f) && f.includes('.') !== f.includes(':');
const mem = new MemoryIpam();
const stores: StoreCase[] = [
  {
    name: 'disk store',
    plugin: hostLocal,
    async allocations(d) {
      const dir = join(d, 'hlnet');
      if (!existsSync(dir)) return {};
      return Object.fromEntries(Object.entries(hostLocalFiles(dir)).filter(([f]) => isIPName(f)));
    },
    async lastReserved(d, set) {
      const f = join(d, 'hlnet', `last_reserved_ip.${set}`);
      return existsSync(f) ? readFileSync(f, 'utf8') : undefined;
    },
  },
  {
    name: 'memory store',
    plugin: createHostLocal({ store: mem }),
    async allocations(d) {
      return Object.fromEntries([...(await mem.allocations(d, 'hlnet'))].sort(([a], [b]) => a.localeCompare(b)));
    },
    lastReserved: (d, set) => mem.open(d, 'hlnet').lastReserved(set),
  },
];

describe.each(stores)('kemu-host-local with the $name', (sc) => {
  const add = (dataDir: string, id: string, extra: { args?: string; ipam?: Record<string, unknown> } = {}) =>
    callPlugin(sc.plugin, 'ADD', netconf(dataDir, extra.ipam), { containerId: id, netns: '/var/run/netns/x', ifname: 'eth0', args: extra.args });
  const del = (dataDir: string, id: string) => callPlugin(sc.plugin, 'DEL', netconf(dataDir), { containerId: id, ifname: 'eth0' });
  const check = (dataDir: string, id: string) =>
    callPlugin(sc.plugin, 'CHECK', netconf(dataDir), { containerId: id, netns: '/var/run/netns/x', ifname: 'eth0' });
  const dir = (name: string) => join(tmp, `${sc.name.split(' ')[0]}-${name}`);

  it('allocates sequentially from rangeStart, skipping the gateway, one address per range set', async () => {
    const d = dir('seq');
    const a = await add(d, 'c1');
    expect(a.exitCode).toBe(0);
    expect(a.json).toEqual({
      cniVersion: '1.0.0',
      ips: [
        { address: '10.88.0.10/24', gateway: '10.88.0.1' },
        { address: 'fd00:88::2/64', gateway: 'fd00:88::1' },
      ],
      routes: [{ dst: '0.0.0.0/0' }, { dst: '192.168.0.0/16', gw: '10.88.0.1' }],
      dns: {},
    });
    expect((await add(d, 'c2')).json.ips[0].address).toBe('10.88.0.11/24');
    expect((await sc.allocations(d))['10.88.0.10']).toBe('c1\r\neth0');
    expect(await sc.lastReserved(d, 0)).toBe('10.88.0.11');
    expect(await sc.lastReserved(d, 1)).toBe('fd00:88::3');
  });

  it('continues after the last reserved address and wraps around to free ones', async () => {
    const d = dir('wrap');
    const tiny = { ranges: [[{ subnet: '10.91.0.0/29' }]] };
    const got: string[] = [];
    for (const id of ['w1', 'w2', 'w3']) got.push((await add(d, id, { ipam: tiny })).json.ips[0].address);
    expect(got).toEqual(['10.91.0.2/29', '10.91.0.3/29', '10.91.0.4/29']);
    expect((await del(d, 'w1')).exitCode).toBe(0);
    // .2 is free again but the search resumes after .4, like the reference plugin.
    expect((await add(d, 'w4', { ipam: tiny })).json.ips[0].address).toBe('10.91.0.5/29');
    expect((await add(d, 'w5', { ipam: tiny })).json.ips[0].address).toBe('10.91.0.6/29');
    expect((await add(d, 'w6', { ipam: tiny })).json.ips[0].address).toBe('10.91.0.2/29');
  });

  it('50 concurrent ADDs get 50 distinct addresses; DEL twice succeeds and frees them', async () => {
    const d = dir('conc');
    const ids = Array.from({ length: 50 }, (_, i) => `pod${i}`);
    const results = await Promise.all(ids.map((id) => add(d, id, { ipam: { ranges: [[{ subnet: '10.89.0.0/24' }]] } })));
    expect(results.every((r) => r.exitCode === 0)).toBe(true);
    const ips = results.map((r) => r.json.ips[0].address);
    expect(new Set(ips).size).toBe(50);
    expect(Object.keys(await sc.allocations(d))).toHaveLength(50);
    for (const id of ids) {
      expect((await del(d, id)).exitCode).toBe(0);
      expect((await del(d, id)).exitCode).toBe(0);
    }
    expect(await sc.allocations(d)).toEqual({});
  });

  it('honours a requested IP from CNI_ARGS and refuses a taken one without leaking', async () => {
    const d = dir('req');
    expect((await add(d, 'a', { args: 'IgnoreUnknown=1;IP=10.88.0.77' })).json.ips[0].address).toBe('10.88.0.77/24');
    const clash = await add(d, 'b', { args: 'IP=10.88.0.77' });
    expect(clash.exitCode).toBe(1);
    expect(clash.json.code).toBe(102);
    expect(clash.json.msg).toMatch(/10\.88\.0\.77/);
    // The v6 address reserved before the clash was noticed... is never reserved: the v4 set comes first.
    expect(Object.values(await sc.allocations(d)).filter((c) => c.startsWith('b\r\n'))).toEqual([]);
    const outside = await add(d, 'c', { args: 'IP=10.99.0.1' });
    expect(outside.json).toMatchObject({ code: 102, msg: expect.stringMatching(/not in any configured range/) });
    expect(Object.values(await sc.allocations(d)).filter((c) => c.startsWith('c\r\n'))).toEqual([]);
  });

  it('refuses a second ADD for the same container and ifname, keeping the first allocation', async () => {
    const d = dir('dup');
    expect((await add(d, 'twice')).exitCode).toBe(0);
    const again = await add(d, 'twice');
    expect(again.json).toMatchObject({ code: 102, msg: expect.stringMatching(/duplicate allocation/) });
    expect(Object.values(await sc.allocations(d)).filter((c) => c === 'twice\r\neth0')).toHaveLength(2);
  });

  it('CHECK passes for a held attachment and fails once it is deleted', async () => {
    const d = dir('check');
    expect((await add(d, 'chk')).exitCode).toBe(0);
    expect((await check(d, 'chk')).exitCode).toBe(0);
    expect((await del(d, 'chk')).exitCode).toBe(0);
    const gone = await check(d, 'chk');
    expect(gone.exitCode).toBe(1);
    expect(gone.json.msg).toMatch(/failed to find address for container chk/);
  });

  it('rejects bad config with code 7 naming the key, and leaves no state', async () => {
    const d = dir('bad');
    const r1 = await add(d, 'x', { ipam: { ranges: [[{ subnet: '10.0.0.0/33' }]] } });
    expect(r1.json).toMatchObject({ code: 7 });
    expect(r1.json.msg).toMatch(/"subnet"/);
    const r2 = await add(d, 'x', { ipam: { ranges: [[{ subnet: '10.0.0.0/24', gateway: '10.9.9.9' }]] } });
    expect(r2.json.msg).toMatch(/"gateway"/);
    const r3 = await add(d, 'x', { ipam: { routes: [{ dst: 'nope' }] } });
    expect(r3.json.msg).toMatch(/"routes"\[0\].*"dst"/);
    expect(await sc.allocations(d)).toEqual({});
    if (sc.plugin === hostLocal) expect(existsSync(join(d, 'hlnet'))).toBe(false);
  });

  it('GC releases everything not in the valid list; STATUS reports exhaustion with code 50', async () => {
    const d = dir('gc');
    const small = { ranges: [[{ subnet: '10.90.0.0/29' }]] };
    for (const id of ['k1', 'k2', 'k3']) expect((await add(d, id, { ipam: small })).exitCode).toBe(0);
    const gcConf = {
      ...netconf(d, small),
      cniVersion: '1.1.0',
      'cni.dev/valid-attachments': [{ containerID: 'k2', ifname: 'eth0' }],
    };
    expect((await callPlugin(sc.plugin, 'GC', gcConf, {})).exitCode).toBe(0);
    expect(await sc.allocations(d)).toEqual({ '10.90.0.3': 'k2\r\neth0' });
    // GC dropped k1's index entry too: a DEL of k1 finds nothing and still succeeds.
    expect((await del(d, 'k1')).exitCode).toBe(0);
    const statusConf = { ...netconf(d, small), cniVersion: '1.1.0' };
    expect((await callPlugin(sc.plugin, 'STATUS', statusConf, {})).exitCode).toBe(0);
    for (const id of ['f1', 'f2', 'f3', 'f4']) expect((await add(d, id, { ipam: small })).exitCode).toBe(0);
    const full = await add(d, 'f5', { ipam: small });
    expect(full.json.code).toBe(101);
    expect(Object.keys(await sc.allocations(d))).toHaveLength(5);
    const st = await callPlugin(sc.plugin, 'STATUS', statusConf, {});
    expect(st.json.code).toBe(50);
  });
});

describe('memory store isolation', () => {
  it('keeps networks under different dataDirs apart and writes no files', async () => {
    const m = new MemoryIpam();
    const p = createHostLocal({ store: m });
    const a = join(tmp, 'mem-node-a');
    const b = join(tmp, 'mem-node-b');
    const r1 = await callPlugin(p, 'ADD', netconf(a), { containerId: 'same', netns: '/var/run/netns/x', ifname: 'eth0' });
    const r2 = await callPlugin(p, 'ADD', netconf(b), { containerId: 'same', netns: '/var/run/netns/x', ifname: 'eth0' });
    expect(r1.json.ips[0].address).toBe('10.88.0.10/24');
    expect(r2.json.ips[0].address).toBe('10.88.0.10/24');
    expect(existsSync(a)).toBe(false);
    expect(existsSync(b)).toBe(false);
    m.drop(a);
    expect((await m.allocations(a, 'hlnet')).size).toBe(0);
    expect((await m.allocations(b, 'hlnet')).size).toBe(2);
  });

  it('plugins made with store "memory" do not share state', async () => {
    const d = join(tmp, 'mem-private');
    const p1 = createHostLocal({ store: 'memory' });
    const p2 = createHostLocal({ store: 'memory' });
    const r1 = await callPlugin(p1, 'ADD', netconf(d), { containerId: 'one', netns: '/var/run/netns/x', ifname: 'eth0' });
    const r2 = await callPlugin(p2, 'ADD', netconf(d), { containerId: 'two', netns: '/var/run/netns/x', ifname: 'eth0' });
    expect(r2.json.ips[0].address).toBe(r1.json.ips[0].address);
  });
});

describe.runIf(requirePeers('the reference host-local tests', [peers.referenceCni]))('kemu-host-local vs reference host-local', () => {
  let bin: string;
  beforeAll(async () => {
    bin = await buildPluginBins(join(tmp, 'bin'), ['host-local']);
  });

  const execAdd = (file: string, dataDir: string, id: string) =>
    runPlugin(file, 'ADD', netconf(dataDir), { containerId: id, netns: '/var/run/netns/x', ifname: 'eth0', path: bin });
  const execDel = (file: string, dataDir: string, id: string) =>
    runPlugin(file, 'DEL', netconf(dataDir), { containerId: id, ifname: 'eth0', path: bin });

  it('produces the same results and the same files for the same calls', async () => {
    const ours = join(tmp, 'diff-ours');
    const ref = join(tmp, 'diff-ref');
    for (const id of ['a', 'b', 'c']) {
      const r = await execAdd(join(REFERENCE_BIN_DIR, 'host-local'), ref, id);
      const k = await execAdd(join(bin, 'kemu-host-local'), ours, id);
      expect(r.exitCode).toBe(0);
      expect(k.json).toEqual(r.json);
    }
    await execDel(join(REFERENCE_BIN_DIR, 'host-local'), ref, 'b');
    await execDel(join(bin, 'kemu-host-local'), ours, 'b');
    const r = await execAdd(join(REFERENCE_BIN_DIR, 'host-local'), ref, 'd');
    const k = await execAdd(join(bin, 'kemu-host-local'), ours, 'd');
    expect(k.json).toEqual(r.json);
    expect(hostLocalFiles(join(ours, 'hlnet'))).toEqual(hostLocalFiles(join(ref, 'hlnet')));
  });

  it('shares one dataDir with the reference: no double allocation, each releases the other one\'s', async () => {
    const d = join(tmp, 'shared');
    const kemu = join(bin, 'kemu-host-local');
    const refBin = join(REFERENCE_BIN_DIR, 'host-local');
    const runs = await Promise.all(
      Array.from({ length: 16 }, (_, i) => execAdd(i % 2 ? kemu : refBin, d, `s${i}`)),
    );
    expect(runs.map((r) => r.exitCode)).toEqual(Array(16).fill(0));
    expect(new Set(runs.map((r) => r.json.ips[0].address)).size).toBe(16);
    // kemu releases one the reference allocated and vice versa.
    expect((await execDel(kemu, d, 's0')).exitCode).toBe(0);
    expect((await execDel(refBin, d, 's1')).exitCode).toBe(0);
    const owners = Object.values(hostLocalFiles(join(d, 'hlnet')));
    expect(owners.some((c) => c.startsWith('s0\r\n'))).toBe(false);
    expect(owners.some((c) => c.startsWith('s1\r\n'))).toBe(false);
    expect(owners.filter((c) => c.includes('\r\n')).length).toBe(2 * 14);
  });

  const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'bin.cjs');
  it.runIf(existsSync(dist))('the built executable (launcher + code-cached bundle) answers like the reference, cache or not', async () => {
    const ours = join(tmp, 'dist-ours');
    const ref = join(tmp, 'dist-ref');
    rmSync(`${join(dirname(dist), 'main.cjs')}.v8cache`, { force: true });
    for (const id of ['d1', 'd2', 'd3']) {
      const r = await execAdd(join(REFERENCE_BIN_DIR, 'host-local'), ref, id);
      const k = await execAdd(dist, ours, id);
      expect(k.json).toEqual(r.json);
    }
    // The first ADD left a code cache for the following ones.
    expect(existsSync(`${join(dirname(dist), 'main.cjs')}.v8cache`)).toBe(true);
    expect((await execDel(dist, ours, 'd2')).exitCode).toBe(0);
    expect((await execDel(join(REFERENCE_BIN_DIR, 'host-local'), ref, 'd2')).exitCode).toBe(0);
    expect(hostLocalFiles(join(ours, 'hlnet'))).toEqual(hostLocalFiles(join(ref, 'hlnet')));
  });
});
