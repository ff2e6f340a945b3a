import { describe, expect, it } from 'vitest';
import { execDelegate } from './invoke-exec.js';
import { type CniPlugin, invokePlugin } from './skeleton.js';
import { contractProblem, type FuzzTarget, fuzzCni } from './testing-fuzz.js';

const env = { CNI_CONTAINERID: 'c1', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/nonexistent' };
const config = { cniVersion: '1.0.0', name: 'n', type: 't', ipam: { type: 'x', subnet: '10.0.0.0/24' }, mtu: 1500 };

function target(plugin: CniPlugin, leftovers: () => string[] = () => []): FuzzTarget {
  return {
    env,
    async world() {
      return {
        config,
        invoke: ({ env: e, stdin }) => invokePlugin(plugin, { env: e, stdin, delegate: execDelegate, datapath: () => Promise.reject(new Error('none')) }),
        leftovers: async () => leftovers(),
      };
    },
  };
}

const ok: CniPlugin = {
  name: 't',
  async add(ctx) {
    return { cniVersion: ctx.version, ips: [{ address: '10.0.0.2/24' }] };
  },
  async del() {},
};

describe('the fuzz harness', () => {
  it('judges outputs by the contract', () => {
    expect(contractProblem('ADD', { exitCode: 0, stdout: '{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]}' })).toBeUndefined();
    expect(contractProblem('DEL', { exitCode: 0, stdout: '' })).toBeUndefined();
    expect(contractProblem('ADD', { exitCode: 1, stdout: '{"cniVersion":"1.0.0","code":7,"msg":"bad"}' })).toBeUndefined();
    expect(contractProblem('ADD', { exitCode: 1, stdout: '{"cniVersion":"1.0.0","code":999,"msg":"x is undefined"}' })).toMatch(/error code 999/);
    expect(contractProblem('ADD', { exitCode: 1, stdout: 'TypeError: x\n    at f (/a.js:1:2)' })).toMatch(/stack trace/);
    expect(contractProblem('ADD', { exitCode: 0, stdout: '{"cniVersion":"1.0.0","ips":[{"address":"bogus"}]}' })).toMatch(/malformed ip/);
    expect(contractProblem('ADD', { exitCode: 1, stdout: '' })).toMatch(/non-JSON/);
  });

  it('passes a plugin that keeps the contract', async () => {
    const r = await fuzzCni(target(ok), { timeLimitMs: 500, minRuns: 20 });
    expect(r.runs).toBeGreaterThanOrEqual(20);
  });

  it('fails a plugin that crashes on a field of the wrong type', async () => {
    const crashy: CniPlugin = {
      ...ok,
      async add(ctx) {
        // No check of the type: a number here is a TypeError, reported as code 999.
        return { cniVersion: ctx.version, ips: [{ address: `10.0.0.${(ctx.conf.ipam as { subnet: string }).subnet.length}/24` }] };
      },
    };
    await expect(fuzzCni(target(crashy), { timeLimitMs: 3000 })).rejects.toThrow(/error code 999|malformed ip/);
  });

  it('fails a plugin that leaves something behind, or never answers', async () => {
    const leaked: string[] = [];
    const leaky: CniPlugin = {
      ...ok,
      async add(ctx) {
        if (ctx.conf.mtu !== 1500) leaked.push('a veth');
        throw new Error('refused');
      },
    };
    await expect(fuzzCni(target(leaky, () => leaked), { timeLimitMs: 3000 })).rejects.toThrow(/left behind: a veth|error code 999/);
    const stuck: CniPlugin = {
      ...ok,
      add: (ctx) => (ctx.conf.mtu === 1500 ? ok.add(ctx) : new Promise(() => {})),
    };
    await expect(fuzzCni(target(stuck), { timeLimitMs: 3000, callTimeoutMs: 100 })).rejects.toThrow(/did not end within 100 ms/);
  });
});
