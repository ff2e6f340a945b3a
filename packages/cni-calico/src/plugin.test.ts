import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETNS, invokePlugin, MemoryDatapath } from '@kemu/cni';
import { createFileStore, createMemoryStore, type Store } from '@kemu/core';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { CalicoIpam } from './ipam.js';
import { createCalicoIpamPlugin } from './plugin.js';

const conf = (ipam: Record<string, unknown> = {}) => ({
  cniVersion: '1.0.0',
  name: 'k8s-pod-network',
  type: 'kemu-calico-ipam',
  ipam: { type: 'kemu-calico-ipam', nodename: 'node-1', ...ipam },
});

const env = (command: string, cid: string) => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: cid,
  CNI_NETNS: '/var/run/netns/x',
  CNI_IFNAME: 'eth0',
  CNI_PATH: '/nonexistent',
});

let store: Store;
beforeEach(async () => {
  store = await createMemoryStore();
});

async function run(command: string, cid: string, c: unknown) {
  const plugin = createCalicoIpamPlugin({ store });
  return invokePlugin(plugin, {
    env: env(command, cid),
    stdin: JSON.stringify(c),
    datapath: async () => new MemoryDatapath(),
    delegate: async () => undefined,
  });
}

describe('kemu-calico-ipam plugin (in process)', () => {
  it('ADD allocates a /32 under handle <network>.<containerID>, DEL releases it, GC keeps valid attachments', async () => {
    await new CalicoIpam(store).applyPool('default', { cidr: '10.60.0.0/16' });
    const a = await run('ADD', 'c1', conf());
    expect(a.exitCode).toBe(0);
    expect(JSON.parse(a.stdout).ips).toEqual([{ address: '10.60.0.0/32' }]);
    const ipam = new CalicoIpam(store);
    expect((await ipam.ipsByHandle('k8s-pod-network.c1')).map((x) => x.ip)).toEqual(['10.60.0.0']);
    expect((await run('CHECK', 'c1', conf())).exitCode).toBe(0);
    expect((await run('ADD', 'c2', conf())).exitCode).toBe(0);
    expect((await run('ADD', 'c3', conf())).exitCode).toBe(0);
    expect((await run('DEL', 'c1', conf())).exitCode).toBe(0);
    expect(await ipam.ipsByHandle('k8s-pod-network.c1')).toEqual([]);
    expect((await run('DEL', 'c1', conf())).exitCode).toBe(0); // idempotent
    const gc = await invokePlugin(createCalicoIpamPlugin({ store }), {
      env: { CNI_COMMAND: 'GC', CNI_PATH: '/nonexistent' },
      stdin: JSON.stringify({
        ...conf(),
        cniVersion: '1.1.0',
        'cni.dev/valid-attachments': [{ containerID: 'c3', ifname: 'eth0' }],
      }),
      datapath: async () => new MemoryDatapath(),
      delegate: async () => undefined,
    });
    expect(gc.exitCode).toBe(0);
    expect(await ipam.ipsByHandle('k8s-pod-network.c2')).toEqual([]);
    expect((await ipam.ipsByHandle('k8s-pod-network.c3')).map((x) => x.ip)).toEqual(['10.60.0.2']);
  });

  it('with kemu.blackholes installs the node\'s affine blocks as blackhole routes through the datapath', async () => {
    await new CalicoIpam(store).applyPool('small', { cidr: '10.62.0.0/27', blockSize: 28 });
    const dp = new MemoryDatapath();
    const go = (cmd: string, cid: string) =>
      invokePlugin(createCalicoIpamPlugin({ store }), {
        env: env(cmd, cid),
        stdin: JSON.stringify(conf({ kemu: { blackholes: true } })),
        datapath: async () => dp,
        delegate: async () => undefined,
      });
    const blackholes = async () =>
      (await dp.listRoutes(HOST_NETNS))
        .filter((r) => r.type === 'blackhole')
        .map((r) => r.dst)
        .sort();
    expect((await go('ADD', 'c0')).exitCode).toBe(0);
    expect(await blackholes()).toEqual(['10.62.0.0/28']);
    for (let i = 1; i <= 16; i++) expect((await go('ADD', `c${i}`)).exitCode).toBe(0);
    expect(await blackholes()).toEqual(['10.62.0.0/28', '10.62.0.16/28']);
    const bad = await invokePlugin(createCalicoIpamPlugin({ store }), {
      env: env('ADD', 'x'),
      stdin: JSON.stringify(conf({ kemu: { blackholes: 'yes' } })),
      datapath: async () => dp,
      delegate: async () => undefined,
    });
    expect(JSON.parse(bad.stdout)).toMatchObject({ code: 7, msg: 'ipam "kemu.blackholes" must be true or false' });
  });

  it('rejects a broken pool in the config with a field path, writing nothing', async () => {
    const out = await run(
      'ADD',
      'c1',
      conf({ kemu: { pools: [{ name: 'p', cidr: '10.0.0.0/16', blockSize: 40 }] } }),
    );
    expect(out.exitCode).not.toBe(0);
    const err = JSON.parse(out.stdout);
    expect(err.code).toBe(7);
    expect(err.msg).toMatch(
      /ipam "kemu\.pools"\[0\]: IPPool "p" is invalid: spec\.blockSize: .*between 20 and 32/,
    );
    expect((await store.list('IPPool')).items).toHaveLength(0);
    expect((await store.list('IPAMBlock')).items).toHaveLength(0);
  });

  it('answers a full pool with "try again later" and leaks nothing', async () => {
    await new CalicoIpam(store).applyPool('tiny', { cidr: '10.61.0.0/28', blockSize: 28 });
    for (let i = 0; i < 16; i++) expect((await run('ADD', `c${i}`, conf())).exitCode).toBe(0);
    const out = await run('ADD', 'c16', conf());
    expect(JSON.parse(out.stdout)).toMatchObject({
      code: 11,
      msg: expect.stringMatching(/no free address left in IP pools 10\.61\.0\.0\/28/),
    });
    expect(await new CalicoIpam(store).ipsByHandle('k8s-pod-network.c16')).toEqual([]);
  });

  it('names bad store URLs and node names precisely', async () => {
    const plugin = createCalicoIpamPlugin();
    const go = (c: unknown) =>
      invokePlugin(plugin, {
        env: env('ADD', 'c1'),
        stdin: JSON.stringify(c),
        datapath: async () => new MemoryDatapath(),
        delegate: async () => undefined,
      });
    expect(JSON.parse((await go(conf({ kemu: { store: 'http://x' } }))).stdout).msg).toBe(
      'ipam "kemu.store" must be "etcd://host:port" or "file:/path", got "http://x"',
    );
    expect(JSON.parse((await go(conf())).stdout).msg).toMatch(/ipam "kemu\.store" is required/);
    expect(JSON.parse((await go(conf({ nodename: 'Node_1' }))).stdout).msg).toMatch(
      /ipam "nodename": "Node_1" is not a valid node name/,
    );
    expect(JSON.parse((await go(conf({ ipv4_pools: 'x' }))).stdout).msg).toBe(
      'ipam "ipv4_pools" must be a list of pool names or CIDRs',
    );
  });
});

describe('kemu-calico-ipam executable with a file store', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kemu-calico-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const exec = (command: string, cid: string, c: unknown) =>
    new Promise<{ code: number; stdout: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        ['--conditions=@kemu/source', '--import', 'tsx', join(import.meta.dirname, 'main.ts')],
        {
          env: { ...env(command, cid), PATH: process.env.PATH },
        },
      );
      let stdout = '';
      child.stdout.on('data', (b: Buffer) => {
        stdout += b.toString();
      });
      child.on('close', (code) => resolve({ code: code ?? 1, stdout }));
      child.stdin.end(JSON.stringify(c));
    });

  it('allocates through the store named in the config, and the allocation is visible to other clients', async () => {
    const c = conf({
      kemu: {
        store: `file:${dir}/store`,
        pools: [{ name: 'default', cidr: '10.70.0.0/16', natOutgoing: true }],
      },
    });
    const a = await exec('ADD', 'pod-a', c);
    expect(a.code).toBe(0);
    expect(JSON.parse(a.stdout).ips).toEqual([{ address: '10.70.0.0/32' }]);
    const b = await exec('ADD', 'pod-b', c);
    expect(JSON.parse(b.stdout).ips).toEqual([{ address: '10.70.0.1/32' }]);
    expect((await exec('DEL', 'pod-a', c)).code).toBe(0);
    const s = await createFileStore({ dir: `${dir}/store` });
    try {
      const ipam = new CalicoIpam(s);
      expect(await ipam.ipsByHandle('k8s-pod-network.pod-a')).toEqual([]);
      expect((await ipam.ipsByHandle('k8s-pod-network.pod-b')).map((x) => x.ip)).toEqual(['10.70.0.1']);
      expect(await ipam.affineBlocks('node-1')).toEqual(['10.70.0.0/26']);
      expect((await s.get('IPPool', '', 'default')).spec).toMatchObject({ natOutgoing: true, blockSize: 26 });
    } finally {
      await s.close();
    }
  }, 60_000);
});
