// The same configs through the reference host-local and kemu-host-local: where the reference is right, kemu
// answers the same; where kemu is deliberately stricter (README, "Where kemu is stricter") the case says so.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPluginBins, REFERENCE_BIN_DIR, runPlugin } from '@kemu/cni/testing';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const tmp = mkdtempSync(join(tmpdir(), 'kemu-hl-ref-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ok = requirePeers('the host-local config differential tests', [peers.referenceCni]);

interface Case {
  name: string;
  ipam?: Record<string, unknown>;
  top?: Record<string, unknown>;
  /** same: identical result, or both fail (kemu with `code`); stricter: the reference succeeds, kemu fails with `code`. */
  expect: 'same' | 'stricter';
  code?: number;
  msg?: RegExp;
}

const cases: Case[] = [
  { name: 'a valid range', expect: 'same' },
  { name: 'host bits set in the subnet', ipam: { ranges: [[{ subnet: '10.77.0.1/24' }]] }, expect: 'same', code: 7, msg: /host bits set; for a \/24 the network address is 10\.77\.0\.0/ },
  { name: 'an IPv4-mapped IPv6 subnet', ipam: { ranges: [[{ subnet: '::ffff:10.0.0.0/120' }]] }, expect: 'same', code: 7, msg: /IPv4-mapped IPv6/ },
  { name: 'the IPv4-mapped /96', ipam: { ranges: [[{ subnet: '::ffff:0:0/96' }]] }, expect: 'same', code: 7, msg: /IPv4-mapped IPv6/ },
  { name: '0.0.0.0/0', ipam: { ranges: [[{ subnet: '0.0.0.0/0' }]] }, expect: 'same', code: 7, msg: /whole address space/ },
  { name: '::/0', ipam: { ranges: [[{ subnet: '::/0' }]] }, expect: 'same', code: 7, msg: /whole address space/ },
  { name: 'a /31', ipam: { ranges: [[{ subnet: '10.0.0.0/31' }]] }, expect: 'same', code: 7, msg: /too small/ },
  { name: 'a /30', ipam: { ranges: [[{ subnet: '10.0.0.0/30' }]] }, expect: 'same' },
  { name: 'an IPv6 /64', ipam: { ranges: [[{ subnet: 'fd00:5::/64' }]] }, expect: 'same' },
  { name: 'a prefix over 32', ipam: { ranges: [[{ subnet: '10.0.0.0/33' }]] }, expect: 'same', code: 7, msg: /"subnet"/ },
  { name: 'the legacy single range with host bits', ipam: { ranges: undefined, subnet: '10.78.0.9/16' }, expect: 'same', code: 7, msg: /host bits/ },
  { name: 'overlapping ranges', ipam: { ranges: [[{ subnet: '10.0.0.0/24' }, { subnet: '10.0.0.0/25' }]] }, expect: 'same', code: 7, msg: /overlap/ },
  { name: 'rangeStart after rangeEnd', ipam: { ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.50', rangeEnd: '10.0.0.10' }]] }, expect: 'same', code: 7 },
  { name: 'no ranges', ipam: { ranges: undefined }, expect: 'same', code: 7, msg: /no IP ranges/ },
  { name: '"ranges" of the wrong type', ipam: { ranges: 'x' }, expect: 'same', code: 7, msg: /"ranges" must be a list/ },
  { name: '"subnet" of the wrong type', ipam: { ranges: [[{ subnet: 5 }]] }, expect: 'same', code: 7, msg: /"subnet" must be a string/ },
  { name: 'a bad route', ipam: { routes: [{ dst: 'nope' }] }, expect: 'same', code: 7, msg: /"routes"\[0\]/ },
  { name: 'a bad requested IP', top: { args: { cni: { ips: ['bogus'] } } }, expect: 'same', code: 7, msg: /bogus/ },
  { name: 'no ipam section', top: { ipam: undefined }, expect: 'same', code: 7, msg: /"ipam"/ },
  { name: 'a gateway outside the subnet', ipam: { ranges: [[{ subnet: '10.0.0.0/24', gateway: '10.9.9.9' }]] }, expect: 'stricter', code: 7, msg: /"gateway" 10\.9\.9\.9 not in network/ },
  { name: 'no cniVersion (0.1.0 to the reference)', top: { cniVersion: undefined }, expect: 'stricter', code: 1, msg: /incompatible CNI versions/ },
];

describe.runIf(ok)('kemu-host-local and the reference host-local on the same configs', () => {
  let bin = '';
  beforeAll(async () => {
    bin = await buildPluginBins(join(tmp, 'bin'), ['host-local']);
  }, 60_000);

  it.each(cases)('$name', async (c) => {
    const results = [];
    for (const file of [join(REFERENCE_BIN_DIR, 'host-local'), join(bin, 'kemu-host-local')]) {
      const dataDir = join(tmp, `${c.name.replace(/\W+/g, '-')}-${file.includes('kemu') ? 'kemu' : 'ref'}`);
      const ipam = { type: 'host-local', dataDir, ranges: [[{ subnet: '10.66.0.0/24' }]], ...c.ipam };
      const conf = { cniVersion: '1.0.0', name: 'refnet', type: 'host-local', ipam, ...c.top };
      results.push(
        await runPlugin(file, 'ADD', conf, { containerId: 'c1', netns: '/var/run/netns/x', ifname: 'eth0', path: bin }),
      );
    }
    const [ref, kemu] = results as [Awaited<ReturnType<typeof runPlugin>>, Awaited<ReturnType<typeof runPlugin>>];
    if (c.expect === 'stricter') expect(ref.exitCode, ref.stdout).toBe(0);
    if (c.expect === 'same' && c.code === undefined) {
      expect(ref.exitCode, ref.stdout).toBe(0);
      expect(kemu.json).toEqual(ref.json);
      return;
    }
    if (c.expect === 'same') expect(ref.exitCode, `the reference accepted it: ${ref.stdout}`).toBe(1);
    expect(kemu.exitCode).toBe(1);
    expect(kemu.json.code, kemu.stdout).toBe(c.code);
    if (c.msg) expect(kemu.json.msg).toMatch(c.msg);
    expect(kemu.stdout).not.toMatch(/\s+at\s.+:\d+:\d+/);
  });
});
