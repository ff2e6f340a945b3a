// Seeded, time-bounded fuzzing of kemu-host-local (KEMU_FUZZ_SEED / KEMU_FUZZ_MS replay or lengthen a run).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { execDelegate, invokePlugin } from '@kemu/cni';
import { buildPluginBins, type FuzzTarget, fuzzCni, leftoverFiles, runPlugin } from '@kemu/cni/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostLocal } from './host-local.js';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-hl-fuzz-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const fixtures = join(tmp, 'fixtures');
const paths = [
  join(fixtures, 'resolv.conf'),
  join(fixtures, 'zero-link'),
  join(fixtures, 'fifo'),
  join(fixtures, 'dir'),
  join(fixtures, 'big'),
  join(fixtures, 'missing'),
  `${fixtures}/../${basename(fixtures)}/dir`,
  '/dev/zero',
];
beforeAll(() => {
  mkdirSync(join(fixtures, 'dir'), { recursive: true });
  writeFileSync(join(fixtures, 'resolv.conf'), 'nameserver 10.0.0.53\nsearch example\n');
  writeFileSync(join(fixtures, 'big'), 'x'.repeat(100 << 10));
  symlinkSync('/dev/zero', join(fixtures, 'zero-link'));
  spawnSync('mkfifo', [join(fixtures, 'fifo')]);
});

let n = 0;
const config = (dataDir: string) => ({
  cniVersion: '1.1.0',
  name: 'fuzznet',
  type: 'kemu-host-local',
  ipam: {
    type: 'kemu-host-local',
    dataDir,
    resolvConf: join(fixtures, 'resolv.conf'),
    ranges: [[{ subnet: '10.66.0.0/24', rangeStart: '10.66.0.10', rangeEnd: '10.66.0.20', gateway: '10.66.0.1' }], [{ subnet: 'fd00:66::/64' }]],
    routes: [{ dst: '0.0.0.0/0' }, { dst: '192.168.0.0/16', gw: '10.66.0.1' }],
  },
  runtimeConfig: { ips: ['10.66.0.15'] },
  args: { cni: { ips: [] } },
});
const env = { CNI_CONTAINERID: 'fuzz1', CNI_NETNS: '/var/run/netns/fuzz', CNI_IFNAME: 'eth0', CNI_PATH: '/nonexistent' };

describe('kemu-host-local under fuzzed config and environment', () => {
  it('in process: every call ends with a result or a spec error, and nothing is left allocated', async () => {
    const target: FuzzTarget = {
      env,
      paths,
      commands: ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC'],
      async world() {
        return {
          config: config(join(tmp, 'data', String(n++))),
          invoke: ({ env: e, stdin }) =>
            invokePlugin(hostLocal, { env: e, stdin, delegate: execDelegate, datapath: async () => Promise.reject(new Error('no datapath')) }),
          leftovers: async () => leftoverFiles(tmp),
        };
      },
    };
    const report = await fuzzCni(target, { timeLimitMs: 4000, minRuns: 50 });
    if (process.env.KEMU_FUZZ_REPORT) console.log(JSON.stringify(report));
    // The run exercised both outcomes: successes and refusals.
    expect(Object.keys(report.outcomes).some((k) => k === 'ADD ok')).toBe(true);
    expect(Object.keys(report.outcomes).some((k) => k.startsWith('ADD error'))).toBe(true);
  });

  it('the executable: the same contract through a real process start', async () => {
    const bin = await buildPluginBins(join(tmp, 'bin'), ['host-local']);
    const target: FuzzTarget = {
      env: { ...env, CNI_PATH: bin },
      paths,
      async world() {
        return {
          config: config(join(tmp, 'exec', String(n++))),
          invoke: async ({ env: e, stdin }) => {
            const r = await runPlugin(join(bin, 'kemu-host-local'), e.CNI_COMMAND!, stdin, {
              containerId: e.CNI_CONTAINERID,
              netns: e.CNI_NETNS,
              ifname: e.CNI_IFNAME,
              path: e.CNI_PATH,
              args: e.CNI_ARGS,
            });
            return { exitCode: r.exitCode, stdout: r.stdout };
          },
          leftovers: async () => leftoverFiles(tmp),
        };
      },
    };
    // A process start per call: a handful of cases, enough to show the executable keeps the same contract.
    await fuzzCni(target, { seed: 7, timeLimitMs: 4000, minRuns: 3 });
  }, 60_000);
});
