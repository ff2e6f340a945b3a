// Several plugin processes on two nodes allocating at once through one real etcd: the compare-and-swap
// writes must hold across processes, not only within one.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEtcdStore } from '@kemu/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { program, requirePeers } from '@kemu/test-peers';
import { CalicoIpam, within } from './ipam.js';

const ETCD = process.env.KEMU_ETCD ?? '/usr/bin/etcd';
const haveEtcd = requirePeers('the kemu-calico-ipam etcd test', [program(ETCD, 'etcd-server')]);

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });

describe.runIf(haveEtcd)('kemu-calico-ipam processes sharing etcd', () => {
  let etcd: ChildProcess;
  let hostPort = '';
  const dir = mkdtempSync(join(tmpdir(), 'kemu-calico-etcd-'));

  beforeAll(async () => {
    const [c, p] = [await freePort(), await freePort()];
    hostPort = `127.0.0.1:${c}`;
    etcd = spawn(
      ETCD,
      [
        '--data-dir',
        join(dir, 'data'),
        '--listen-client-urls',
        `http://${hostPort}`,
        '--advertise-client-urls',
        `http://${hostPort}`,
        '--listen-peer-urls',
        `http://127.0.0.1:${p}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${p}`,
        '--initial-cluster',
        `default=http://127.0.0.1:${p}`,
        '--log-level',
        'error',
      ],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 200; i++) {
      const ok = await fetch(`http://${hostPort}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('etcd did not start');
  }, 30_000);

  afterAll(async () => {
    if (etcd && etcd.exitCode === null) {
      etcd.kill('SIGTERM');
      await new Promise((r) => etcd.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const add = (node: string, cid: string) =>
    new Promise<{ code: number; stdout: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        ['--conditions=@kemu/source', '--import', 'tsx', join(import.meta.dirname, 'main.ts')],
        {
          env: {
            PATH: process.env.PATH,
            CNI_COMMAND: 'ADD',
            CNI_CONTAINERID: cid,
            CNI_NETNS: '/var/run/netns/x',
            CNI_IFNAME: 'eth0',
            CNI_PATH: '/x',
          },
        },
      );
      let stdout = '';
      child.stdout.on('data', (b: Buffer) => {
        stdout += b.toString();
      });
      child.on('close', (code) => resolve({ code: code ?? 1, stdout }));
      child.stdin.end(
        JSON.stringify({
          cniVersion: '1.0.0',
          name: 'net',
          type: 'kemu-calico-ipam',
          ipam: { type: 'kemu-calico-ipam', nodename: node, kemu: { store: `etcd://${hostPort}` } },
        }),
      );
    });

  it('gives every process a distinct address from its own node’s block, one block claim per node', async () => {
    const seed = await createEtcdStore({ endpoints: `http://${hostPort}` });
    await new CalicoIpam(seed).applyPool('default', { cidr: '10.90.0.0/24', blockSize: 26 });
    const jobs = ['node-a', 'node-b', 'node-a', 'node-b', 'node-a', 'node-b'].map((n, i) =>
      add(n, `c${i}`).then((r) => ({ n, ...r })),
    );
    const out = await Promise.all(jobs);
    for (const o of out) expect(o.code, o.stdout).toBe(0);
    const ips = out.map((o) => JSON.parse(o.stdout).ips[0].address as string);
    expect(new Set(ips).size).toBe(6);
    const ipam = new CalicoIpam(seed);
    const [ba] = await ipam.affineBlocks('node-a');
    const [bb] = await ipam.affineBlocks('node-b');
    expect(await ipam.affineBlocks('node-a')).toHaveLength(1);
    expect(await ipam.affineBlocks('node-b')).toHaveLength(1);
    expect(ba).not.toBe(bb);
    for (const [i, o] of out.entries()) expect(within(o.n === 'node-a' ? ba! : bb!, ips[i]!)).toBe(true);
    expect((await seed.list('BlockAffinity')).items.every((a) => a.spec.state === 'confirmed')).toBe(true);
    await seed.close();
  }, 90_000);
});
