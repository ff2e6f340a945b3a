// The bridge against the reference on inputs the main differential test does not cover: no IPAM (layer 2
// only) and container namespace paths that are not network namespaces.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addNetns, buildPluginBins, delAllNetns, ipJson, REFERENCE_BIN_DIR, runPlugin } from '@kemu/cni/testing';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ok = requirePeers('the bridge input netns tests', [peers.netns, peers.referenceCni]);

const tmp = mkdtempSync(join(tmpdir(), 'kemu-br-in-'));
let bin = '';
beforeAll(async () => {
  if (ok) bin = await buildPluginBins(join(tmp, 'bin'), ['bridge', 'host-local']);
}, 60_000);
afterAll(() => {
  delAllNetns();
  rmSync(tmp, { recursive: true, force: true });
});

const sides = () => [
  { file: join(REFERENCE_BIN_DIR, 'bridge'), type: 'bridge', ipam: 'host-local' },
  { file: join(bin, 'kemu-bridge'), type: 'kemu-bridge', ipam: 'kemu-host-local' },
];
const normalise = (res: any) => ({
  ...res,
  interfaces: res.interfaces?.map((i: any) => ({
    ...i,
    name: i.name.startsWith('veth') ? 'veth*' : i.name,
    mac: /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/.test(i.mac) ? 'mac' : i.mac,
  })),
});
const podState = (ns: string) =>
  ipJson(ns, ['addr']).map((l: any) => ({
    ifname: l.ifname,
    // Administratively up (operstate follows the peer with a delay, so it is not compared).
    up: l.flags.includes('UP'),
    addrs: (l.addr_info ?? []).filter((a: any) => a.scope !== 'link').map((a: any) => `${a.local}/${a.prefixlen}`),
  }));

describe.runIf(ok)('kemu-bridge without IPAM: layer 2 only, as the reference', () => {
  const l2Confs: [string, Record<string, unknown>][] = [
    ['no "ipam"', {}],
    ['an "ipam" without a type, with isGateway and ipMasq set', { ipam: {}, isGateway: true, ipMasq: true }],
  ];
  it.each(l2Confs)('%s: same result (interfaces, no ips), same pod namespace, DEL removes the veth', async (_n, extra) => {
    const seen = [];
    for (const s of sides()) {
      const host = addNetns('host');
      const pod = addNetns('pod');
      const conf = { cniVersion: '1.0.0', name: 'l2net', type: s.type, bridge: 'kbr2', ...extra };
      const env = { containerId: 'l2pod', netns: pod.path, ifname: 'eth0', path: `${bin}:${REFERENCE_BIN_DIR}`, hostNetns: host.name };
      const r = await runPlugin(s.file, 'ADD', conf, env);
      expect(r.exitCode, r.stdout).toBe(0);
      const hostLinks = ipJson(host.name, ['-d', 'link']);
      const veth = hostLinks.find((l: any) => l.ifname === r.json.interfaces[1].name);
      seen.push({
        result: normalise(r.json),
        pod: podState(pod.name),
        vethMaster: veth?.master,
        bridgeAddrs: ipJson(host.name, ['addr', 'show', 'kbr2'])[0].addr_info.filter((a: any) => a.scope === 'global'),
      });
      if (s.type === 'kemu-bridge') {
        const check = await runPlugin(s.file, 'CHECK', { ...conf, prevResult: r.json }, env);
        expect(check.exitCode, check.stdout).toBe(0);
      }
      expect((await runPlugin(s.file, 'DEL', conf, env)).exitCode).toBe(0);
      expect(ipJson(host.name, ['link']).filter((l: any) => l.ifname.startsWith('veth'))).toEqual([]);
      expect(ipJson(pod.name, ['link']).map((l: any) => l.ifname)).toEqual(['lo']);
    }
    const [ref, ours] = seen;
    expect(ref!.result).toEqual({
      cniVersion: '1.0.0',
      interfaces: [
        { name: 'kbr2', mac: 'mac' },
        { name: 'veth*', mac: 'mac' },
        { name: 'eth0', mac: 'mac', sandbox: expect.any(String) },
      ],
      dns: {},
    });
    expect({ ...ours!.result, interfaces: ours!.result.interfaces.map((i: any) => ({ ...i, sandbox: i.sandbox && 'sb' })) }).toEqual({
      ...ref!.result,
      interfaces: ref!.result.interfaces.map((i: any) => ({ ...i, sandbox: i.sandbox && 'sb' })),
    });
    expect(ours!.pod).toEqual(ref!.pod);
    expect(ours!.vethMaster).toBe('kbr2');
    expect(ours!.bridgeAddrs).toEqual([]);
  });
});

describe.runIf(ok)('kemu-bridge with a CNI_NETNS that is not a network namespace', () => {
  it('fails with code 4 naming the path and why, before creating anything (the reference refuses too)', async () => {
    const plain = join(tmp, 'plain-file');
    writeFileSync(plain, 'x');
    const cases: [string, RegExp][] = [
      ['/dev/zero', /failed to open netns "\/dev\/zero": \/dev\/zero is not a network namespace/],
      [tmp, /is not a network namespace/],
      [plain, /is not a network namespace/],
      [join(tmp, 'missing'), /no such file or directory/],
    ];
    for (const [netns, msg] of cases) {
      for (const s of sides()) {
        const host = addNetns('host');
        const conf = {
          cniVersion: '1.0.0',
          name: 'nsnet',
          type: s.type,
          bridge: 'kbr3',
          ipam: { type: s.ipam, ranges: [[{ subnet: '10.63.0.0/24' }]], dataDir: join(tmp, `ns-${s.type}`) },
        };
        const r = await runPlugin(s.file, 'ADD', conf, { containerId: 'nspod', netns, ifname: 'eth0', path: `${bin}:${REFERENCE_BIN_DIR}`, hostNetns: host.name });
        expect(r.exitCode, r.stdout).toBe(1);
        if (s.type === 'kemu-bridge') {
          expect(r.json).toMatchObject({ code: 4, msg: expect.stringMatching(msg) });
          expect(ipJson(host.name, ['link']).map((l: any) => l.ifname)).toEqual(['lo']);
        }
      }
    }
  });
});
