import { describe, expect, it } from 'vitest';
import { vxlanWorld } from './test-topologies.js';
import { formatTrace } from './trace.js';

// A Service the way kube-proxy's nftables mode lays it out, on node1: 10.96.0.10:80 -> pod2/pod3:8080,
// and 10.96.0.11:80 without endpoints (rejected before DNAT).
const SERVICE = `add table ip kube-proxy { comment "rules for kube-proxy" ; }
add chain ip kube-proxy filter-output { type filter hook output priority -110 ; }
add chain ip kube-proxy filter-forward { type filter hook forward priority -110 ; }
add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority dstnat ; }
add chain ip kube-proxy nat-output { type nat hook output priority dstnat ; }
add chain ip kube-proxy nat-postrouting { type nat hook postrouting priority srcnat ; }
add chain ip kube-proxy services
add chain ip kube-proxy masquerading
add chain ip kube-proxy mark-for-masquerade
add chain ip kube-proxy service-endpoints-check
add chain ip kube-proxy reject-chain
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; }
add map ip kube-proxy no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; }
add rule ip kube-proxy reject-chain reject
add rule ip kube-proxy filter-output ct state new jump service-endpoints-check
add rule ip kube-proxy filter-forward ct state new jump service-endpoints-check
add rule ip kube-proxy service-endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
add rule ip kube-proxy nat-prerouting jump services
add rule ip kube-proxy nat-output jump services
add rule ip kube-proxy nat-postrouting jump masquerading
add rule ip kube-proxy mark-for-masquerade mark set mark or 0x4000
add rule ip kube-proxy masquerading mark and 0x4000 == 0 return
add rule ip kube-proxy masquerading mark set mark xor 0x4000
add rule ip kube-proxy masquerading masquerade fully-random
add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips
add chain ip kube-proxy service-W/default/web/tcp/http
add chain ip kube-proxy endpoint-A/default/web/tcp/http__10.244.2.2/8080
add chain ip kube-proxy endpoint-B/default/web/tcp/http__10.244.2.3/8080
add rule ip kube-proxy service-W/default/web/tcp/http numgen random mod 2 vmap { 0 : goto endpoint-A/default/web/tcp/http__10.244.2.2/8080 , 1 : goto endpoint-B/default/web/tcp/http__10.244.2.3/8080 }
add rule ip kube-proxy endpoint-A/default/web/tcp/http__10.244.2.2/8080 ip saddr 10.244.2.2 jump mark-for-masquerade
add rule ip kube-proxy endpoint-A/default/web/tcp/http__10.244.2.2/8080 meta l4proto tcp dnat to 10.244.2.2:8080
add rule ip kube-proxy endpoint-B/default/web/tcp/http__10.244.2.3/8080 ip saddr 10.244.2.3 jump mark-for-masquerade
add rule ip kube-proxy endpoint-B/default/web/tcp/http__10.244.2.3/8080 meta l4proto tcp dnat to 10.244.2.3:8080
add element ip kube-proxy service-ips { 10.96.0.10 . tcp . 80 : goto service-W/default/web/tcp/http }
add element ip kube-proxy no-endpoint-services { 10.96.0.11 . tcp . 80 comment "default/empty:http" : goto reject-chain }
`;

function serviceWorld() {
  const w = vxlanWorld();
  w.addNamespace('pod3');
  w.addLink('node2', { kind: 'veth', name: 'vethpod3', peer: { name: 'eth0', ns: 'pod3' } });
  w.setLink('node2', 'vethpod3', { master: 'cni0', up: true });
  w.setLink('pod3', 'lo', { up: true });
  w.setLink('pod3', 'eth0', { up: true });
  w.addAddress('pod3', 'eth0', '10.244.2.3/24');
  w.addRoute('pod3', { dst: 'default', via: '10.244.2.1' });
  for (const p of ['pod2', 'pod3']) w.listen(p, { proto: 'tcp', port: 8080 });
  w.nft('node1', SERVICE);
  return w;
}

describe('netfilter: nftables tables', () => {
  it('DNATs through the service-ips verdict map and a numgen vmap, naming every rule on the way', () => {
    const w = serviceWorld();
    const r = w.tcpConnect('pod1', '10.96.0.10', 80);
    expect(r.state).toBe('established');
    const text = formatTrace(r.trace);
    expect(text).toContain('nft ip kube-proxy services rule 1: ip daddr . meta l4proto . th dport vmap @service-ips: 10.96.0.10 . tcp . 80 -> goto service-W/default/web/tcp/http');
    expect(text).toMatch(/nft ip kube-proxy endpoint-[AB]\S+ rule 2: meta l4proto tcp dnat to 10\.244\.2\.[23]:8080: 10\.96\.0\.10:80 -> 10\.244\.2\.[23]:8080/);
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) expect(w.tcpConnect('pod1', '10.96.0.10', 80, { trace: false }).state).toBe('established');
    for (const c of w.conntrack('node1')) if (c.proto === 6) seen.add(c.reply.split(':')[0]!);
    expect([...seen].sort()).toEqual(['10.244.2.2', '10.244.2.3']);
  });

  it('rejects a Service without endpoints in the filter chain, before any DNAT, and says which', () => {
    const w = serviceWorld();
    // Nodes route Service addresses somewhere (a default route); without one the packet never meets FORWARD.
    w.addRoute('node1', { dst: '10.96.0.0/12', dev: 'cni0' });
    const r = w.tcpConnect('pod1', '10.96.0.11', 80);
    expect(r.state).toBe('unreachable');
    expect(r.trace.find((h) => h.kind === 'drop')).toMatchObject({ ns: 'node1', reason: 'rejected: default/empty:http (@no-endpoint-services)' });
  });

  it('masquerades what mark-for-masquerade marked: an endpoint reaching itself through its Service', () => {
    const w = serviceWorld();
    w.nft('node1', 'flush chain ip kube-proxy service-W/default/web/tcp/http\nadd rule ip kube-proxy service-W/default/web/tcp/http goto endpoint-A/default/web/tcp/http__10.244.2.2/8080');
    // pod2 is on node2, whose table is empty: give node2 the same rules and connect from pod2 to itself.
    w.nft('node2', SERVICE);
    w.nft('node2', 'flush chain ip kube-proxy service-W/default/web/tcp/http\nadd rule ip kube-proxy service-W/default/web/tcp/http goto endpoint-A/default/web/tcp/http__10.244.2.2/8080');
    const r = w.tcpConnect('pod2', '10.96.0.10', 80);
    expect(r.state).toBe('established');
    expect(w.conntrack('node2').find((c) => c.proto === 6)!.nat).toEqual(['dnat', 'snat']);
  });

  it('lists what it holds as nft list table prints it, and reads that text back to the same', () => {
    const w = serviceWorld();
    const text = w.nftList('node1', 'ip', 'kube-proxy');
    expect(text).toContain('\tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}');
    expect(text).toContain('\t\tmeta mark & 0x00004000 == 0x00000000 return\n\t\tmeta mark set meta mark ^ 0x00004000\n');
    expect(text).toContain('elements = { 10.96.0.11 . tcp . 80 comment "default/empty:http" : goto reject-chain }');
    w.addNamespace('copy');
    w.nft('copy', text);
    expect(w.nftList('copy', 'ip', 'kube-proxy')).toBe(text);
    expect(w.nftTables('copy')).toEqual(['ip kube-proxy']);
  });

  it('refuses bad input with the line and reason, and leaves the tables as they were', () => {
    const w = serviceWorld();
    const before = w.nftList('node1', 'ip', 'kube-proxy');
    expect(() => w.nft('node1', 'add chain ip kube-proxy x\nadd rule ip kube-proxy x ip daddr 10.1.2.300 drop')).toThrow(/^line 2: .*10\.1\.2\.300/);
    expect(() => w.nft('node1', 'add chain ip kube-proxy y\nadd rule ip kube-proxy y jump nowhere')).toThrow(/chain "nowhere" does not exist/);
    expect(() => w.nft('node1', 'flush chain ip kube-proxy reject-chain\ndelete chain ip kube-proxy reject-chain')).toThrow(/still referenced/);
    expect(() => w.nft('node1', 'add element ip kube-proxy service-ips { 10.96.0.12 . tcp : accept }')).toThrow(/does not match the key type/);
    expect(() => w.nft('node1', 'delete element ip kube-proxy service-ips { 10.96.0.99 . tcp . 80 }')).toThrow(/No such file or directory/);
    expect(() => w.nft('node1', 'add table inet other')).toThrow(/unsupported table family "inet"/);
    expect(w.nftList('node1', 'ip', 'kube-proxy')).toBe(before);
    expect(w.tcpConnect('pod1', '10.96.0.10', 80, { trace: false }).state).toBe('established');
  });

  it('deletes a chain once nothing names it, and the Service with it', () => {
    const w = serviceWorld();
    w.nft(
      'node1',
      [
        'delete element ip kube-proxy service-ips { 10.96.0.10 . tcp . 80 }',
        'flush chain ip kube-proxy service-W/default/web/tcp/http',
        'delete chain ip kube-proxy service-W/default/web/tcp/http',
        'flush chain ip kube-proxy endpoint-A/default/web/tcp/http__10.244.2.2/8080',
        'delete chain ip kube-proxy endpoint-A/default/web/tcp/http__10.244.2.2/8080',
      ].join('\n'),
    );
    expect(w.nftList('node1', 'ip', 'kube-proxy')).not.toContain('service-W');
    expect(w.tcpConnect('pod1', '10.96.0.10', 80, { trace: false }).state).not.toBe('established');
  });

  it('lets nodes with the same rules share one table: a change through one is seen by the other', () => {
    const w = serviceWorld();
    w.addRoute('node2', { dst: '10.96.0.0/12', dev: 'cni0' });
    const reason = () => w.tcpConnect('pod2', '10.96.0.11', 80).trace.find((h) => h.kind === 'drop')?.reason;
    expect(reason()).not.toContain('default/empty:http');
    w.nftShare('node1', 'node2');
    expect(reason()).toBe('rejected: default/empty:http (@no-endpoint-services)');
    w.nft('node1', 'delete element ip kube-proxy no-endpoint-services { 10.96.0.11 . tcp . 80 }');
    expect(w.nftList('node2', 'ip', 'kube-proxy')).not.toContain('default/empty:http');
    expect(reason()).not.toContain('default/empty:http');
  });
});
