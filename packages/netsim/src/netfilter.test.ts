import { describe, expect, it } from 'vitest';
import { formatTrace } from './trace.js';
import { vxlanWorld } from './test-topologies.js';
import { World } from './world.js';

// A Service the way kube-proxy's iptables mode lays it out, on node1: 10.96.0.10:80 -> pod2:8080.
const SERVICE = `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-WEB - [0:0]
:KUBE-SEP-A - [0:0]
:KUBE-SEP-B - [0:0]
:KUBE-MARK-MASQ - [0:0]
:KUBE-POSTROUTING - [0:0]
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-WEB
-A KUBE-SVC-WEB -m comment --comment "default/web:http -> 10.244.2.2:8080" -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-A
-A KUBE-SVC-WEB -m comment --comment "default/web:http -> 10.244.2.3:8080" -j KUBE-SEP-B
-A KUBE-SEP-A -s 10.244.2.2/32 -m comment --comment default/web:http -j KUBE-MARK-MASQ
-A KUBE-SEP-A -p tcp -m comment --comment default/web:http -m tcp -j DNAT --to-destination 10.244.2.2:8080
-A KUBE-SEP-B -s 10.244.2.3/32 -m comment --comment default/web:http -j KUBE-MARK-MASQ
-A KUBE-SEP-B -p tcp -m comment --comment default/web:http -m tcp -j DNAT --to-destination 10.244.2.3:8080
COMMIT
`;

function serviceWorld() {
  const w = vxlanWorld();
  // A second endpoint on node2.
  w.addNamespace('pod3');
  w.addLink('node2', { kind: 'veth', name: 'vethpod3', peer: { name: 'eth0', ns: 'pod3' } });
  w.setLink('node2', 'vethpod3', { master: 'cni0', up: true });
  w.setLink('pod3', 'lo', { up: true });
  w.setLink('pod3', 'eth0', { up: true });
  w.addAddress('pod3', 'eth0', '10.244.2.3/24');
  w.addRoute('pod3', { dst: 'default', via: '10.244.2.1' });
  for (const p of ['pod2', 'pod3']) w.listen(p, { proto: 'tcp', port: 8080 });
  w.iptablesRestore('node1', SERVICE);
  return w;
}

describe('netfilter: iptables-style tables', () => {
  it('DNATs a ClusterIP connection to an endpoint and un-NATs the reply, naming every rule on the way', () => {
    const w = serviceWorld();
    const r = w.tcpConnect('pod1', '10.96.0.10', 80);
    expect(r.state).toBe('established');
    const text = formatTrace(r.trace);
    expect(text).toContain('nat PREROUTING rule 1: -A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES');
    expect(text).toContain('nat KUBE-SERVICES rule 1: -A KUBE-SERVICES -d 10.96.0.10/32 -p tcp');
    expect(text).toMatch(/nat KUBE-SEP-[AB] rule 2: .* -j DNAT --to-destination 10\.244\.2\.[23]:8080: 10\.96\.0\.10:80 -> 10\.244\.2\.[23]:8080/);
    const ct = w.conntrack('node1').filter((c) => c.proto === 6);
    expect(ct).toHaveLength(1);
    expect(ct[0]).toMatchObject({ orig: expect.stringMatching(/^10\.244\.1\.2:\d+ -> 10\.96\.0\.10:80$/), nat: ['dnat'] });
  });

  it('spreads new connections over the endpoints by statistic probability, and counts matches', () => {
    const w = serviceWorld();
    for (let i = 0; i < 200; i++) expect(w.tcpConnect('pod1', '10.96.0.10', 80, { trace: false }).state).toBe('established');
    const counters = w.iptablesCounters('node1', { table: 'nat' });
    const dnat = (sep: string) => counters.find((c) => c.chain === sep && c.rule.includes('DNAT'))!.packets;
    expect(dnat('KUBE-SEP-A') + dnat('KUBE-SEP-B')).toBe(200);
    expect(dnat('KUBE-SEP-A')).toBeGreaterThan(70);
    expect(dnat('KUBE-SEP-B')).toBeGreaterThan(70);
  });

  it('masquerades hairpin traffic marked by KUBE-MARK-MASQ, and only that', () => {
    const w = serviceWorld();
    // node1 is the client here: the OUTPUT chain DNATs; a node-sourced packet is not marked, so no SNAT.
    const plain = w.tcpConnect('pod1', '10.96.0.10', 80);
    expect(plain.state).toBe('established');
    expect(w.conntrack('node1').find((c) => c.proto === 6)!.nat).toEqual(['dnat']);
    // An endpoint reaching its own Service is marked and masqueraded on node2's side of the rules; a
    // reply between two pods on node2's bridge meets iptables there only through br_netfilter.
    w.iptablesRestore('node2', SERVICE);
    w.setSysctl('node2', 'net.bridge.bridge-nf-call-iptables', '1');
    const texts = Array.from({ length: 12 }, () => {
      const r = w.tcpConnect('pod2', '10.96.0.10', 80);
      expect(r.state).toBe('established');
      return formatTrace(r.trace);
    });
    const self = texts.find((t) => t.includes('KUBE-SEP-A rule 2'))!;
    expect(self).toContain('KUBE-SEP-A rule 1: -A KUBE-SEP-A -s 10.244.2.2/32');
    expect(self).toContain('(mark now 0x4000)');
    expect(self).toMatch(/MASQUERADE --random-fully: source -> 10\.244\.2\.1/);
    const other = texts.find((t) => t.includes('KUBE-SEP-B rule 2'))!;
    expect(other).not.toContain('MASQUERADE');
    // Without br_netfilter the endpoint's reply crosses the bridge untouched and the client drops it.
    w.setSysctl('node2', 'net.bridge.bridge-nf-call-iptables', '0');
    const states = Array.from({ length: 12 }, () => w.tcpConnect('pod2', '10.96.0.10', 80, { trace: false }).state);
    expect(states).toContain('timeout');
  });

  it('drops in FORWARD with the rule and its comment in the trace, and REJECT answers with ICMP', () => {
    const w = serviceWorld();
    w.iptablesRestore(
      'node2',
      `*filter
:FORWARD DROP [0:0]
-A FORWARD -d 10.244.2.3/32 -p tcp -m tcp --dport 8080 -j REJECT --reject-with icmp-port-unreachable
-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A FORWARD -p icmp -m comment --comment "allow ping to pod2" -d 10.244.2.2/32 -j ACCEPT
COMMIT
`,
    );
    expect(w.ping('pod1', '10.244.2.2').reachable).toBe(true);
    const p = w.ping('pod1', '10.244.2.3');
    expect(p.reachable).toBe(false);
    const last = p.trace.filter((h) => h.kind === 'drop').at(-1)!;
    expect(last).toMatchObject({ ns: 'node2', detail: 'filter FORWARD policy DROP', reason: 'filter FORWARD policy DROP' });
    const t = w.tcpConnect('pod1', '10.244.2.3', 8080);
    expect(t.state).toBe('unreachable');
    expect(t.trace.find((h) => h.kind === 'drop')!.detail).toBe(
      'filter FORWARD rule 1: -A FORWARD -d 10.244.2.3/32 -p tcp -m tcp --dport 8080 -j REJECT --reject-with icmp-port-unreachable',
    );
  });

  it('treats an echo request against the direction of a tracked ping as a new connection, as the kernel does', () => {
    const w = vxlanWorld();
    w.iptablesRestore(
      'node2',
      '*filter\n:FORWARD DROP [0:0]\n-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n-A FORWARD -d 10.244.2.2/32 -j ACCEPT\nCOMMIT\n',
    );
    expect(w.ping('pod1', '10.244.2.2').reachable).toBe(true);
    // pod2's own first echo id equals pod1's: still not a reply of pod1's ping, so FORWARD's policy drops it.
    expect(w.ping('pod2', '10.244.1.2').reachable).toBe(false);
  });

  it('deletes the connections to an address or from an endpoint, like conntrack -D', () => {
    const w = serviceWorld();
    for (let i = 0; i < 10; i++) w.tcpConnect('pod1', '10.96.0.10', 80, { trace: false });
    const tcp = () => w.conntrack('node1').filter((c) => c.proto === 6);
    const viaA = tcp().filter((c) => c.reply.startsWith('10.244.2.2:')).length;
    expect(w.deleteConntrack('node1', { proto: 'tcp', replySrc: '10.244.2.2' })).toBe(viaA);
    expect(tcp().every((c) => c.reply.startsWith('10.244.2.3:'))).toBe(true);
    expect(w.deleteConntrack('node1', { proto: 'udp', origDst: '10.96.0.10' })).toBe(0);
    expect(w.deleteConntrack('node1', { origDst: '10.96.0.10' })).toBe(10 - viaA);
    expect(tcp()).toEqual([]);
    expect(() => w.deleteConntrack('node1', { origDst: 'nope' })).toThrow(/invalid address "nope"/);
  });

  it('fails a local send dropped in OUTPUT with EPERM', () => {
    const w = vxlanWorld();
    w.iptablesRestore('pod1', '*filter\n-A OUTPUT -d 10.244.2.2/32 -m comment --comment "no egress to pod2" -j DROP\nCOMMIT\n');
    const r = w.udpSend('pod1', '10.244.2.2', 53);
    expect(r.error?.code).toBe('EPERM');
    expect(r.trace.at(-1)).toMatchObject({ kind: 'drop', reason: 'dropped: no egress to pod2' });
  });

  it('looks Services up in a verdict map, nftables style', () => {
    const w = serviceWorld();
    w.iptablesRestore(
      'node1',
      `*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:svc-web - [0:0]
-A PREROUTING -j VMAP --map service-ips --key daddr.l4proto.dport
-A svc-web -p tcp -j DNAT --to-destination 10.244.2.3:8080
COMMIT
`,
    );
    w.nftSetMap('node1', 'service-ips', { '10.96.0.10 . tcp . 80': 'goto svc-web' });
    const r = w.tcpConnect('pod1', '10.96.0.10', 80);
    expect(r.state).toBe('established');
    expect(formatTrace(r.trace)).toContain('10.96.0.10 . tcp . 80 -> goto svc-web');
    expect(w.tcpConnect('pod1', '10.96.0.11', 80, { trace: false }).state).not.toBe('established');
  });

  it('keeps a client on one endpoint with the recent match (sessionAffinity: ClientIP)', () => {
    const w = serviceWorld();
    const affinity = SERVICE.replace(
      '-A KUBE-SVC-WEB -m comment --comment "default/web:http -> 10.244.2.2:8080" -m statistic',
      '-A KUBE-SVC-WEB -m comment --comment default/web:http -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-A --mask 255.255.255.255 --rsource -j KUBE-SEP-A\n' +
        '-A KUBE-SVC-WEB -m comment --comment default/web:http -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-B --mask 255.255.255.255 --rsource -j KUBE-SEP-B\n' +
        '-A KUBE-SVC-WEB -m comment --comment "default/web:http -> 10.244.2.2:8080" -m statistic',
    ).replace(/(-A KUBE-SEP-([AB]) -p tcp)/g, '-A KUBE-SEP-$2 -m recent --set --name KUBE-SEP-$2 --mask 255.255.255.255 --rsource\n$1');
    w.iptablesRestore('node1', affinity);
    const seen = new Set<string>();
    for (let i = 0; i < 30; i++) {
      w.tcpConnect('pod1', '10.96.0.10', 80, { trace: false });
    }
    for (const c of w.conntrack('node1').filter((x) => x.proto === 6)) seen.add(c.reply.split(':')[0]!);
    expect(seen.size).toBe(1);
  });
});

describe('netfilter: iptables-restore input', () => {
  it('reads back what it loaded, as iptables-save prints it', () => {
    const w = serviceWorld();
    const saved = w.iptablesSave('node1');
    expect(saved).toContain('-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000');
    expect(saved).toContain('-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0');
    expect(saved).toContain('-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN');
    expect(saved).toContain('-A KUBE-SEP-A -s 10.244.2.2/32 -m comment --comment default/web:http -j KUBE-MARK-MASQ');
    w.iptablesRestore('node2', saved);
    expect(w.iptablesSave('node2')).toBe(saved);
  });

  it('survives a save and reload of the world', () => {
    const w = serviceWorld();
    w.nftSetMap('node1', 'service-ips', { '10.96.0.10 . tcp . 80': 'accept' });
    const again = World.fromJSON(JSON.parse(JSON.stringify(w.toJSON())));
    expect(again.iptablesSave('node1')).toBe(w.iptablesSave('node1'));
    expect(again.tcpConnect('pod1', '10.96.0.10', 80).state).toBe('established');
  });

  it('refuses bad input with the line and reason, and leaves the tables as they were', () => {
    const w = serviceWorld();
    const before = w.iptablesSave('node1');
    const cases: [string, RegExp][] = [
      ['*nat\n:X - [0:0]\n-A X -j KUBE-NOPE\nCOMMIT\n', /line 4: chain "X" jumps to "KUBE-NOPE", which does not exist in table nat/],
      ['*nat\n-A PREROUTING -d 10.96.0.300/32 -j ACCEPT\nCOMMIT\n', /line 2: host\/network `10\.96\.0\.300\/32' not found/],
      ['*nat\n-A PREROUTING -p tcp --dport 80 -j ACCEPT\nCOMMIT\n', /line 2: unknown option "--dport"/],
      ['*nat\n-A PREROUTING -m statistic --mode random --probability 1.5 -j ACCEPT\nCOMMIT\n', /invalid probability "1\.5"/],
      ['*filter\n-A FORWARD -j DNAT --to-destination 10.0.0.1\nCOMMIT\n', /only valid in the nat table/],
      ['*nat\n-A PREROUTING -j ACCEPT\n', /missing COMMIT/],
      ['*bogus\nCOMMIT\n', /table "bogus" does not exist/],
      ['*nat\n-A PREROUTING -m comment --comment "open -j ACCEPT\nCOMMIT\n', /unterminated quote/],
      ['*nat\n-A PREROUTING -d fd00::1/128 -j ACCEPT\nCOMMIT\n', /not an IPv4 address/],
    ];
    for (const [input, err] of cases) {
      expect(() => w.iptablesRestore('node1', input)).toThrow(err);
      expect(w.iptablesSave('node1')).toBe(before);
    }
  });

  it('counts a new generation only when a restore changes a rule, and zeroes the counters of the chains it declares either way', () => {
    const w = serviceWorld();
    w.tcpConnect('pod1', '10.96.0.10', 80, { trace: false });
    const dnatPackets = () => w.iptablesCounters('node1', { table: 'nat' }).filter((c) => c.chain.startsWith('KUBE-SEP-') && c.rule.includes('DNAT')).reduce((n, c) => n + c.packets, 0);
    expect(dnatPackets()).toBeGreaterThan(0);
    const g0 = w.netfilterGeneration('node1');
    // The same rules again (a whole table restored from its own save): no new generation, counters zeroed.
    w.iptablesRestore('node1', w.iptablesSave('node1'));
    expect(w.netfilterGeneration('node1')).toBe(g0);
    expect(dnatPackets()).toBe(0);
    // One rule different: a new generation.
    w.iptablesRestore('node1', '*filter\n-A FORWARD -s 10.0.0.1/32 -j DROP\nCOMMIT\n', { noflush: true });
    const g1 = w.netfilterGeneration('node1');
    expect(g1).not.toBe(g0);
    // A chain declared afresh with its rules as they were is no change; one left empty is.
    w.iptablesRestore('node1', '*filter\n-F FORWARD\n-A FORWARD -s 10.0.0.1/32 -j DROP\nCOMMIT\n', { noflush: true });
    expect(w.netfilterGeneration('node1')).toBe(g1);
    w.iptablesRestore('node1', '*filter\n-F FORWARD\nCOMMIT\n', { noflush: true });
    expect(w.netfilterGeneration('node1')).not.toBe(g1);
  });

  it('with --noflush changes only the chains it names', () => {
    const w = serviceWorld();
    w.iptablesRestore('node1', '*nat\n:KUBE-SVC-WEB - [0:0]\n-A KUBE-SVC-WEB -j KUBE-SEP-B\nCOMMIT\n', { noflush: true });
    const saved = w.iptablesSave('node1');
    expect(saved).toContain('-A KUBE-SVC-WEB -j KUBE-SEP-B');
    expect(saved).not.toContain('--probability');
    expect(saved).toContain('-A KUBE-SEP-A -p tcp');
    expect(w.tcpConnect('pod1', '10.96.0.10', 80).state).toBe('established');
    expect(w.conntrack('node1').find((c) => c.proto === 6)!.reply).toMatch(/^10\.244\.2\.3:8080/);
  });
});
