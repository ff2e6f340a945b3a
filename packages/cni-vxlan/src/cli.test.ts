import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETNS } from '@kemu/cni';
import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { createFileStore } from '@kemu/core';
import { afterAll, describe, expect, it } from 'vitest';
import { ANNOTATIONS } from './agent.js';
import { parseAgentArgs } from './cli.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-vxlan-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@kemu/source', '--import', 'tsx', join(import.meta.dirname, 'main.ts'), ...args],
      {
        env: { PATH: process.env.PATH, ...env },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

describe('kemu-vxlan agent command', () => {
  it('parses flags with flannel-like defaults and rejects bad ones', () => {
    expect(parseAgentArgs(['--store', 'file:/x', '--node', 'n1', '--public-ip', '10.0.0.1'])).toMatchObject({
      vni: 1,
      port: 8472,
      network: '10.244.0.0/16',
      subnetLen: 24,
      subnetFile: '/run/flannel/subnet.env',
      ipMasq: true,
    });
    expect(() =>
      parseAgentArgs(['--store', 'file:/x', '--node', 'n1', '--public-ip', '10.0.0.1', '--port', 'x']),
    ).toThrow('--port: "x" is not a number');
    expect(() => parseAgentArgs(['--store', 'mysql://x', '--node', 'n1', '--public-ip', '1.2.3.4'])).toThrow(
      '--store must be etcd://host:port or file:/path, got "mysql://x"',
    );
    expect(() => parseAgentArgs(['--bogus'])).toThrow(/Unknown option '--bogus'/);
  });

  it('programs a node from the store once (--once) on a simulated datapath, and reports bad input in one line', async () => {
    const storeDir = join(tmp, 'store');
    const s = await createFileStore({ dir: storeDir });
    await s.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: {} });
    await s.create({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'n2',
        annotations: {
          [ANNOTATIONS.backendType]: 'vxlan',
          [ANNOTATIONS.backendData]: '{"VNI":4096,"VtepMAC":"0a:58:0a:00:00:02"}',
          [ANNOTATIONS.publicIp]: '192.0.2.2',
        },
      },
      spec: { podCIDR: '10.244.7.0/24' },
    });
    await s.close();
    const state = join(tmp, 'netsim.json');
    const env = { KEMU_DATAPATH: 'sim', KEMU_NETSIM_STATE: state };
    const common = [
      'agent',
      '--store',
      `file:${storeDir}`,
      '--node',
      'n1',
      '--public-ip',
      '192.0.2.1',
      '--vni',
      '4096',
      '--port',
      '4789',
    ];
    const r = await run([...common, '--once', '--subnet-file', join(tmp, 'subnet.env')], env);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      node: 'n1',
      subnet: '10.244.0.0/24',
      remotes: [{ name: 'n2', vtepIp: '10.244.7.0' }],
    });
    expect(readFileSync(join(tmp, 'subnet.env'), 'utf8')).toBe(
      'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.0.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n',
    );
    const dp = createSimDatapath({ statePath: state });
    expect(await dp.getLink(HOST_NETNS, 'flannel.4096')).toMatchObject({
      kind: 'vxlan',
      vxlan: { vni: 4096, port: 4789 },
    });
    expect(await dp.listRoutes(HOST_NETNS, { dev: 'flannel.4096' })).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ dst: '10.244.7.0/24', via: '10.244.7.0', onlink: true }),
      ]),
    );

    const bad = await run(
      [
        ...common.slice(0, -4),
        '--vni',
        '0',
        '--port',
        '4789',
        '--once',
        '--subnet-file',
        join(tmp, 's2.env'),
      ],
      env,
    );
    expect(bad).toMatchObject({ code: 1, stderr: 'kemu-vxlan: vni 0: must be between 1 and 16777215\n' });
    const usage = await run(['agent', '--node', 'n1'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr.split('\n')[0]).toBe('kemu-vxlan: --store is required');
  }, 60_000);
});
