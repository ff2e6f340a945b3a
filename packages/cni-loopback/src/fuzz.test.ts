// Seeded, time-bounded fuzzing of kemu-loopback on the simulated datapath.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InProcessInvoker } from '@kemu/cni';
import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { type FuzzTarget, fuzzCni } from '@kemu/cni/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { loopback } from './loopback.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-lo-fuzz-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
writeFileSync(join(tmp, 'file'), 'not a namespace');
symlinkSync('/dev/zero', join(tmp, 'zero-link'));
const POD = '/var/run/netns/fuzzlo';

describe('kemu-loopback under fuzzed config and environment', () => {
  it('every call ends with a result or a spec error, and creates no link', async () => {
    const target: FuzzTarget = {
      env: { CNI_CONTAINERID: 'fuzz1', CNI_NETNS: POD, CNI_IFNAME: 'lo', CNI_PATH: '/opt/cni/bin' },
      paths: [join(tmp, 'file'), join(tmp, 'zero-link'), `${tmp}/../${tmp.split('/').pop()}/file`, POD],
      async world() {
        const dp = createSimDatapath();
        await dp.addNetns(POD);
        const invoker = new InProcessInvoker({ plugins: [loopback], datapath: dp });
        return {
          config: { cniVersion: '1.0.0', name: 'fuzzlo', type: 'kemu-loopback', prevResult: { cniVersion: '1.0.0', ips: [{ address: '10.0.0.2/24' }] } },
          invoke: ({ env, stdin }) => invoker.invoke('kemu-loopback', env, stdin),
          leftovers: async () => (await dp.listLinks(POD)).filter((l) => l.name !== 'lo').map((l) => `pod link ${l.name}`),
        };
      },
    };
    const report = await fuzzCni(target, { timeLimitMs: 3000, minRuns: 40 });
    expect(report.outcomes['ADD ok']).toBeGreaterThan(0);
  });
});
