// nftables mode on real Linux and on netsim: `nft list table ip kube-proxy` read back from the kernel
// (parsed and printed by netsim) is what netsim holds for the same transaction, and real TCP connects to
// ClusterIPs and a NodePort reach the endpoints netsim predicts, and fail where netsim says they fail.
import { spawn, spawnSync } from 'node:child_process';
import { World } from '@kemu/netsim';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildNftables, listedObjects, NFT_TABLE, nftablesScript } from './nftables-rules.js';
import { linuxRuleSink } from './rule-sink.js';
import { servicePorts } from './service-ports.js';
import { service, slice } from './test-helpers.js';

const ok = requirePeers('the kube-proxy nftables linux tests', [peers.netns, peers.nft]);

const created: string[] = [];
let n = 0;
function netns(tag: string): string {
  const name = `kemu-test-${process.pid}-${tag}-${n++}`;
  const r = spawnSync('ip', ['netns', 'add', name], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip netns add ${name}: ${r.stderr}`);
  created.push(name);
  return name;
}
function ip(args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}
function inNs(ns: string, cmd: string, args: string[]) {
  return spawnSync('nsenter', [`--net=/var/run/netns/${ns}`, '--', cmd, ...args], { encoding: 'utf8', timeout: 60_000 });
}

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
  const w = new World();
  w.addNamespace('node');
  w.setForwarding('node', 4, true);
  for (const [i, [pod, addr]] of Object.entries(PODS).entries()) {
    const gw = addr.replace(/\.\d+$/, '.1');
    w.addNamespace(pod);
    w.addLink('node', { kind: 'veth', name: `kp${i}`, peer: { name: 'eth0', ns: pod } });
    w.addAddress('node', `kp${i}`, `${gw}/24`);
    w.setLink('node', `kp${i}`, { up: true });
    w.addAddress(pod, 'eth0', `${addr}/24`);
    w.setLink(pod, 'eth0', { up: true });
    w.setLink(pod, 'lo', { up: true });
    w.addRoute(pod, { dst: 'default', via: gw });
    w.listen(pod, { proto: 'tcp', port: 8080 });
  }
  w.addNamespace('out');
  w.setLink('out', 'lo', { up: true });
  w.addLink('node', { kind: 'veth', name: 'up0', peer: { name: 'eth0', ns: 'out' } });
  w.addAddress('out', 'eth0', '192.168.99.2/24');
  w.setLink('out', 'eth0', { up: true });
  w.addAddress('node', 'up0', '192.168.99.1/24');
  w.setLink('node', 'up0', { up: true });
  w.addRoute('node', { dst: 'default', via: '192.168.99.2' });
  w.addRoute('out', { dst: '10.244.0.0/16', via: '192.168.99.1' });
  w.nft('node', nftablesScript(rules(), null));
  return w;
}

describe.runIf(ok)('kube-proxy nftables mode on real Linux', () => {
  const ns: Record<string, string> = {};
  const servers: ReturnType<typeof spawn>[] = [];

  beforeAll(async () => {
    ns.node = netns('node');
    for (const [i, [pod, addr]] of Object.entries(PODS).entries()) {
      ns[pod] = netns(pod);
      const gw = addr.replace(/\.\d+$/, '.1');
      ip(['link', 'add', `kp${i}`, 'netns', ns.node, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns[pod]!]);
      ip(['-n', ns.node, 'addr', 'add', `${gw}/24`, 'dev', `kp${i}`]);
      ip(['-n', ns.node, 'link', 'set', `kp${i}`, 'up']);
      ip(['-n', ns[pod]!, 'addr', 'add', `${addr}/24`, 'dev', 'eth0']);
      ip(['-n', ns[pod]!, 'link', 'set', 'eth0', 'up']);
      ip(['-n', ns[pod]!, 'link', 'set', 'lo', 'up']);
      ip(['-n', ns[pod]!, 'route', 'add', 'default', 'via', gw]);
    }
    expect(inNs(ns.node, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']).status).toBe(0);
    ns.out = netns('out');
    ip(['link', 'add', 'up0', 'netns', ns.node, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.out]);
    ip(['-n', ns.out, 'addr', 'add', '192.168.99.2/24', 'dev', 'eth0']);
    ip(['-n', ns.out, 'link', 'set', 'eth0', 'up']);
    ip(['-n', ns.out, 'link', 'set', 'lo', 'up']);
    ip(['-n', ns.out, 'route', 'add', '10.244.0.0/16', 'via', '192.168.99.1']);
    ip(['-n', ns.node, 'addr', 'add', '192.168.99.1/24', 'dev', 'up0']);
    ip(['-n', ns.node, 'link', 'set', 'up0', 'up']);
    ip(['-n', ns.node, 'route', 'add', 'default', 'via', '192.168.99.2']);
    // Each endpoint answers with its own address, so the client sees which one the kernel picked.
    for (const pod of ['s1', 's2'] as const) {
      const srv = spawn('nsenter', [`--net=/var/run/netns/${ns[pod]}`, '--', process.execPath, '-e', `require('net').createServer((s) => s.end('${PODS[pod]}')).listen(8080, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
      servers.push(srv);
      await new Promise((r) => srv.stdout!.once('data', r));
    }
    const sink = linuxRuleSink(`/var/run/netns/${ns.node}`).nft!;
    await sink.apply(nftablesScript(rules(), null, listedObjects(await sink.list('ip', NFT_TABLE))));
  }, 60_000);

  afterAll(() => {
    for (const s of servers) s.kill();
    for (const name of created) spawnSync('ip', ['netns', 'del', name]);
  });

  it('reads back, through nft list table, what netsim holds for the same transaction', async () => {
    const real = await linuxRuleSink(`/var/run/netns/${ns.node}`).nft!.list('ip', NFT_TABLE);
    expect(real).toContain('map service-ips {');
    // Parse the kernel's own listing with netsim and print it again: equal when netsim understood every
    // chain, rule, map and element as nft did.
    const back = new World();
    back.addNamespace('node');
    back.nft('node', real);
    expect(blocks(back.nftList('node', 'ip', NFT_TABLE))).toEqual(blocks(simWorld().nftList('node', 'ip', NFT_TABLE)));
  });

  it('an incremental transaction (an endpoint goes) leaves the kernel where a full one leaves netsim', async () => {
    const sink = linuxRuleSink(`/var/run/netns/${ns.node}`).nft!;
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
    const r = inNs(ns.client!, process.execPath, ['-e', script]);
    expect(r.status, r.stderr).toBe(0);
    const real = JSON.parse(r.stdout) as Record<string, string | string[]>;
    const fromOut = inNs(ns.out!, process.execPath, ['-e', `const s = require('net').connect({ host: '192.168.99.1', port: 30080, timeout: 3000 }); let d = ''; s.on('data', (c) => (d += c)); s.on('end', () => console.log(d)); s.on('error', (e) => console.log('error:' + e.code));`]);

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
