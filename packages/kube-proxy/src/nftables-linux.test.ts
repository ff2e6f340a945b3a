// nftables mode on real Linux and on netsim: `nft list table ip kube-proxy` read back from the kernel
// (parsed and printed by netsim) is what netsim holds for the same transaction, and real TCP connects to
// ClusterIPs and a NodePort reach the endpoints netsim predicts, and fail where netsim says they fail.
import { World } from '@kemu/netsim';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildNftables, listedObjects, NFT_TABLE, nftablesScript } from './nftables-rules.js';
import { linuxRuleSink } from './rule-sink.js';
import { servicePorts } from './service-ports.js';
import { LinuxTestNode, simTestNode } from './linux-test-node.js';
import { service, slice } from './test-helpers.js';

const ok = requirePeers('the kube-proxy nftables linux tests', [peers.netns, peers.nft]);

// web: two endpoints; empty: none; sticky: ClientIP affinity over both; np: a NodePort to s1.
const SERVICES = [
  service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] }),
  service('empty', { clusterIP: '10.96.0.22', clusterIPs: ['10.96.0.22'] }),
  service('sticky', { clusterIP: '10.96.0.23', clusterIPs: ['10.96.0.23'], sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } }),
  service('np', { type: 'NodePort', clusterIP: '10.96.0.24', clusterIPs: ['10.96.0.24'], ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] }),
];
const SLICES = [
  slice('web', [{ ip: '10.244.2.2', node: 'node' }, { ip: '10.244.3.2', node: 'node' }]),
  slice('sticky', [{ ip: '10.244.2.2', node: 'node' }, { ip: '10.244.3.2', node: 'node' }]),
  slice('np', [{ ip: '10.244.2.2', node: 'node' }]),
];
const CTX = { nodeName: 'node', clusterCIDR: '10.244.0.0/16', serviceCIDRs: ['10.96.0.0/16'] };
const PODS = { client: '10.244.1.2', s1: '10.244.2.2', s2: '10.244.3.2' } as const;
const rules = () => buildNftables(servicePorts(SERVICES, SLICES), CTX);
/** A listing's chains and sets in any order (the kernel lists them in the order they were made). */
const blocks = (listing: string) => listing.split('\n\n').map((b) => b.replace(/^table[^\n]*\n|\n}\n$/g, '')).sort();

/** The same node, pods and outside host on netsim, with the same transaction applied. */
function simWorld(): World {
  const w = simTestNode(PODS);
  w.nft('node', nftablesScript(rules(), null));
  return w;
}

describe.runIf(ok)('kube-proxy nftables mode on real Linux', () => {
  let node: LinuxTestNode;

  beforeAll(async () => {
    node = await LinuxTestNode.start(PODS, ['s1', 's2']);
    const sink = linuxRuleSink(node.path('node')).nft!;
    await sink.apply(nftablesScript(rules(), null, listedObjects(await sink.list('ip', NFT_TABLE))));
  }, 60_000);

  afterAll(() => node?.stop());

  it('reads back, through nft list table, what netsim holds for the same transaction', async () => {
    const real = await linuxRuleSink(node.path('node')).nft!.list('ip', NFT_TABLE);
    expect(real).toContain('map service-ips {');
    // Parse the kernel's own listing with netsim and print it again: equal when netsim understood every
    // chain, rule, map and element as nft did.
    const back = new World();
    back.addNamespace('node');
    back.nft('node', real);
    expect(blocks(back.nftList('node', 'ip', NFT_TABLE))).toEqual(blocks(simWorld().nftList('node', 'ip', NFT_TABLE)));
  });

  it('an incremental transaction (an endpoint goes) leaves the kernel where a full one leaves netsim', async () => {
    const sink = linuxRuleSink(node.path('node')).nft!;
    const fewer = buildNftables(servicePorts(SERVICES, [SLICES[0]!, slice('sticky', [{ ip: '10.244.2.2', node: 'node' }]), SLICES[2]!]), CTX);
    await sink.apply(nftablesScript(fewer, rules()));
    const w = new World();
    w.addNamespace('node');
    w.nft('node', nftablesScript(fewer, null));
    const back = new World();
    back.addNamespace('node');
    back.nft('node', await sink.list('ip', NFT_TABLE));
    expect(blocks(back.nftList('node', 'ip', NFT_TABLE))).toEqual(blocks(w.nftList('node', 'ip', NFT_TABLE)));
    // And back again, for the connects below.
    await sink.apply(nftablesScript(rules(), fewer));
  });

  it('sends connections to the endpoints netsim predicts, and refuses or drops them where netsim does', () => {
    const script = `
      const net = require('net');
      const one = (host, port, timeout) => new Promise((res) => { const s = net.connect({ host, port, timeout });
        let d = ''; s.on('data', (c) => (d += c)); s.on('end', () => res(d)); s.on('error', (e) => res('error:' + e.code)); s.on('timeout', () => { s.destroy(); res('timeout'); }); });
      const many = async (host, port) => { const seen = new Set(); for (let i = 0; i < 30; i++) seen.add(await one(host, port, 3000)); return [...seen].sort(); };
      (async () => console.log(JSON.stringify({
        web: await many('10.96.0.20', 80), sticky: await many('10.96.0.23', 80),
        empty: await one('10.96.0.22', 80, 3000), port: await one('10.96.0.20', 81, 3000), unallocated: await one('10.96.0.99', 80, 1000),
      })))();`;
    const r = node.inNs('client', process.execPath, ['-e', script]);
    expect(r.status, r.stderr).toBe(0);
    const real = JSON.parse(r.stdout) as Record<string, string | string[]>;
    const fromOut = node.inNs('out', process.execPath, ['-e', `const s = require('net').connect({ host: '192.168.99.1', port: 30080, timeout: 3000 }); let d = ''; s.on('data', (c) => (d += c)); s.on('end', () => console.log(d)); s.on('error', (e) => console.log('error:' + e.code));`]);

    const w = simWorld();
    const endpoints = (ip: string) => {
      w.flushConntrack('node');
      for (let i = 0; i < 30; i++) expect(w.tcpConnect('client', ip, 80, { trace: false }).state).toBe('established');
      return [...new Set(w.conntrack('node').filter((c) => c.proto === 6).map((c) => c.reply.split(':')[0]!))].sort();
    };
    expect(real.web).toEqual(endpoints('10.96.0.20'));
    expect(real.web).toEqual(['10.244.2.2', '10.244.3.2']);
    const sticky = endpoints('10.96.0.23');
    expect(sticky).toHaveLength(1);
    expect(real.sticky).toHaveLength(1);
    // reject (no endpoints, or a port the ClusterIP does not serve): refused; an unallocated ClusterIP: dropped.
    expect([real.empty, w.tcpConnect('client', '10.96.0.22', 80, { trace: false }).state]).toEqual(['error:ECONNREFUSED', 'unreachable']);
    expect([real.port, w.tcpConnect('client', '10.96.0.20', 81, { trace: false }).state]).toEqual(['error:ECONNREFUSED', 'unreachable']);
    const dropped = w.tcpConnect('client', '10.96.0.99', 80);
    expect(real.unallocated).toBe('timeout');
    expect(dropped.trace.find((h) => h.kind === 'drop')!.detail).toContain('cluster-ips-check rule 2');
    // The NodePort from outside the node: the answer comes from s1, masqueraded on the way in.
    expect(fromOut.stdout.trim()).toBe('10.244.2.2');
    expect(w.tcpConnect('out', '192.168.99.1', 30080, { trace: false }).state).toBe('established');
  });
});
