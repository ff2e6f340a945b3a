// Seeded, time-bounded fuzzing of kemu-vxlan (delegating to kemu-bridge and kemu-host-local in process).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOST_NETNS, InProcessInvoker } from '@kemu/cni';
import { createSimDatapath } from '@kemu/cni/datapath-sim';
import { type FuzzTarget, fuzzCni, leftoverFiles } from '@kemu/cni/testing';
import { bridge } from '@kemu/cni-bridge';
import { hostLocal } from '@kemu/cni-host-local';
import { afterAll, describe, expect, it } from 'vitest';
import { vxlan } from './plugin.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-vxlan-fuzz-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const fixtures = join(tmp, 'fixtures');
mkdirSync(join(fixtures, 'dir'), { recursive: true });
writeFileSync(join(fixtures, 'subnet.env'), 'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\n');
writeFileSync(join(fixtures, 'bad.env'), 'FLANNEL_NETWORK=banana\nFLANNEL_SUBNET=10.244.3.1/33\nFLANNEL_MTU=-1\n');
symlinkSync('/dev/zero', join(fixtures, 'zero-link'));
const POD = '/var/run/netns/fuzzvx';

let n = 0;
describe('kemu-vxlan under fuzzed config and environment', () => {
  it('every call ends with a result or a spec error; nothing outlives a case', async () => {
    const target: FuzzTarget = {
      env: { CNI_CONTAINERID: 'fuzz1', CNI_NETNS: POD, CNI_IFNAME: 'eth0', CNI_PATH: '/opt/cni/bin' },
      paths: [join(fixtures, 'subnet.env'), join(fixtures, 'bad.env'), join(fixtures, 'zero-link'), join(fixtures, 'dir'), `${fixtures}/../fixtures/subnet.env`],
      async world() {
        const caseDir = join(tmp, 'case', String(n++));
        const dp = createSimDatapath();
        await dp.addNetns(POD);
        const invoker = new InProcessInvoker({ plugins: [vxlan, bridge, hostLocal], datapath: dp });
        return {
          config: {
            cniVersion: '1.0.0',
            name: 'overlay',
            type: 'kemu-vxlan',
            subnetFile: join(fixtures, 'subnet.env'),
            dataDir: join(caseDir, 'flannel'),
            ipam: { dataDir: join(caseDir, 'ipam') },
            delegate: { hairpinMode: false, mtu: 1400 },
          },
          invoke: ({ env, stdin }) => invoker.invoke('kemu-vxlan', env, stdin),
          async leftovers() {
            return [
              ...(await dp.listLinks(HOST_NETNS)).filter((l) => l.kind === 'veth').map((l) => `host link ${l.name}`),
              ...(await dp.listLinks(POD)).filter((l) => l.name !== 'lo').map((l) => `pod link ${l.name}`),
              ...leftoverFiles(caseDir, (d, name) => d === join(caseDir, 'flannel') && !name.endsWith('.tmp')),
            ];
          },
        };
      },
    };
    const report = await fuzzCni(target, { timeLimitMs: 4000, minRuns: 30 });
    if (process.env.KEMU_FUZZ_REPORT) console.log(JSON.stringify(report));
    expect(report.outcomes['ADD ok']).toBeGreaterThan(0);
  }, 60_000);
});
