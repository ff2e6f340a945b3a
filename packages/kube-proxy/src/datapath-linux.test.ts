// The same rules on real Linux and on netsim: iptables-save reads back what netsim prints, and real TCP
// connections to a ClusterIP reach the endpoint set netsim predicts (and fail where netsim says so).
import { spawn, spawnSync } from 'node:child_process';
import { World } from '@kemu/netsim';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRules, restoreInput } from './iptables-rules.js';
import { linuxRuleSink, simRuleSink } from './rule-sink.js';
import { servicePorts } from './service-ports.js';
import { service, slice } from './test-helpers.js';

const ok = requirePeers('the kube-proxy linux datapath tests', [peers.netns, peers.iptables]);

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
function inNs(ns: string, cmd: string, args: string[], input?: string) {
  return spawnSync('nsenter', [`--net=/var/run/netns/${ns}`, '--', cmd, ...args], { encoding: 'utf8', input, timeout: 20_000 });
}

// Services: web has two endpoints, empty has none.
const SERVICES = [service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] }), service('empty', { clusterIP: '10.96.0.22', clusterIPs: ['10.96.0.22'] })];
const SLICES = [slice('web', [{ ip: '10.244.2.2', node: 'node' }, { ip: '10.244.3.2', node: 'node' }])];
const CTX = { nodeName: 'node', clusterCIDR: '10.244.0.0/16' };
const PODS = { client: '10.244.1.2', s1: '10.244.2.2', s2: '10.244.3.2' } as const;

describe.runIf(ok)('kube-proxy rules on real Linux', () => {
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
    // A default route out of the node, as real nodes have: a packet nothing else routes meets FORWARD.
    ns.out = netns('out');
    ip(['link', 'add', 'up0', 'netns', ns.node, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.out]);
    ip(['-n', ns.out, 'addr', 'add', '192.168.99.2/24', 'dev', 'eth0']);
    ip(['-n', ns.out, 'link', 'set', 'eth0', 'up']);
    ip(['-n', ns.node, 'addr', 'add', '192.168.99.1/24', 'dev', 'up0']);
    ip(['-n', ns.node, 'link', 'set', 'up0', 'up']);
    ip(['-n', ns.node, 'route', 'add', 'default', 'via', '192.168.99.2']);
    // Each endpoint answers with its own address, so the client sees which one the kernel picked.
    for (const pod of ['s1', 's2'] as const) {
      const srv = spawn('nsenter', [`--net=/var/run/netns/${ns[pod]}`, '--', process.execPath, '-e', `require('net').createServer((s) => s.end('${PODS[pod]}')).listen(8080, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
      servers.push(srv);
      await new Promise((r) => srv.stdout!.once('data', r));
    }
    const sink = linuxRuleSink(`/var/run/netns/${ns.node}`);
    await sink.restore(restoreInput(buildRules(servicePorts(SERVICES, SLICES), CTX), await sink.save()));
  }, 60_000);

  afterAll(() => {
    for (const s of servers) s.kill();
    for (const name of created) spawnSync('ip', ['netns', 'del', name]);
  });

  it('reads back, through iptables-save, what netsim holds for the same input', async () => {
    const w = new World();
    w.addNamespace('node');
    const sim = simRuleSink(w, 'node');
    await sim.restore(restoreInput(buildRules(servicePorts(SERVICES, SLICES), CTX), await sim.save()));
    const real = await linuxRuleSink(`/var/run/netns/${ns.node}`).save();
    // Parse the kernel's own text with netsim and print it again: equal when netsim understood every rule
    // as iptables did (addresses, ports, marks, probabilities, comments, targets).
    const back = new World();
    back.addNamespace('node');
    const strip = (s: string) => s.replace(/^#.*\n/gm, '').replace(/\[\d+:\d+\]/g, '[0:0]');
    back.iptablesRestore('node', strip(real));
    for (const table of ['filter', 'nat'] as const) {
      const kube = (s: string) => s.split('\n').filter((l) => /KUBE-/.test(l)).sort();
      expect(kube(back.iptablesSave('node', { table }))).toEqual(kube(w.iptablesSave('node', { table })));
    }
  });

  it('sends ClusterIP connections to the endpoints netsim predicts, and refuses them where netsim does', () => {
    const script = `
      const net = require('net'); const seen = new Set(); let left = 30; let refused = 0;
      const one = (host, port) => new Promise((res) => { const s = net.connect({ host, port, timeout: 3000 });
        let d = ''; s.on('data', (c) => (d += c)); s.on('end', () => res(d)); s.on('error', (e) => res('error:' + e.code)); s.on('timeout', () => { s.destroy(); res('timeout'); }); });
      (async () => { for (; left > 0; left--) seen.add(await one('10.96.0.20', 80)); console.log(JSON.stringify({ seen: [...seen].sort(), empty: await one('10.96.0.22', 80) })); })();`;
    const r = inNs(ns.client!, process.execPath, ['-e', script]);
    expect(r.status, r.stderr).toBe(0);
    const real = JSON.parse(r.stdout) as { seen: string[]; empty: string };

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
    w.addLink('node', { kind: 'veth', name: 'up0', peer: { name: 'eth0', ns: 'out' } });
    w.addAddress('out', 'eth0', '192.168.99.2/24');
    w.setLink('out', 'eth0', { up: true });
    w.addAddress('node', 'up0', '192.168.99.1/24');
    w.setLink('node', 'up0', { up: true });
    w.addRoute('node', { dst: 'default', via: '192.168.99.2' });
    w.iptablesRestore('node', restoreInput(buildRules(servicePorts(SERVICES, SLICES), CTX), ''), { noflush: true });
    for (let i = 0; i < 30; i++) expect(w.tcpConnect('client', '10.96.0.20', 80, { trace: false }).state).toBe('established');
    const predicted = [...new Set(w.conntrack('node').filter((c) => c.proto === 6).map((c) => c.reply.split(':')[0]!))].sort();
    expect(real.seen).toEqual(predicted);
    expect(predicted).toEqual(['10.244.2.2', '10.244.3.2']);
    // REJECT with icmp-port-unreachable: the kernel refuses the connect, netsim calls it unreachable.
    expect(real.empty).toBe('error:ECONNREFUSED');
    expect(w.tcpConnect('client', '10.96.0.22', 80, { trace: false }).state).toBe('unreachable');
  });
});
