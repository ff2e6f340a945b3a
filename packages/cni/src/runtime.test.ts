import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryDatapath } from './datapath-memory.js';
import { CniError } from './errors.js';
import { InProcessInvoker } from './invoke-inprocess.js';
import { CniRuntime } from './runtime.js';
import type { CniPlugin, PluginContext } from './skeleton.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-rt-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

type Call = { plugin: string; command: string; conf: Record<string, unknown>; prev?: unknown };
function recorder(name: string, calls: Call[], ip?: string, fail?: string): CniPlugin {
  const rec = (command: string) => (ctx: PluginContext) => {
    calls.push({ plugin: name, command, conf: ctx.conf as Record<string, unknown>, prev: ctx.prevResult });
    if (fail === command) throw new CniError(104, `${name} refuses ${command}`);
  };
  return {
    name,
    async add(ctx) {
      rec('ADD')(ctx);
      const prev = ctx.prevResult ?? { cniVersion: ctx.version };
      return ip ? { ...prev, ips: [...(prev.ips ?? []), { address: ip }] } : prev;
    },
    async del(ctx) {
      rec('DEL')(ctx);
    },
    async check(ctx) {
      rec('CHECK')(ctx);
    },
    async status(ctx) {
      rec('STATUS')(ctx);
    },
    async gc(ctx) {
      rec('GC')(ctx);
    },
  };
}

function setup(
  name: string,
  files: Record<string, unknown>,
  failing?: { plugin: string; command: string },
  resultCache?: 'memory',
) {
  const dir = join(tmp, name);
  mkdirSync(join(dir, 'conf'), { recursive: true });
  for (const [f, c] of Object.entries(files)) writeFileSync(join(dir, 'conf', f), typeof c === 'string' ? c : JSON.stringify(c));
  const calls: Call[] = [];
  const plugins = ['first', 'second', 'third'].map((p, i) =>
    recorder(p, calls, i < 2 ? `10.0.${i}.2/24` : undefined, failing?.plugin === p ? failing.command : undefined),
  );
  const invoker = new InProcessInvoker({ plugins, datapath: new MemoryDatapath(), resultCache });
  const rt = new CniRuntime({ confDir: join(dir, 'conf'), cacheDir: join(dir, 'cache'), binDirs: [join(dir, 'bin')], invoker });
  return { rt, calls, dir };
}

const chain = (name = 'chain', version = '1.1.0') => ({
  cniVersion: version,
  name,
  plugins: [
    { type: 'first', capabilities: { portMappings: true, mac: false } },
    { type: 'second', capabilities: { ips: true } },
    { type: 'third' },
  ],
});
const att = {
  containerId: 'ctr1',
  netns: '/var/run/netns/p1',
  ifname: 'eth0',
  args: [['K8S_POD_NAME', 'web']] as [string, string][],
  capabilityArgs: { portMappings: [{ hostPort: 80, containerPort: 8080 }], mac: '0a:58:00:00:00:01', ips: ['10.0.1.9'] },
};

describe('CniRuntime', () => {
  it('prefers .conflist, then .conf/.json, sorted by name; picks by name', async () => {
    const { rt } = setup('order', {
      '20-b.conflist': chain('b'),
      '10-single.conf': { cniVersion: '1.0.0', name: 'single', type: 'first' },
      '30-a.conflist': chain('a'),
      'ignored.txt': 'x',
    });
    expect((await rt.listConfLists()).map((l) => l.name)).toEqual(['b', 'a', 'single']);
    expect((await rt.loadConfList()).name).toBe('b');
    expect((await rt.loadConfList('single')).plugins).toHaveLength(1);
    await expect(rt.loadConfList('nope')).rejects.toMatchObject({ code: 7 });
  });

  it('ADD chains prevResult in order with name/cniVersion/runtimeConfig injected, and caches in libcni layout', async () => {
    const { rt, calls, dir } = setup('add', { 'c.conflist': chain() });
    const list = await rt.loadConfList();
    const res = await rt.addNetworkList(list, att);
    expect(res.ips?.map((i) => i.address)).toEqual(['10.0.0.2/24', '10.0.1.2/24']);
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual(['first ADD', 'second ADD', 'third ADD']);
    expect(calls[0]!.conf).toMatchObject({ name: 'chain', cniVersion: '1.1.0', runtimeConfig: { portMappings: att.capabilityArgs.portMappings } });
    expect(calls[0]!.conf.runtimeConfig).not.toHaveProperty('mac');
    expect(calls[1]!.conf.runtimeConfig).toEqual({ ips: ['10.0.1.9'] });
    expect(calls[2]!.conf).not.toHaveProperty('runtimeConfig');
    expect(calls[0]!.prev).toBeUndefined();
    expect((calls[2]!.prev as { ips: unknown[] }).ips).toHaveLength(2);
    const entry = JSON.parse(readFileSync(join(dir, 'cache', 'results', 'chain-ctr1-eth0'), 'utf8'));
    expect(entry).toMatchObject({
      kind: 'cniCacheV1',
      containerId: 'ctr1',
      ifName: 'eth0',
      networkName: 'chain',
      netns: '/var/run/netns/p1',
      cniArgs: [['K8S_POD_NAME', 'web']],
    });
    expect(JSON.parse(Buffer.from(entry.config, 'base64').toString())).toEqual(chain());
    expect(entry.result.ips).toHaveLength(2);
  });

  it('DEL runs in reverse with the cached result, then drops the cache; a second DEL still succeeds', async () => {
    const { rt, calls, dir } = setup('del', { 'c.conflist': chain() });
    const list = await rt.loadConfList();
    await rt.addNetworkList(list, att);
    calls.length = 0;
    await rt.delNetworkList(list, att);
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual(['third DEL', 'second DEL', 'first DEL']);
    expect((calls[0]!.prev as { ips: unknown[] }).ips).toHaveLength(2);
    expect(readdirSync(join(dir, 'cache', 'results'))).toEqual([]);
    await rt.delNetworkList(list, att);
  });

  it('a failing ADD rolls the chain back with DEL and caches nothing', async () => {
    const { rt, calls, dir } = setup('fail', { 'c.conflist': chain() }, { plugin: 'third', command: 'ADD' });
    const list = await rt.loadConfList();
    await expect(rt.addNetworkList(list, att)).rejects.toMatchObject({ code: 104, message: 'third refuses ADD' });
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual([
      'first ADD',
      'second ADD',
      'third ADD',
      'third DEL',
      'second DEL',
      'first DEL',
    ]);
    expect(() => readdirSync(join(dir, 'cache', 'results'))).toThrow();
  });

  it('CHECK needs 0.4.0+, STATUS and GC need 1.1.0; GC DELs stale cached attachments and passes the valid list', async () => {
    const { rt, calls } = setup('gc', { 'c.conflist': chain(), 'old.conflist': chain('old', '0.3.1') });
    const list = await rt.loadConfList('chain');
    await rt.addNetworkList(list, att);
    await rt.addNetworkList(list, { ...att, containerId: 'ctr2' });
    await rt.checkNetworkList(list, att);
    await expect(rt.checkNetworkList(await rt.loadConfList('old'), att)).rejects.toMatchObject({ code: 1 });
    calls.length = 0;
    await rt.getStatus(list);
    expect(calls.map((c) => c.command)).toEqual(['STATUS', 'STATUS', 'STATUS']);
    calls.length = 0;
    await rt.gcNetworkList(list, [{ containerId: 'ctr1', ifname: 'eth0' }]);
    expect(calls.filter((c) => c.command === 'DEL').map((c) => c.plugin)).toEqual(['third', 'second', 'first']);
    const gc = calls.filter((c) => c.command === 'GC');
    expect(gc).toHaveLength(3);
    expect(gc[0]!.conf['cni.dev/valid-attachments']).toEqual([{ containerID: 'ctr1', ifname: 'eth0' }]);
    expect((await rt.cachedAttachments(list)).map((a) => a.containerId)).toEqual(['ctr1']);
  });

  it('rejects bad attachments before running anything', async () => {
    const { rt, calls } = setup('bad', { 'c.conflist': chain() });
    const list = await rt.loadConfList();
    await expect(rt.addNetworkList(list, { ...att, containerId: '../x' })).rejects.toMatchObject({ code: 4 });
    await expect(rt.addNetworkList(list, { ...att, ifname: 'a'.repeat(16) })).rejects.toMatchObject({ code: 4 });
    await expect(rt.addNetworkList(list, { ...att, args: [['A;B', 'x']] })).rejects.toMatchObject({ code: 4 });
    expect(calls).toEqual([]);
  });

  it('reports malformed conf files with code 6 and missing fields with code 7', async () => {
    const { rt } = setup('badconf', { 'a.conflist': '{"name":' });
    await expect(rt.listConfLists()).rejects.toMatchObject({ code: 6 });
    const { rt: rt2 } = setup('badconf2', { 'a.conflist': { cniVersion: '1.0.0', name: 'x', plugins: [{}] } });
    await expect(rt2.listConfLists()).rejects.toMatchObject({ code: 7, message: expect.stringMatching(/"type"/) });
  });
});

describe.each([{ cache: 'disk' as const }, { cache: 'memory' as const }])('CniRuntime with the $cache result cache', ({ cache }) => {
  const mk = (name: string, failing?: { plugin: string; command: string }) =>
    setup(`${cache}-${name}`, { 'c.conflist': chain() }, failing, cache === 'memory' ? 'memory' : undefined);
  const cacheFiles = (dir: string) => {
    try {
      return readdirSync(join(dir, 'cache', 'results'));
    } catch {
      return [];
    }
  };

  it('keeps the ADD result with the attachment and hands out copies', async () => {
    const { rt, dir } = mk('add');
    const list = await rt.loadConfList();
    await rt.addNetworkList(list, att);
    const cached = await rt.getCachedResult(list, att);
    expect(cached?.cniVersion).toBe('1.1.0');
    expect(cached?.ips?.map((i) => i.address)).toEqual(['10.0.0.2/24', '10.0.1.2/24']);
    cached!.ips!.length = 0;
    expect((await rt.getCachedResult(list, att))?.ips).toHaveLength(2);
    expect(await rt.cachedAttachments(list)).toEqual([
      { containerId: 'ctr1', ifname: 'eth0', netns: att.netns, args: att.args, capabilityArgs: att.capabilityArgs },
    ]);
    expect(await rt.getCachedResult(list, { ...att, ifname: 'eth1' })).toBeUndefined();
    expect(cacheFiles(dir)).toEqual(cache === 'disk' ? ['chain-ctr1-eth0'] : []);
  });

  it('DEL gets the cached result as prevResult and drops it; a second DEL runs without one', async () => {
    const { rt, calls } = mk('del');
    const list = await rt.loadConfList();
    await rt.addNetworkList(list, att);
    calls.length = 0;
    await rt.delNetworkList(list, att);
    expect(calls.map((c) => `${c.plugin} ${c.command}`)).toEqual(['third DEL', 'second DEL', 'first DEL']);
    expect((calls[0]!.prev as { ips: unknown[] }).ips).toHaveLength(2);
    expect(await rt.getCachedResult(list, att)).toBeUndefined();
    expect(await rt.cachedAttachments(list)).toEqual([]);
    calls.length = 0;
    await rt.delNetworkList(list, att);
    expect(calls.map((c) => c.prev)).toEqual([undefined, undefined, undefined]);
  });

  it('a failed ADD caches nothing; CHECK needs a cached result (code 3) and passes it on', async () => {
    const { rt } = mk('fail', { plugin: 'third', command: 'ADD' });
    const list = await rt.loadConfList();
    await expect(rt.addNetworkList(list, att)).rejects.toMatchObject({ code: 104 });
    expect(await rt.getCachedResult(list, att)).toBeUndefined();
    await expect(rt.checkNetworkList(list, att)).rejects.toMatchObject({ code: 3 });
    const ok = mk('check');
    const l2 = await ok.rt.loadConfList();
    await ok.rt.addNetworkList(l2, att);
    ok.calls.length = 0;
    await ok.rt.checkNetworkList(l2, att);
    expect(ok.calls.map((c) => (c.prev as { ips: unknown[] }).ips.length)).toEqual([2, 2, 2]);
  });

  it('GC DELs the cached attachments that are not valid and keeps the rest', async () => {
    const { rt, calls } = mk('gc');
    const list = await rt.loadConfList();
    for (const id of ['g1', 'g2', 'g3']) await rt.addNetworkList(list, { ...att, containerId: id });
    calls.length = 0;
    await rt.gcNetworkList(list, [{ containerId: 'g2', ifname: 'eth0' }]);
    expect(calls.filter((c) => c.command === 'DEL')).toHaveLength(6);
    expect((await rt.cachedAttachments(list)).map((a) => a.containerId)).toEqual(['g2']);
  });
});
