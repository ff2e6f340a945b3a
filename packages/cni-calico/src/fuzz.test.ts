// Seeded, time-bounded fuzzing of kemu-calico-ipam's config validation and IPAM, in process on a memory store.
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { invokePlugin, MemoryDatapath } from '@kemu/cni';
import { type FuzzTarget, fuzzCni } from '@kemu/cni/testing';
import { createMemoryStore } from '@kemu/core';
import { afterAll, describe, expect, it } from 'vitest';
import { CalicoIpam } from './ipam.js';
import { createCalicoIpamPlugin } from './plugin.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-calico-fuzz-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
symlinkSync('/dev/zero', join(tmp, 'zero-link'));

describe('kemu-calico-ipam under fuzzed config and environment', () => {
  it('every call ends with a result or a spec error, and no address stays allocated', async () => {
    const target: FuzzTarget = {
      env: { CNI_CONTAINERID: 'fuzz1', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/nonexistent' },
      paths: [join(tmp, 'zero-link'), `file:${tmp}/../x`],
      commands: ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC'],
      async world() {
        const store = await createMemoryStore();
        const ipam = new CalicoIpam(store);
        await ipam.applyPool('default', { cidr: '10.60.0.0/24', blockSize: 28 });
        const plugin = createCalicoIpamPlugin({ store });
        return {
          config: {
            cniVersion: '1.1.0',
            name: 'k8s-pod-network',
            type: 'kemu-calico-ipam',
            ipam: {
              type: 'kemu-calico-ipam',
              nodename: 'node-1',
              ipv4_pools: ['default'],
              kemu: { blackholes: false, pools: [{ name: 'extra', cidr: '10.61.0.0/24', blockSize: 28 }] },
            },
          },
          invoke: ({ env, stdin }) => invokePlugin(plugin, { env, stdin, datapath: async () => new MemoryDatapath(), delegate: async () => undefined }),
          async leftovers() {
            const held = [...(await ipam.ipsByHandle('k8s-pod-network.fuzz1'))];
            return held.map((a) => `address ${a.ip}`);
          },
        };
      },
    };
    const report = await fuzzCni(target, { timeLimitMs: 4000, minRuns: 30 });
    if (process.env.KEMU_FUZZ_REPORT) console.log(JSON.stringify(report));
    expect(report.outcomes['ADD ok']).toBeGreaterThan(0);
  }, 60_000);
});
