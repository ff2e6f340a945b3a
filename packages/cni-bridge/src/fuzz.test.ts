// Seeded, time-bounded fuzzing of kemu-bridge (with kemu-host-local in process) on the simulated datapath.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { HOST_NETNS, InProcessInvoker } from '@kemu/cni';
import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { type FuzzTarget, fuzzCni, leftoverFiles } from '@kemu/cni/testing';
import { hostLocal } from '@kemu/cni-host-local';
import { afterAll, describe, expect, it } from 'vitest';
import { bridge } from './bridge.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-br-fuzz-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const fixtures = join(tmp, 'fixtures');
mkdirSync(join(fixtures, 'dir'), { recursive: true });
writeFileSync(join(fixtures, 'file'), 'not a namespace');
symlinkSync('/dev/zero', join(fixtures, 'zero-link'));

// The pod's namespace lives in the simulated datapath only; its path is under the test's own directory so a
// fuzzed path field (an IPAM dataDir, say) that names it creates nothing outside that directory.
const POD = join(tmp, 'netns', 'fuzzpod');
let n = 0;
describe('kemu-bridge under fuzzed config and environment', () => {
  it('every call ends with a result or a spec error; ADD+DEL or a failed ADD leave no veth, address, NAT rule or IP', async () => {
    const target: FuzzTarget = {
      env: { CNI_CONTAINERID: 'fuzz1', CNI_NETNS: POD, CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin' },
      paths: [join(fixtures, 'dir'), join(fixtures, 'file'), join(fixtures, 'zero-link'), `${fixtures}/../${basename(fixtures)}/file`, POD],
      commands: ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC'],
      async world() {
        // What an earlier failing case left in the fixtures must not be blamed on this one.
        for (const f of leftoverFiles(fixtures)) rmSync(f);
        const dataDir = join(tmp, 'data', String(n++));
        const dp = createSimDatapath();
        await dp.addNetns(POD);
        const invoker = new InProcessInvoker({ plugins: [bridge, hostLocal], datapath: dp });
        return {
          config: {
            cniVersion: '1.1.0',
            name: 'fuzzbr',
            type: 'kemu-bridge',
            bridge: 'kbr0',
            isGateway: true,
            isDefaultGateway: true,
            ipMasq: true,
            mtu: 1400,
            hairpinMode: true,
            dns: { nameservers: ['10.67.0.53'] },
            ipam: {
              type: 'kemu-host-local',
              dataDir,
              ranges: [[{ subnet: '10.67.0.0/24' }]],
              routes: [{ dst: '192.168.0.0/16' }],
            },
          },
          invoke: ({ env, stdin }) => invoker.invoke('kemu-bridge', env, stdin),
          async leftovers() {
            const left = [
              ...(await dp.listLinks(HOST_NETNS)).filter((l) => l.kind === 'veth').map((l) => `host link ${l.name}`),
              ...(await dp.listLinks(POD)).filter((l) => l.name !== 'lo').map((l) => `pod link ${l.name}`),
              ...(await dp.listNatRules(HOST_NETNS)).map((r) => `NAT rule ${r.owner}`),
              ...leftoverFiles(dataDir),
              ...leftoverFiles(fixtures),
            ];
            return left;
          },
        };
      },
    };
    const report = await fuzzCni(target, { timeLimitMs: 5000, minRuns: 40 });
    if (process.env.KEMU_FUZZ_REPORT) console.log(JSON.stringify(report));
    expect(report.outcomes['ADD ok']).toBeGreaterThan(0);
  }, 60_000);
});
