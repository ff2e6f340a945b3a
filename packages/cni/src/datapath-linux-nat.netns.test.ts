import { spawnSync } from 'node:child_process';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, describe, expect, it } from 'vitest';
import { createLinuxDatapath } from './datapath-linux.js';
import { type DnatRule, HOST_NETNS, type NatRule } from './datapath.js';
import { addNetns, delNetns } from './testing.js';

const ok = requirePeers('the linux datapath NAT tests', [peers.netns, peers.iptables]);

describe.runIf(ok)('linux datapath NAT rules (read back with iptables -S)', () => {
  const node = addNetns('dpnat');
  const dp = createLinuxDatapath({ hostNetns: node.path });
  afterAll(async () => {
    await dp.close();
    delNetns(node.name);
  });
  const nat = (bin = 'iptables') =>
    spawnSync('ip', ['netns', 'exec', node.name, bin, '-w', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout.split('\n');
  const dnat = (hostPort: number, toIP = '10.1.0.2'): DnatRule => ({
    kind: 'dnat',
    owner: 'portmap n c1',
    protocol: 'tcp',
    hostPort,
    toIP,
    toPort: 80,
    snat: true,
  });

  it('an ADD for an owner replaces its earlier rules; DEL removes them in both families', async () => {
    await dp.addNatRules(HOST_NETNS, [dnat(8080), dnat(8080, 'fd00::2')]);
    await dp.addNatRules(HOST_NETNS, [dnat(8081)]);
    expect((await dp.listNatRules(HOST_NETNS, 'portmap n c1')).map((r) => r.kind === 'dnat' && `${r.toIP}:${r.hostPort}`)).toEqual([
      '10.1.0.2:8081',
      // The ADD programs IPv4 only and, like the reference, leaves the other family to DEL.
      'fd00::2:8080',
    ]);
    expect(nat().filter((l) => l.startsWith('-A KEMU-HOSTPORT-DNAT'))).toHaveLength(1);
    // Node-local clients of 127.0.0.1 are masqueraded towards the pod (IPv4 only: ::1 cannot leave lo).
    expect(nat().some((l) => /-s 127\.0\.0\.1\/32 -d 10\.1\.0\.2\/32 -p tcp .*--dport 80 .*-j MASQUERADE/.test(l))).toBe(true);
    expect(nat('ip6tables').some((l) => l.includes('127.0.0.1') || l.includes('::1'))).toBe(false);
    await dp.delNatRules(HOST_NETNS, 'portmap n c1');
    await dp.delNatRules(HOST_NETNS, 'portmap n c1');
    expect(await dp.listNatRules(HOST_NETNS)).toEqual([]);
    expect([...nat(), ...nat('ip6tables')].filter((l) => /KEMU-(DN|SN|MASQ)-/.test(l))).toEqual([]);
  });

  it('DEL given the families of its ADD removes the rules there and reads no other family', async () => {
    const owner = 'portmap n c9';
    await dp.addNatRules(HOST_NETNS, [{ ...dnat(8090), owner }, { ...dnat(8090, 'fd00::9'), owner }]);
    await dp.delNatRules(HOST_NETNS, owner, { families: [] });
    expect(await dp.listNatRules(HOST_NETNS, owner)).toHaveLength(2);
    await dp.delNatRules(HOST_NETNS, owner, { families: [6] });
    expect((await dp.listNatRules(HOST_NETNS, owner)).map((r) => r.kind === 'dnat' && r.toIP)).toEqual(['10.1.0.2']);
    await dp.delNatRules(HOST_NETNS, owner, { families: [4] });
    await dp.delNatRules(HOST_NETNS, owner, { families: [4] });
    expect(await dp.listNatRules(HOST_NETNS, owner)).toEqual([]);
    expect([...nat(), ...nat('ip6tables')].filter((l) => l.includes(`owner=${owner}`))).toEqual([]);
  });

  it('a masquerade ADD repeated for its owner replaces its rules instead of adding a second set', async () => {
    const masq = (src: string): NatRule => ({ kind: 'masquerade', owner: 'bridge n c7', src, excludeDst: ['10.7.0.0/16'], comment: 'c7' });
    await dp.addNatRules(HOST_NETNS, [masq('10.7.0.2/32')]);
    await dp.addNatRules(HOST_NETNS, [masq('10.7.0.3/32')]);
    await dp.addNatRules(HOST_NETNS, [masq('10.7.0.3/32')]);
    expect(nat().filter((l) => l.includes('owner=bridge n c7'))).toEqual([
      expect.stringMatching(/^-A POSTROUTING -s 10\.7\.0\.3\/32 .*-j KEMU-MASQ-/),
      expect.stringMatching(/^-A KEMU-MASQ-\S+ -d 10\.7\.0\.0\/16 .*-j ACCEPT$/),
      expect.stringMatching(/^-A KEMU-MASQ-\S+ .*-j MASQUERADE$/),
    ]);
    await dp.delNatRules(HOST_NETNS, 'bridge n c7');
    expect(nat().filter((l) => /owner=bridge n c7|KEMU-MASQ-/.test(l))).toEqual([]);
  });

  it('puts the jumps to KEMU-HOSTPORT-DNAT back after a flush of the built-in chains', async () => {
    await dp.addNatRules(HOST_NETNS, [dnat(8082)]);
    spawnSync('ip', ['netns', 'exec', node.name, 'iptables', '-w', '-t', 'nat', '-F', 'PREROUTING']);
    spawnSync('ip', ['netns', 'exec', node.name, 'iptables', '-w', '-t', 'nat', '-F', 'OUTPUT']);
    await dp.addNatRules(HOST_NETNS, [{ ...dnat(8083), owner: 'portmap n c2' }]);
    const jumps = nat().filter((l) => l.endsWith('-j KEMU-HOSTPORT-DNAT'));
    expect(jumps).toEqual([
      '-A PREROUTING -m addrtype --dst-type LOCAL -j KEMU-HOSTPORT-DNAT',
      '-A OUTPUT -m addrtype --dst-type LOCAL -j KEMU-HOSTPORT-DNAT',
    ]);
    await dp.addNatRules(HOST_NETNS, [{ ...dnat(8084), owner: 'portmap n c3' }]);
    expect(nat().filter((l) => l.endsWith('-j KEMU-HOSTPORT-DNAT'))).toHaveLength(2);
    // Only one of the two gone: a new owner's ADD still notices and puts it back, once.
    spawnSync('ip', ['netns', 'exec', node.name, 'iptables', '-w', '-t', 'nat', '-F', 'OUTPUT']);
    await dp.addNatRules(HOST_NETNS, [{ ...dnat(8085), owner: 'portmap n c4' }]);
    expect(nat().filter((l) => l.endsWith('-j KEMU-HOSTPORT-DNAT'))).toEqual(jumps);
    expect(nat().filter((l) => l.startsWith('-A KEMU-HOSTPORT-DNAT'))).toHaveLength(4);
  });
});
