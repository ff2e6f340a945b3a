import { describe, expect, it } from 'vitest';
import { decodeFrame, formatTrace, NetsimError, World } from './index.js';
import { addPod, bridgeWorld, vxlanWorld } from './test-topologies.js';

function errCode(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof NetsimError) return e.code;
    throw e;
  }
  return 'no error';
}

describe('bridge segment', () => {
  it('pings across a bridge, resolving ARP and learning the FDB on the way', () => {
    const w = bridgeWorld(2);
    const r = w.ping('pod1', '10.244.0.3');
    expect(r.reachable).toBe(true);
    expect(r.replies).toEqual([{ seq: 1, from: '10.244.0.3', ttl: 64 }]);
    const kinds = r.trace.map((h) => `${h.kind} ${h.detail}`);
    expect(kinds).toContain('neigh resolve 10.244.0.3: ARP who-has');
    expect(kinds.some((k) => k.startsWith('fdb flood to vethpod2'))).toBe(true);
    expect(kinds.some((k) => k.startsWith('fdb hit'))).toBe(true);
    expect(w.neighbours('pod1')).toEqual([
      { dev: 'eth0', ip: '10.244.0.3', family: 4, mac: w.getLink('pod2', 'eth0').mac, state: 'REACHABLE' },
    ]);
    const learned = w.fdb('host', 'cni0').filter((e) => !e.permanent);
    expect(learned.map((e) => [e.mac, e.dev]).sort()).toEqual(
      [
        [w.getLink('pod1', 'eth0').mac, 'vethpod1'],
        [w.getLink('pod2', 'eth0').mac, 'vethpod2'],
      ].sort(),
    );
    // Second ping: neighbour and FDB are warm, so no ARP and no flooding.
    const r2 = w.ping('pod1', '10.244.0.3');
    expect(r2.reachable).toBe(true);
    expect(r2.trace.some((h) => h.detail.includes('ARP') || h.detail.includes('flood'))).toBe(false);
    expect(formatTrace(r2.trace)).toMatch(/host\/cni0\s+fdb\s+hit .* -> port vethpod2/);
  });

  it('ages learned FDB entries out after the ageing time and floods again', () => {
    const w = bridgeWorld(2);
    expect(w.ping('pod1', '10.244.0.3').reachable).toBe(true);
    w.advance(200_000);
    expect(w.fdb('host', 'cni0').some((e) => !e.permanent)).toBe(true);
    w.advance(101_000);
    expect(w.fdb('host', 'cni0').some((e) => !e.permanent)).toBe(false);
    // Neighbours went STALE and were collected; the next ping floods ARP again and still works.
    const r = w.ping('pod1', '10.244.0.3');
    expect(r.reachable).toBe(true);
    expect(r.trace.some((h) => h.kind === 'fdb' && h.detail.startsWith('flood'))).toBe(true);
  });

  it('drops a frame whose destination is behind its ingress port unless hairpin is on', () => {
    const w = bridgeWorld(1);
    // pod1 believes 10.244.0.99 lives at a MAC the bridge has pinned behind pod1's own port.
    w.addNeighbour('pod1', { dev: 'eth0', ip: '10.244.0.99', mac: '0a:00:00:00:00:99' });
    w.addFdb('host', 'vethpod1', { mac: '0a:00:00:00:00:99' });
    let r = w.ping('pod1', '10.244.0.99');
    expect(r.reachable).toBe(false);
    expect(r.trace.at(-1)).toMatchObject({
      kind: 'drop',
      ns: 'host',
      dev: 'vethpod1',
      reason: 'destination is behind the ingress port and hairpin is off',
    });
    w.setLink('host', 'vethpod1', { hairpin: true });
    r = w.ping('pod1', '10.244.0.99');
    expect(r.trace.some((h) => h.kind === 'fdb' && h.detail.endsWith('-> port vethpod1'))).toBe(true);
    expect(r.trace.at(-1)).toMatchObject({ kind: 'drop', ns: 'pod1', dev: 'eth0' });
    expect(r.trace.at(-1)!.reason).toMatch(/not addressed to this device/);
  });

  it('does not flood unknown unicast to ports with flooding off, and learns nothing with learning off', () => {
    const w = bridgeWorld(2);
    w.setLink('host', 'vethpod2', { flood: false, learning: false });
    w.addNeighbour('pod1', { dev: 'eth0', ip: '10.244.0.3', mac: w.getLink('pod2', 'eth0').mac });
    const r = w.ping('pod1', '10.244.0.3');
    expect(r.reachable).toBe(false);
    expect(r.trace.some((h) => h.kind === 'fdb' && /^miss .* flood to \(no ports\)$/.test(h.detail))).toBe(
      true,
    );
    expect(w.fdb('host', 'vethpod2').filter((e) => !e.permanent)).toEqual([]);
  });

  it('resolves IPv6 neighbours with NDP and pings over IPv6', () => {
    const w = bridgeWorld(2);
    const r = w.ping('pod1', 'fd00:244::3');
    expect(r.reachable).toBe(true);
    expect(r.trace.some((h) => h.packet?.includes('ICMP6 neighbor solicitation, who has fd00:244::3'))).toBe(
      true,
    );
    expect(r.trace.some((h) => h.packet?.includes('ICMP6 neighbor advertisement, tgt is fd00:244::3'))).toBe(
      true,
    );
    expect(w.neighbours('pod1').find((n) => n.ip === 'fd00:244::3')?.state).toBe('REACHABLE');
    // The kernel's link-local address and fe80::/64 route appear when the link comes up.
    const ll = w.addresses('pod1', 'eth0').find((a) => a.scope === 'link');
    expect(ll?.cidr).toMatch(/^fe80::.*\/64$/);
    expect(w.routes('pod1', { family: 6 }).map((x) => x.dst)).toEqual(
      expect.arrayContaining(['fd00:244::/64', 'fe80::/64']),
    );
  });

  it('reports an unanswered ARP as Destination Host Unreachable', () => {
    const w = bridgeWorld(1);
    const r = w.ping('pod1', '10.244.0.50');
    expect(r.reachable).toBe(false);
    expect(r.errors).toEqual([{ seq: 1, from: '10.244.0.2', message: 'Destination Host Unreachable' }]);
    expect(w.neighbours('pod1')).toEqual([
      { dev: 'eth0', ip: '10.244.0.50', family: 4, mac: null, state: 'FAILED' },
    ]);
  });

  it('pings its own addresses and 127.0.0.1 through lo', () => {
    const w = bridgeWorld(1);
    const r = w.ping('pod1', '10.244.0.2');
    expect(r.reachable).toBe(true);
    expect(r.trace.every((h) => h.dev === 'lo' || h.dev === null)).toBe(true);
    expect(w.ping('pod1', '127.0.0.1').reachable).toBe(true);
    expect(w.ping('pod1', '::1').reachable).toBe(true);
  });
});

describe('routing', () => {
  function routed(): World {
    const w = new World();
    w.addNamespace('router');
    w.setLink('router', 'lo', { up: true });
    for (const i of [1, 2]) {
      w.addLink('router', { kind: 'bridge', name: `br${i}` });
      w.setLink('router', `br${i}`, { up: true });
      w.addAddress('router', `br${i}`, `10.${i}.0.1/24`);
      addPod(w, 'router', `br${i}`, `p${i}`, `10.${i}.0.2`, `10.${i}.0.1`);
    }
    return w;
  }

  it('forwards between subnets only with forwarding on, decrementing the TTL', () => {
    const w = routed();
    const off = w.ping('p1', '10.2.0.2');
    expect(off.reachable).toBe(false);
    expect(off.trace.at(-1)?.reason).toMatch(/forwarding is off \(net\.ipv4\.ip_forward=0\)/);
    w.setSysctl('router', 'net.ipv4.ip_forward', '1');
    const on = w.ping('p1', '10.2.0.2');
    expect(on.reachable).toBe(true);
    expect(on.replies[0]!.ttl).toBe(63);
    // TTL 1 expires at the router, which says so (what traceroute relies on).
    const ttl1 = w.ping('p1', '10.2.0.2', { ttl: 1 });
    expect(ttl1.reachable).toBe(false);
    expect(ttl1.errors).toEqual([{ seq: 1, from: '10.1.0.1', message: 'Time to live exceeded' }]);
    expect(on.trace.filter((h) => h.kind === 'forward').length).toBe(2);
  });

  it('answers no route with ICMP net unreachable, and obeys blackhole/unreachable/prohibit routes', () => {
    const w = routed();
    w.setForwarding('router', 4, true);
    const none = w.ping('p1', '172.16.0.1');
    expect(none.errors).toEqual([{ seq: 1, from: '10.1.0.1', message: 'Destination Net Unreachable' }]);
    w.addRoute('router', { dst: '172.16.1.0/24', type: 'blackhole' });
    w.addRoute('router', { dst: '172.16.2.0/24', type: 'unreachable' });
    w.addRoute('router', { dst: '172.16.3.0/24', type: 'prohibit' });
    const bh = w.ping('p1', '172.16.1.1');
    expect(bh.errors).toEqual([]);
    expect(bh.trace.at(-1)).toMatchObject({ kind: 'drop', reason: 'blackhole route' });
    expect(w.ping('p1', '172.16.2.1').errors[0]?.message).toBe('Destination Host Unreachable');
    expect(w.ping('p1', '172.16.3.1').errors[0]?.message).toBe('Packet filtered');
    // Locally generated traffic gets the socket errors ping(8) prints.
    w.addRoute('p1', { dst: '192.0.2.0/24', type: 'blackhole' });
    expect(w.ping('p1', '192.0.2.1').error).toEqual({ code: 'EINVAL', message: 'connect: Invalid argument' });
    w.deleteRoute('p1', { dst: 'default' });
    expect(w.ping('p1', '8.8.8.8').error).toEqual({
      code: 'ENETUNREACH',
      message: 'connect: Network is unreachable',
    });
  });

  it('chooses the longest matching prefix, then the lowest metric', () => {
    const w = routed();
    w.addRoute('router', { dst: '10.9.0.0/16', via: '10.1.0.2' });
    w.addRoute('router', { dst: '10.9.8.0/24', via: '10.2.0.2' });
    w.addRoute('router', { dst: '10.9.8.0/24', via: '10.1.0.2', metric: 5 });
    expect(w.getRoute('router', '10.9.8.7')).toMatchObject({
      dst: '10.9.8.0/24',
      via: '10.2.0.2',
      dev: 'br2',
      prefsrc: '10.2.0.1',
    });
    expect(w.getRoute('router', '10.9.1.1')).toMatchObject({
      dst: '10.9.0.0/16',
      via: '10.1.0.2',
      dev: 'br1',
    });
    expect(w.getRoute('router', '10.1.0.1')).toMatchObject({ type: 'local', dev: 'lo', table: 255 });
    w.deleteRoute('router', { dst: '10.9.8.0/24', metric: 0 });
    expect(w.getRoute('router', '10.9.8.7')).toMatchObject({ via: '10.1.0.2', metric: 5 });
  });

  it('routes on-link through a device without a connected subnet (proxy ARP, calico style)', () => {
    const w = new World();
    w.addNamespace('host');
    w.addNamespace('pod');
    w.setForwarding('host', 4, true);
    w.addLink('host', { kind: 'veth', name: 'cali1', peer: { name: 'eth0', ns: 'pod' } });
    w.setLink('host', 'cali1', { up: true, proxyArp: true });
    w.setLink('pod', 'eth0', { up: true });
    w.addAddress('pod', 'eth0', '10.10.0.5/32');
    w.addRoute('pod', { dst: '169.254.1.1/32', dev: 'eth0', scope: 'link' });
    w.addRoute('pod', { dst: 'default', via: '169.254.1.1', dev: 'eth0', onlink: true });
    w.addRoute('host', { dst: '10.10.0.5/32', dev: 'cali1', scope: 'link' });
    w.addLink('host', { kind: 'dummy', name: 'dummy0' });
    w.setLink('host', 'dummy0', { up: true });
    w.addAddress('host', 'dummy0', '192.168.50.1/24');
    // Proxy ARP answers only for targets the host routes out of another device.
    expect(w.ping('pod', '192.168.50.1').errors[0]?.message).toBe('Destination Host Unreachable');
    w.addRoute('host', { dst: 'default', dev: 'dummy0' });
    w.flushNeighbours('pod');
    const r = w.ping('pod', '192.168.50.1');
    expect(r.reachable).toBe(true);
    expect(r.trace.some((h) => h.detail.startsWith('ARP reply (proxy ARP'))).toBe(true);
  });
});

describe('VXLAN overlay', () => {
  it('carries pod traffic between nodes in RFC 7348 frames', () => {
    const w = vxlanWorld();
    const r = w.ping('pod1', '10.244.2.2');
    expect(r.reachable).toBe(true);
    expect(r.replies[0]!.ttl).toBe(62);
    const encap = r.trace.filter((h) => h.kind === 'encap');
    expect(encap[0]).toMatchObject({ ns: 'node1', dev: 'flannel.1' });
    expect(encap[0]!.detail).toMatch(/^vxlan vni 1 192\.168\.0\.1:\d+ -> 192\.168\.0\.2:4789$/);
    expect(r.trace.some((h) => h.kind === 'decap' && h.ns === 'node2')).toBe(true);
    // The underlay carries real VXLAN: 8-byte header, I flag, VNI 1, inner Ethernet/IPv4/ICMP.
    const under = w.captured('node1/eth0').filter((c) => c.dir === 'tx' && decodeFrame(c.frame).udp);
    const d = decodeFrame(under[0]!.frame);
    expect(d.udp?.dport).toBe(4789);
    expect(d.vxlan).toMatchObject({ flags: 0x08, vni: 1 });
    expect(d.vxlan!.inner.ip).toMatchObject({
      src: '10.244.1.2',
      dst: '10.244.2.2',
      proto: 1,
      checksumOk: true,
    });
    expect(d.vxlan!.inner.icmp).toMatchObject({ type: 8, checksumOk: true });
    const raw = Buffer.from(under[0]!.frame);
    expect([...raw.subarray(42, 50)]).toEqual([0x08, 0, 0, 0, 0, 0, 1, 0]);
  });

  it('learns remote MACs on a bridged VXLAN port and floods to the default destination', () => {
    const w = new World();
    for (const i of [1, 2]) w.addNamespace(`n${i}`);
    w.addLink('n1', { kind: 'veth', name: 'eth0', peer: { name: 'eth0', ns: 'n2' } });
    for (const i of [1, 2]) {
      const n = `n${i}`;
      w.setLink(n, 'eth0', { up: true });
      w.addAddress(n, 'eth0', `192.168.0.${i}/24`);
      w.addLink(n, { kind: 'bridge', name: 'br0' });
      w.setLink(n, 'br0', { up: true });
      w.addLink(n, { kind: 'vxlan', name: 'vx0', vni: 4242, port: 4790, local: `192.168.0.${i}` });
      w.setLink(n, 'vx0', { master: 'br0', up: true });
      w.addFdb(n, 'vx0', { mac: '00:00:00:00:00:00', dst: `192.168.0.${3 - i}` });
      addPod(w, n, 'br0', `p${i}`, `10.0.0.${i}`, '10.0.0.254');
    }
    const r = w.ping('p1', '10.0.0.2');
    expect(r.reachable).toBe(true);
    expect(
      r.trace.some(
        (h) =>
          h.kind === 'fdb' && h.ns === 'n1' && h.dev === 'vx0' && h.detail.startsWith('flood -> 192.168.0.2'),
      ),
    ).toBe(true);
    const learned = w.fdb('n2', 'vx0').find((e) => e.mac === w.getLink('p1', 'eth0').mac);
    expect(learned).toMatchObject({ dst: '192.168.0.1', permanent: false });
    expect(w.captured('n1/eth0').map((c) => decodeFrame(c.frame).udp?.dport)).toContain(4790);
  });

  it('drops with a reason when no FDB entry names a remote VTEP', () => {
    const w = vxlanWorld();
    w.deleteFdb('node1', 'flannel.1', '0a:00:00:00:02:01');
    const r = w.ping('pod1', '10.244.2.2');
    expect(r.reachable).toBe(false);
    expect(r.trace.find((h) => h.kind === 'drop')?.reason).toBe(
      'no fdb entry for 0a:00:00:00:02:01 and no default destination',
    );
  });
});

describe('NAT', () => {
  function natWorld(): World {
    const w = bridgeWorld(1);
    w.setForwarding('host', 4, true);
    w.addNamespace('ext');
    w.addLink('host', { kind: 'veth', name: 'eth0', peer: { name: 'eth0', ns: 'ext' } });
    w.setLink('host', 'eth0', { up: true });
    w.setLink('ext', 'eth0', { up: true });
    w.addAddress('host', 'eth0', '192.168.1.10/24');
    w.addAddress('ext', 'eth0', '192.168.1.20/24');
    return w;
  }

  it('masquerades pod egress and reverses it for the reply', () => {
    const w = natWorld();
    // Without NAT the far side has no route back to the pod network.
    expect(w.ping('pod1', '192.168.1.20').reachable).toBe(false);
    w.addNatRule('host', {
      type: 'masquerade',
      src: '10.244.0.0/24',
      notDst: ['10.244.0.0/24'],
      comment: 'CNI-abc',
    });
    const r = w.ping('pod1', '192.168.1.20');
    expect(r.reachable).toBe(true);
    expect(
      r.trace.some(
        (h) => h.kind === 'nat' && h.detail.startsWith('MASQUERADE rule 1 (CNI-abc): source -> 192.168.1.10'),
      ),
    ).toBe(true);
    expect(r.trace.some((h) => h.kind === 'nat' && h.detail.startsWith('de-SNAT to 10.244.0.2'))).toBe(true);
    const seen = w
      .captured('ext/eth0')
      .map((c) => decodeFrame(c.frame))
      .filter((d) => d.icmp?.type === 8);
    expect(seen.at(-1)?.ip?.src).toBe('192.168.1.10');
  });

  it('maps a hostPort to a pod with DNAT, including replies', () => {
    const w = natWorld();
    w.listen('pod1', { proto: 'tcp', port: 80 });
    w.addRoute('ext', { dst: '10.244.0.0/24', via: '192.168.1.10' });
    w.addNatRule('host', { type: 'dnat', proto: 'tcp', dport: 8080, to: '10.244.0.2:80' });
    const r = w.tcpConnect('ext', '192.168.1.10', 8080);
    expect(r.state).toBe('established');
    expect(
      r.trace.some((h) => h.kind === 'nat' && h.detail.includes('192.168.1.10:8080 -> 10.244.0.2:80')),
    ).toBe(true);
    expect(r.trace.some((h) => h.kind === 'nat' && h.detail === 'de-DNAT to 192.168.1.10:8080')).toBe(true);
    expect(w.tcpConnect('ext', '192.168.1.10', 8081).state).toBe('refused');
    // The same hostPort from the host itself goes through OUTPUT DNAT.
    expect(w.tcpConnect('host', '192.168.1.10', 8080).state).toBe('established');
  });
});

describe('TCP', () => {
  it('connects to a listener, is refused without one, and times out into a black hole', () => {
    const w = bridgeWorld(2);
    w.listen('pod2', { proto: 'tcp', port: 443 });
    const ok = w.tcpConnect('pod1', '10.244.0.3', 443);
    expect(ok).toMatchObject({
      state: 'established',
      local: { ip: '10.244.0.2', port: 32768 },
      remote: { ip: '10.244.0.3', port: 443 },
    });
    // SYN, SYN-ACK, ACK: each leaves one namespace and crosses the bridge once.
    expect(
      ok.trace.filter((h) => h.kind === 'tx' && h.packet?.includes('Flags')).map((h) => `${h.ns}/${h.dev}`),
    ).toEqual(['pod1/eth0', 'host/vethpod2', 'pod2/eth0', 'host/vethpod1', 'pod1/eth0', 'host/vethpod2']);
    const refused = w.tcpConnect('pod1', '10.244.0.3', 444);
    expect(refused.state).toBe('refused');
    expect(refused.error?.code).toBe('ECONNREFUSED');
    w.addRoute('host', { dst: '10.99.0.0/16', type: 'blackhole' });
    w.setForwarding('host', 4, true);
    expect(w.tcpConnect('pod1', '10.99.0.1', 80).state).toBe('timeout');
    expect(w.tcpConnect('pod1', 'fd00:244::3', 443).state).toBe('established');
  });
});

describe('UDP', () => {
  it('delivers to a listener and reports ICMP port unreachable otherwise', () => {
    const w = bridgeWorld(2);
    w.listen('pod2', { proto: 'udp', port: 53 });
    const ok = w.udpSend('pod1', '10.244.0.3', 53, Buffer.from('hello'));
    expect(ok.delivered).toBe('pod2');
    expect(ok.icmpError).toBeUndefined();
    const closed = w.udpSend('pod1', '10.244.0.3', 54);
    expect(closed.delivered).toBeNull();
    expect(closed.icmpError).toEqual({ from: '10.244.0.3', message: 'Destination Port Unreachable' });
    const v6 = w.udpSend('pod1', 'fd00:244::3', 54);
    expect(v6.icmpError).toEqual({ from: 'fd00:244::3', message: 'Port unreachable' });
  });
});

describe('IPv6', () => {
  it('forwards between IPv6 subnets through a router, resolving both sides with NDP', () => {
    const w = new World();
    w.addNamespace('r');
    for (const i of [1, 2]) {
      w.addNamespace(`h${i}`);
      w.addLink('r', { kind: 'veth', name: `e${i}`, peer: { name: 'eth0', ns: `h${i}` } });
    }
    for (const i of [1, 2]) {
      w.setLink('r', `e${i}`, { up: true });
      w.addAddress('r', `e${i}`, `fd0${i}::1/64`);
      w.setLink(`h${i}`, 'eth0', { up: true });
      w.addAddress(`h${i}`, 'eth0', `fd0${i}::2/64`);
      w.addRoute(`h${i}`, { dst: 'default', family: 6, via: `fd0${i}::1` });
    }
    expect(w.ping('h1', 'fd02::2').trace.at(-1)?.reason).toMatch(/forwarding is off/);
    w.setSysctl('r', 'net.ipv6.conf.all.forwarding', '1');
    const r = w.ping('h1', 'fd02::2');
    expect(r.reachable).toBe(true);
    expect(r.replies[0]!.ttl).toBe(63);
    expect(w.routes('h1', { family: 6 }).find((x) => x.dst === 'default')).toMatchObject({
      via: 'fd01::1',
      metric: 1024,
    });
  });

  it('carries an IPv6 overlay over an IPv6 underlay', () => {
    const w = new World();
    w.addNamespace('n1');
    w.addNamespace('n2');
    w.addLink('n1', { kind: 'veth', name: 'eth0', peer: { name: 'eth0', ns: 'n2' } });
    for (const i of [1, 2]) {
      const n = `n${i}`;
      w.setLink(n, 'eth0', { up: true });
      w.addAddress(n, 'eth0', `2001:db8::${i}/64`);
      w.addLink(n, { kind: 'vxlan', name: 'vx0', vni: 7, local: `2001:db8::${i}` });
      w.setLink(n, 'vx0', { up: true });
      w.addAddress(n, 'vx0', `fd77::${i}/64`);
      w.addFdb(n, 'vx0', { mac: '00:00:00:00:00:00', dst: `2001:db8::${3 - i}` });
    }
    const r = w.ping('n1', 'fd77::2');
    expect(r.reachable).toBe(true);
    const outer = w
      .captured('n1/eth0')
      .map((c) => decodeFrame(c.frame))
      .find((d) => d.vxlan?.inner.ip?.family === 6);
    expect(outer?.ip).toMatchObject({ family: 6, src: '2001:db8::1', dst: '2001:db8::2' });
    expect(outer?.vxlan?.vni).toBe(7);
  });
});

describe('kernel-style errors and atomicity', () => {
  it('answers hasLink by name through renames, moves and deletes, and ENOENT for an unknown namespace', () => {
    const w = bridgeWorld(1);
    expect(w.hasLink('host', 'cni0')).toBe(true);
    expect(w.hasLink('host', 'cni1')).toBe(false);
    w.addLink('host', { kind: 'dummy', name: 'd0' });
    w.setLink('host', 'd0', { name: 'd1' });
    expect([w.hasLink('host', 'd0'), w.hasLink('host', 'd1')]).toEqual([false, true]);
    w.setLink('host', 'd1', { netns: 'pod1' });
    expect([w.hasLink('host', 'd1'), w.hasLink('pod1', 'd1')]).toEqual([false, true]);
    w.deleteLink('pod1', 'd1');
    expect(w.hasLink('pod1', 'd1')).toBe(false);
    expect(errCode(() => w.hasLink('nope', 'cni0'))).toBe('ENOENT');
  });

  it('uses ENOENT/ENODEV/EEXIST/ESRCH/EADDRNOTAVAIL like netlink', () => {
    const w = bridgeWorld(1);
    expect(errCode(() => w.addLink('nope', { kind: 'dummy', name: 'd0' }))).toBe('ENOENT');
    expect(errCode(() => w.addNamespace('host'))).toBe('EEXIST');
    expect(errCode(() => w.addLink('host', { kind: 'bridge', name: 'cni0' }))).toBe('EEXIST');
    expect(
      errCode(() => w.addLink('host', { kind: 'veth', name: 'v0', peer: { name: 'eth0', ns: 'pod1' } })),
    ).toBe('EEXIST');
    expect(errCode(() => w.setLink('host', 'eth9', { up: true }))).toBe('ENODEV');
    expect(errCode(() => w.addAddress('host', 'cni0', '10.244.0.1/24'))).toBe('EEXIST');
    expect(errCode(() => w.deleteAddress('host', 'cni0', '10.244.0.9/24'))).toBe('EADDRNOTAVAIL');
    expect(errCode(() => w.addRoute('pod1', { dst: 'default', via: '10.244.0.1' }))).toBe('EEXIST');
    expect(errCode(() => w.deleteRoute('pod1', { dst: '10.1.0.0/16' }))).toBe('ESRCH');
    expect(errCode(() => w.addRoute('pod1', { dst: '10.1.0.0/16', via: '10.9.9.9' }))).toBe('ENETUNREACH');
    expect(errCode(() => w.addRoute('pod1', { dst: '10.1.0.0/16', dev: 'eth7' }))).toBe('ENODEV');
    expect(errCode(() => w.deleteNeighbour('pod1', 'eth0', '10.244.0.77'))).toBe('ENOENT');
    expect(errCode(() => w.addLink('host', { kind: 'dummy', name: 'this-name-is-too-long' }))).toBe('EINVAL');
    expect(errCode(() => w.addLink('host', { kind: 'dummy', name: '../x' }))).toBe('EINVAL');
    expect(errCode(() => w.addAddress('host', 'cni0', '10.244.0.300/24'))).toBe('EINVAL');
    expect(errCode(() => w.addLink('host', { kind: 'vxlan', name: 'vx', vni: 1 << 24 }))).toBe('ERANGE');
    expect(errCode(() => w.setLink('host', 'cni0', { master: 'cni0' }))).toBe('ELOOP');
    const e = (() => {
      try {
        w.setLink('host', 'eth9', {});
      } catch (x) {
        return x as NetsimError;
      }
    })();
    expect(e?.message).toBe('Cannot find device "eth9": No such device');
    expect(e?.errno).toBe(19);
  });

  it('leaves a link untouched when part of a change is invalid', () => {
    const w = bridgeWorld(1);
    const before = w.getLink('host', 'vethpod1');
    expect(errCode(() => w.setLink('host', 'vethpod1', { mtu: 9000, master: 'nosuchbr' }))).toBe('ENODEV');
    expect(errCode(() => w.setLink('host', 'vethpod1', { mtu: 1400, mac: 'zz:00:00:00:00:00' }))).toBe(
      'EINVAL',
    );
    expect(w.getLink('host', 'vethpod1')).toEqual(before);
  });

  it('deletes both ends of a veth and the state that referenced them', () => {
    const w = bridgeWorld(2);
    w.ping('pod1', '10.244.0.3');
    w.deleteNamespace('pod2');
    expect(w.links('host').map((l) => l.name)).toEqual(['lo', 'cni0', 'vethpod1']);
    expect(w.fdb('host', 'cni0').some((e) => e.dev === 'vethpod2')).toBe(false);
    w.deleteLink('pod1', 'eth0');
    expect(w.routes('pod1')).toEqual([]);
    expect(w.addresses('pod1').every((a) => a.dev === 'lo')).toBe(true);
    expect(w.links('host').map((l) => l.name)).toEqual(['lo', 'cni0']);
  });

  it('moves a link between namespaces the way the kernel does (down, addresses flushed)', () => {
    const w = new World();
    w.addNamespace('a');
    w.addNamespace('b');
    w.addLink('a', { kind: 'veth', name: 'x0', peer: { name: 'x1' } });
    w.setLink('a', 'x0', { up: true });
    w.addAddress('a', 'x0', '10.0.0.1/24');
    w.setLink('a', 'x0', { netns: 'b', name: 'eth0' });
    expect(w.links('a').map((l) => l.name)).toEqual(['lo', 'x1']);
    expect(w.getLink('b', 'eth0')).toMatchObject({ up: false, peer: { ns: 'a', name: 'x1' } });
    expect(w.addresses('b')).toEqual([]);
    expect(w.routes('a')).toEqual([]);
  });
});

describe('determinism and persistence', () => {
  it('produces identical traces and pcap bytes for identical inputs', () => {
    const run = () => {
      const w = vxlanWorld();
      const t = formatTrace(w.ping('pod1', '10.244.2.2', { count: 2 }).trace);
      return { t, pcap: w.pcap('node2').toString('hex') };
    };
    expect(run()).toEqual(run());
  });

  it('round-trips through JSON and keeps behaving the same', () => {
    const w = vxlanWorld();
    w.listen('pod2', { proto: 'tcp', port: 80 });
    w.addNatRule('node1', { type: 'masquerade', src: '10.244.1.0/24', notDst: ['10.244.0.0/16'] });
    w.ping('pod1', '10.244.2.2');
    const json = JSON.parse(JSON.stringify(w.toJSON()));
    const w2 = World.fromJSON(json);
    expect(w2.toJSON()).toEqual(json);
    const a = w.tcpConnect('pod1', '10.244.2.2', 80);
    const b = w2.tcpConnect('pod1', '10.244.2.2', 80);
    expect(formatTrace(b.trace)).toBe(formatTrace(a.trace));
    expect(b.state).toBe('established');
  });

  it('rejects documents that are not a world, naming the problem', () => {
    expect(errCode(() => World.fromJSON({ hello: 1 }))).toBe('EINVAL');
    const w = bridgeWorld(1);
    const j = w.toJSON();
    j.namespaces[0]!.links.find((l) => l.name === 'vethpod1')!.master = 'ghost';
    expect(() => World.fromJSON(j)).toThrow(/inconsistent netsim world: master ghost of vethpod1/);
  });
});
