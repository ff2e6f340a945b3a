import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETNS, InProcessInvoker } from '@kemu/cni';
import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSubnetEnv, vxlan } from './plugin.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-vxlan-plugin-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SUBNET_ENV =
  'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n';

function setup(tag: string) {
  const dir = join(tmp, tag);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'subnet.env'), SUBNET_ENV);
  const dp = createSimDatapath();
  const invoker = new InProcessInvoker({ plugins: [vxlan, bridge, hostLocal], datapath: dp });
  const conf = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'overlay',
      type: 'kemu-vxlan',
      subnetFile: join(dir, 'subnet.env'),
      dataDir: join(dir, 'flannel'),
      ipam: { dataDir: join(dir, 'ipam') },
      ...extra,
    });
  const env = (cmd: string, cid: string, netns = '/var/run/netns/p1') => ({
    CNI_COMMAND: cmd,
    CNI_CONTAINERID: cid,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
  });
  return { dir, dp, invoker, conf, env };
}

describe('kemu-vxlan CNI plugin', () => {
  it('ADD delegates to bridge + host-local over the node subnet; DEL undoes exactly that', async () => {
    const { dir, dp, invoker, conf, env } = setup('add-del');
    await dp.addNetns('/var/run/netns/p1');
    const out = await invoker.invoke('kemu-vxlan', env('ADD', 'c1'), conf());
    expect(out.exitCode, out.stdout).toBe(0);
    const res = JSON.parse(out.stdout);
    expect(res.ips).toEqual([expect.objectContaining({ address: '10.244.3.2/24', gateway: '10.244.3.1' })]);
    expect(res.routes).toEqual([{ dst: '10.244.0.0/16' }]);
    // The pod reaches the whole cluster network through the bridge (its gateway).
    const podRoutes = await dp.listRoutes('/var/run/netns/p1', { family: 4 });
    expect(podRoutes.some((r) => r.dst === '10.244.0.0/16' && r.via === '10.244.3.1')).toBe(true);
    const br = await dp.getLink(HOST_NETNS, 'cni0');
    expect(br).toMatchObject({ kind: 'bridge', mtu: 1450 });
    expect((await dp.listLinks('/var/run/netns/p1')).find((l) => l.name === 'eth0')?.mtu).toBe(1450);
    // FLANNEL_IPMASQ=true: the agent masquerades, so the bridge must not.
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([]);
    expect(readdirSync(join(dir, 'flannel'))).toEqual(['c1']);

    expect((await invoker.invoke('kemu-vxlan', env('DEL', 'c1'), conf())).exitCode).toBe(0);
    expect(existsSync(join(dir, 'flannel', 'c1'))).toBe(false);
    expect((await dp.listLinks('/var/run/netns/p1')).some((l) => l.name === 'eth0')).toBe(false);
    expect(readdirSync(join(dir, 'ipam', 'overlay')).filter((f) => /^\d/.test(f))).toEqual([]);
    // DEL again is fine.
    expect((await invoker.invoke('kemu-vxlan', env('DEL', 'c1'), conf())).exitCode).toBe(0);
  });

  it('with FLANNEL_IPMASQ=false lets the bridge masquerade, and merges the delegate settings', async () => {
    const { dir, dp, invoker, conf, env } = setup('masq');
    writeFileSync(join(dir, 'subnet.env'), SUBNET_ENV.replace('IPMASQ=true', 'IPMASQ=false'));
    await dp.addNetns('/var/run/netns/p1');
    const out = await invoker.invoke('kemu-vxlan', env('ADD', 'c2'), conf({ delegate: { bridge: 'kbr9' } }));
    expect(out.exitCode, out.stdout).toBe(0);
    expect(await dp.getLink(HOST_NETNS, 'kbr9')).toBeDefined();
    expect(await dp.getLink(HOST_NETNS, 'cni0')).toBeUndefined();
    expect((await dp.listNatRules(HOST_NETNS)).some((r) => r.kind === 'masquerade')).toBe(true);
  });

  it('fails ADD cleanly, creating nothing, when the agent has not written subnet.env yet', async () => {
    const { dir, dp, invoker, conf, env } = setup('nosubnet');
    rmSync(join(dir, 'subnet.env'));
    await dp.addNetns('/var/run/netns/p1');
    const out = await invoker.invoke('kemu-vxlan', env('ADD', 'c3'), conf());
    expect(JSON.parse(out.stdout)).toMatchObject({
      code: 11,
      msg: `cannot read ${join(dir, 'subnet.env')}: ENOENT (is the kemu-vxlan agent running on this node?)`,
    });
    expect(await dp.getLink(HOST_NETNS, 'cni0')).toBeUndefined();
    expect(existsSync(join(dir, 'flannel'))).toBe(false);
  });

  it('rejects bad configuration with a precise message', async () => {
    const { invoker, conf, env } = setup('bad');
    const msg = async (c: string) =>
      JSON.parse((await invoker.invoke('kemu-vxlan', env('ADD', 'c4'), c)).stdout);
    expect(await msg(conf({ subnetFile: 'relative/subnet.env' }))).toMatchObject({
      code: 7,
      msg: '"subnetFile" must be an absolute path',
    });
    expect(await msg(conf({ dataDir: 5 }))).toMatchObject({
      code: 7,
      msg: '"dataDir" must be an absolute path',
    });
    expect(await msg(conf({ delegate: [] }))).toMatchObject({ code: 7, msg: '"delegate" must be an object' });
    expect(await msg(conf({ delegate: { type: '' } }))).toMatchObject({
      code: 7,
      msg: '"delegate.type" must be a plugin name',
    });
  });

  it('parses subnet.env and names the missing or broken key', () => {
    expect(parseSubnetEnv(SUBNET_ENV)).toEqual({
      network: '10.244.0.0/16',
      subnet: '10.244.3.1/24',
      mtu: 1450,
      ipMasq: true,
    });
    expect(() => parseSubnetEnv('FLANNEL_NETWORK=10.244.0.0/16\n', '/run/flannel/subnet.env')).toThrow(
      '/run/flannel/subnet.env: FLANNEL_SUBNET is missing',
    );
    expect(() =>
      parseSubnetEnv('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=big\n'),
    ).toThrow('subnet.env: FLANNEL_MTU big is not a valid MTU');
  });
});
