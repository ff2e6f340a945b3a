// The same policy rules in a real kernel and in netsim give the same verdicts: pods in their own network
// namespaces routed through a node namespace, real TCP connects, the truth table compared cell by cell.
import { spawn, spawnSync } from 'node:child_process';
import type { NetworkPolicy, Pod } from '@kemu/core';
import { linuxRuleSink } from '@kemu/kube-proxy';
import { World } from '@kemu/netsim';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPolicyRules, policyRestoreInput } from './policy-rules.js';

const ok = requirePeers('the network policy linux datapath tests', [peers.netns, peers.iptables]);

const PODS: Pod[] = [
  ['web', '10.244.1.2', 'web'],
  ['db', '10.244.2.2', 'db'],
  ['batch', '10.244.3.2', 'batch'],
].map(([name, ip, app]) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', labels: { app: app! } },
  spec: { nodeName: 'node', containers: [{ name: 'c', image: 'x', ports: [{ name: 'pg', containerPort: 5432 }] }] },
  status: { phase: 'Running', podIP: ip },
}));
const POLICIES: NetworkPolicy[] = [
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny', namespace: 'shop' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } },
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'db', namespace: 'shop' },
    spec: { podSelector: { matchLabels: { app: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 'pg' }] }] },
  },
  {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'batch-out', namespace: 'shop' },
    spec: { podSelector: { matchLabels: { app: 'batch' } }, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '10.244.0.0/16', except: ['10.244.2.0/24'] } }] }] },
  },
];
const RULES = () => buildPolicyRules({ policies: POLICIES, pods: PODS, namespaces: [{ name: 'shop', labels: {} }], nodeName: 'node' });
const name = (p: Pod) => p.metadata.name!;
const ipOf = (p: Pod) => p.status!.podIP!;

const created: string[] = [];
function ip(args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
}

describe.runIf(ok)('NetworkPolicy rules on real Linux', () => {
  const ns: Record<string, string> = {};
  const servers: ReturnType<typeof spawn>[] = [];

  beforeAll(async () => {
    const make = (tag: string) => {
      const n = `kemu-test-${process.pid}-${tag}`;
      ip(['netns', 'add', n]);
      created.push(n);
      return n;
    };
    ns.node = make('np-node');
    spawnSync('nsenter', [`--net=/var/run/netns/${ns.node}`, '--', 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    PODS.forEach((p, i) => {
      ns[name(p)] = make(`np-${name(p)}`);
      const gw = ipOf(p).replace(/\.\d+$/, '.1');
      ip(['link', 'add', `np${i}`, 'netns', ns.node!, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns[name(p)]!]);
      ip(['-n', ns.node!, 'addr', 'add', `${gw}/24`, 'dev', `np${i}`]);
      ip(['-n', ns.node!, 'link', 'set', `np${i}`, 'up']);
      ip(['-n', ns[name(p)]!, 'addr', 'add', `${ipOf(p)}/24`, 'dev', 'eth0']);
      ip(['-n', ns[name(p)]!, 'link', 'set', 'eth0', 'up']);
      ip(['-n', ns[name(p)]!, 'route', 'add', 'default', 'via', gw]);
    });
    for (const p of PODS) {
      const srv = spawn('nsenter', [`--net=/var/run/netns/${ns[name(p)]}`, '--', process.execPath, '-e', "const net=require('net');for(const port of [5432,8080])net.createServer((s)=>s.end()).listen(port);console.log('up')"], { stdio: ['ignore', 'pipe', 'inherit'] });
      servers.push(srv);
      await new Promise((r) => srv.stdout!.once('data', r));
    }
    const sink = linuxRuleSink(`/var/run/netns/${ns.node}`);
    await sink.restore(policyRestoreInput(RULES(), await sink.save()));
  }, 60_000);

  afterAll(() => {
    for (const s of servers) s.kill();
    for (const n of created) spawnSync('ip', ['netns', 'del', n]);
  });

  it('gives the verdicts netsim predicts for every pair and port', () => {
    const script = `const net=require('net');const [ip,port]=[process.argv[1],+process.argv[2]];
      const s=net.connect({host:ip,port,timeout:1500});s.on('connect',()=>{console.log('X');s.destroy()});
      s.on('error',()=>console.log('.'));s.on('timeout',()=>{console.log('.');s.destroy()});`;
    const w = new World();
    w.addNamespace('node');
    w.setForwarding('node', 4, true);
    PODS.forEach((p, i) => {
      const gw = ipOf(p).replace(/\.\d+$/, '.1');
      w.addNamespace(name(p));
      w.addLink('node', { kind: 'veth', name: `np${i}`, peer: { name: 'eth0', ns: name(p) } });
      w.addAddress('node', `np${i}`, `${gw}/24`);
      w.setLink('node', `np${i}`, { up: true });
      w.addAddress(name(p), 'eth0', `${ipOf(p)}/24`);
      w.setLink(name(p), 'eth0', { up: true });
      w.addRoute(name(p), { dst: 'default', via: gw });
      for (const port of [5432, 8080]) w.listen(name(p), { proto: 'tcp', port });
    });
    w.iptablesRestore('node', policyRestoreInput(RULES(), ''), { noflush: true });
    const real: string[] = [];
    const sim: string[] = [];
    for (const from of PODS)
      for (const to of PODS) {
        if (from === to) continue;
        for (const port of [5432, 8080]) {
          const cell = `${name(from)}->${name(to)}:${port}`;
          const r = spawnSync('nsenter', [`--net=/var/run/netns/${ns[name(from)]}`, '--', process.execPath, '-e', script, ipOf(to), String(port)], { encoding: 'utf8', timeout: 10_000 });
          real.push(`${cell} ${r.stdout.trim()}`);
          sim.push(`${cell} ${w.tcpConnect(name(from), ipOf(to), port, { trace: false }).state === 'established' ? 'X' : '.'}`);
        }
      }
    expect(real).toEqual(sim);
    // And the table is the one the policies mean: only web->db:5432 into the isolated namespace.
    expect(sim.filter((c) => c.endsWith('X'))).toEqual(['web->db:5432 X']);
  }, 120_000);
});
