import { describe, expect, it } from 'vitest';
import { HOST_NETNS } from './datapath.js';
import { MemoryDatapath } from './datapath-memory.js';
import { CniError } from './errors.js';
import { type CniPlugin, invokePlugin } from './skeleton.js';
import { convertResult, parseResult } from './types.js';

const dp = new MemoryDatapath();
const calls: string[] = [];
const plugin: CniPlugin = {
  name: 'fake',
  async add(ctx) {
    calls.push(`ADD ${ctx.containerId}`);
    await (await ctx.datapath()).addLink(HOST_NETNS, { kind: 'dummy', name: `d-${ctx.containerId}`.slice(0, 15) });
    return {
      cniVersion: ctx.version,
      interfaces: [{ name: ctx.ifname, mac: '0a:58:0a:00:00:02', sandbox: ctx.netns, mtu: 1400 }],
      ips: [{ address: '10.0.0.2/24', gateway: '10.0.0.1', interface: 0 }],
      routes: [{ dst: '0.0.0.0/0', gw: '10.0.0.1', mtu: 1400 }],
    };
  },
  async del() {},
  async check() {
    throw new CniError(104, 'mismatch');
  },
};

const env = (over: Record<string, string | undefined> = {}) => ({
  CNI_COMMAND: 'ADD',
  CNI_CONTAINERID: 'abc',
  CNI_NETNS: '/var/run/netns/x',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/opt/cni/bin',
  ...over,
});
const conf = (over: Record<string, unknown> = {}) => JSON.stringify({ cniVersion: '1.1.0', name: 'net', type: 'fake', ...over });
const run = (e: Record<string, string | undefined>, stdin: string) =>
  invokePlugin(plugin, { env: e, stdin, datapath: async () => dp, delegate: async () => undefined });

describe('skeleton', () => {
  it('answers VERSION with every supported version', async () => {
    const o = await run({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
    expect(o.exitCode).toBe(0);
    expect(JSON.parse(o.stdout)).toEqual({
      cniVersion: '1.1.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
  });

  it.each([
    ['malformed JSON', env(), '{"cniVersion":', 6, /error parsing network config/],
    ['missing name', env(), JSON.stringify({ cniVersion: '1.0.0', type: 'fake' }), 7, /"name"/],
    ['unsupported version', env(), conf({ cniVersion: '0.2.0' }), 1, /incompatible CNI versions/],
    ['missing CNI_NETNS on ADD', env({ CNI_NETNS: undefined }), conf(), 4, /CNI_NETNS/],
    ['unknown command', env({ CNI_COMMAND: 'FROB' }), conf(), 4, /unknown CNI_COMMAND: FROB/],
    ['bad container id', env({ CNI_CONTAINERID: '../etc' }), conf(), 4, /containerID/],
    ['bad ifname', env({ CNI_IFNAME: 'a/b' }), conf(), 4, /CNI_IFNAME/],
    ['relative netns', env({ CNI_NETNS: 'x' }), conf(), 4, /absolute/],
    ['CHECK on 0.3.1', env({ CNI_COMMAND: 'CHECK' }), conf({ cniVersion: '0.3.1' }), 1, /does not allow CHECK/],
    ['GC on 1.0.0', env({ CNI_COMMAND: 'GC' }), conf({ cniVersion: '1.0.0' }), 1, /does not allow GC/],
  ])('%s → code %i, no stack trace, nothing programmed', async (_n, e, stdin, code, msg) => {
    const before = (await dp.listLinks(HOST_NETNS)).length;
    const o = await run(e, stdin);
    expect(o.exitCode).not.toBe(0);
    const err = JSON.parse(o.stdout);
    expect(err.code).toBe(code);
    expect(err.msg).toMatch(msg);
    expect(o.stdout).not.toMatch(/\n\s+at /);
    expect((await dp.listLinks(HOST_NETNS)).length).toBe(before);
  });

  it('renders the result in the config version', async () => {
    const v031 = JSON.parse((await run(env({ CNI_CONTAINERID: 'v031' }), conf({ cniVersion: '0.3.1' }))).stdout);
    expect(v031.cniVersion).toBe('0.3.1');
    expect(v031.ips[0]).toEqual({ version: '4', interface: 0, address: '10.0.0.2/24', gateway: '10.0.0.1' });
    expect(v031.interfaces[0].mtu).toBeUndefined();
    const v100 = JSON.parse((await run(env({ CNI_CONTAINERID: 'v100' }), conf({ cniVersion: '1.0.0' }))).stdout);
    expect(v100.ips[0].version).toBeUndefined();
    expect(v100.routes[0]).toEqual({ dst: '0.0.0.0/0', gw: '10.0.0.1' });
    const v110 = JSON.parse((await run(env({ CNI_CONTAINERID: 'v110' }), conf())).stdout);
    expect(v110.routes[0].mtu).toBe(1400);
    expect(v110.interfaces[0].mtu).toBe(1400);
  });

  it('reads a prevResult of an older version', () => {
    const r = parseResult({ cniVersion: '0.4.0', ips: [{ version: '4', address: '10.1.0.2/16' }] });
    expect(r.ips).toEqual([{ address: '10.1.0.2/16' }]);
    expect(convertResult(r, '0.4.0').ips).toEqual([{ version: '4', address: '10.1.0.2/16' }]);
  });

  it('passes plugin errors through with their code', async () => {
    const o = await run(env({ CNI_COMMAND: 'CHECK' }), conf());
    expect(JSON.parse(o.stdout)).toEqual({ cniVersion: '1.1.0', code: 104, msg: 'mismatch' });
  });
});
