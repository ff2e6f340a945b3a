import { afterAll, describe, expect, it } from 'vitest';
import { peers, requirePeers } from '@kemu/test-peers';
import { createLinuxDatapath } from './datapath-linux.js';
import { HOST_NETNS } from './datapath.js';
import { addNetns, delNetns, ipJson } from './testing.js';

describe.runIf(requirePeers('the linux datapath tests', [peers.netns]))('linux datapath links (read back against ip -j)', () => {
  const node = addNetns('dpl-node');
  const pod = addNetns('dpl-pod');
  const dp = createLinuxDatapath({ hostNetns: node.path });
  afterAll(async () => {
    await dp.close();
    delNetns(pod.name);
    delNetns(node.name);
  });

  it('reports name, index, kind, mac, mtu, up, promisc, master and veth peer as the kernel has them', async () => {
    await dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'kbr0', mtu: 1400 });
    await dp.setLink(HOST_NETNS, 'kbr0', { up: true, promisc: true });
    await dp.addLink(HOST_NETNS, { kind: 'veth', name: 'kveth0', mtu: 1400, peer: { name: 'eth0', netns: pod.path } });
    await dp.setLink(HOST_NETNS, 'kveth0', { master: 'kbr0', up: true });
    await dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'kbr1', mac: '02:00:00:00:00:42' });

    const ip = Object.fromEntries((ipJson(node.name, ['-d', 'link', 'show']) as any[]).map((l) => [l.ifname, l]));
    const links = Object.fromEntries((await dp.listLinks(HOST_NETNS)).map((l) => [l.name, l]));
    expect(Object.keys(links).sort()).toEqual(Object.keys(ip).map((n) => n.split('@')[0]).sort());
    for (const name of ['lo', 'kbr0', 'kveth0', 'kbr1']) {
      expect(links[name]).toMatchObject({ index: ip[name].ifindex, mtu: ip[name].mtu, mac: ip[name].address });
      expect(links[name]!.up).toBe(ip[name].flags.includes('UP'));
    }
    expect(links.lo!.kind).toBe('loopback');
    expect(links.kbr0).toMatchObject({ kind: 'bridge', promisc: true, mtu: 1400 });
    expect(links.kbr1).toMatchObject({ kind: 'bridge', promisc: false, mac: '02:00:00:00:00:42', up: false });
    const podEth = (ipJson(pod.name, ['link', 'show', 'eth0']) as any[])[0];
    expect(links.kveth0).toMatchObject({ kind: 'veth', master: 'kbr0', peerIndex: podEth.ifindex });
    expect(await dp.getLink(HOST_NETNS, 'kveth0')).toEqual(links.kveth0);
    expect(await dp.getLink(pod.path, 'eth0')).toMatchObject({ kind: 'veth', index: podEth.ifindex, mtu: 1400 });
    expect(await dp.getLink(HOST_NETNS, 'nope0')).toBeUndefined();
  });

  it('reads vxlan parameters back', async () => {
    await dp.addLink(HOST_NETNS, {
      kind: 'vxlan',
      name: 'kvx0',
      vxlan: { vni: 4242, port: 4789, local: '10.77.0.1', learning: false },
    });
    const l = await dp.getLink(HOST_NETNS, 'kvx0');
    expect(l).toMatchObject({ kind: 'vxlan', vxlan: { vni: 4242, port: 4789, local: '10.77.0.1', learning: false } });
  });

  it('writes a route origin as iproute2 names it and reads it back', async () => {
    await dp.addLink(HOST_NETNS, { kind: 'bridge', name: 'kbr2' });
    await dp.setLink(HOST_NETNS, 'kbr2', { up: true });
    await dp.addAddr(HOST_NETNS, 'kbr2', '10.78.0.1/24');
    await dp.addRoute(HOST_NETNS, { dst: '10.79.1.0/24', via: '10.78.0.2', protocol: 'bgp' });
    await dp.addRoute(HOST_NETNS, { dst: '10.79.2.0/24', via: '10.78.0.2', protocol: 'static' });
    await dp.addRoute(HOST_NETNS, { dst: '10.79.3.0/24', via: '10.78.0.2' });
    // ip -j leaves out `boot`, the default origin.
    const ip = Object.fromEntries(
      (ipJson(node.name, ['-4', 'route', 'show', 'dev', 'kbr2']) as any[]).map((r) => [r.dst, r.protocol ?? 'boot']),
    );
    expect(ip).toEqual({ '10.79.1.0/24': 'bgp', '10.79.2.0/24': 'static', '10.79.3.0/24': 'boot', '10.78.0.0/24': 'kernel' });
    const ours = Object.fromEntries((await dp.listRoutes(HOST_NETNS, { dev: 'kbr2', family: 4, table: 254 })).map((r) => [r.dst, r.protocol]));
    expect(ours).toEqual(ip);
  });
});
