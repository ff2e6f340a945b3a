// Dual-stack policy rules in a real kernel (iptables and ip6tables) and in netsim give the same verdicts:
// pods in their own network namespaces routed through a node namespace over IPv4 and IPv6, real TCP
// connects of each family, the truth table compared cell by cell for every policy set.
import { spawn, spawnSync } from 'node:child_process';
import type { NetworkPolicy } from '@kemu/core';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPolicyRules, podIPOf, policyRestoreInput } from './policy-rules.js';
import { DUAL_STACK_PODS, dualStackWorld, IPV6_POLICY_SETS, NAMESPACES } from './test-helpers.js';

const ok = requirePeers('the dual-stack network policy linux datapath tests', [peers.netns, peers.iptables]);

const PORTS = [5432, 8080];
const name = (p: (typeof DUAL_STACK_PODS)[number]) => p.metadata.name!;
const created: string[] = [];

function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, timeout: 30_000 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe.runIf(ok)('dual-stack NetworkPolicy rules on real Linux', () => {
  const ns: Record<string, string> = {};
  const servers: ReturnType<typeof spawn>[] = [];
  const enter = (n: string) => ['nsenter', `--net=/var/run/netns/${n}`, '--'];

  beforeAll(async () => {
    const make = (tag: string) => {
      const n = `kemu-test-${process.pid}-${tag}`;
      run('ip', ['netns', 'add', n]);
      created.push(n);
      // No duplicate address detection on the links made next (link-local included): usable at once.
      run('nsenter', [`--net=/var/run/netns/${n}`, '--', 'sysctl', '-qw', 'net.ipv6.conf.default.accept_dad=0', 'net.ipv6.conf.all.accept_dad=0']);
      return n;
    };
    ns.node = make('np6-node');
    run('nsenter', [...enter(ns.node).slice(1), 'sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1']);
    DUAL_STACK_PODS.forEach((p, i) => {
      const n = (ns[name(p)] = make(`np6-${name(p)}`));
      const v4 = podIPOf(p, 4)!;
      const v6 = podIPOf(p, 6)!;
      run('ip', ['link', 'add', `np${i}`, 'netns', ns.node!, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', n]);
      // nodad: the addresses are usable at once rather than after duplicate address detection.
      run('ip', ['-n', ns.node!, 'addr', 'add', `${v4.replace(/\.2$/, '.1')}/24`, 'dev', `np${i}`]);
      run('ip', ['-n', ns.node!, '-6', 'addr', 'add', `${v6.replace(/::2$/, '::1')}/64`, 'dev', `np${i}`, 'nodad']);
      run('ip', ['-n', ns.node!, 'link', 'set', `np${i}`, 'up']);
      run('ip', ['-n', n, 'addr', 'add', `${v4}/24`, 'dev', 'eth0']);
      run('ip', ['-n', n, '-6', 'addr', 'add', `${v6}/64`, 'dev', 'eth0', 'nodad']);
      run('ip', ['-n', n, 'link', 'set', 'eth0', 'up']);
      run('ip', ['-n', n, 'link', 'set', 'lo', 'up']);
      run('ip', ['-n', n, 'route', 'add', 'default', 'via', v4.replace(/\.2$/, '.1')]);
      run('ip', ['-n', n, '-6', 'route', 'add', 'default', 'via', v6.replace(/::2$/, '::1')]);
    });
    for (const p of DUAL_STACK_PODS) {
      // One dual-stack listener per port (:: takes IPv4 too).
      const srv = spawn(enter(ns[name(p)]!)[0]!, [...enter(ns[name(p)]!).slice(1), process.execPath, '-e', `const net=require('net');let n=0;for(const port of ${JSON.stringify(PORTS)})net.createServer((s)=>s.end()).listen({port,host:'::'},()=>{if(++n===${PORTS.length})console.log('up')})`], { stdio: ['ignore', 'pipe', 'inherit'] });
      servers.push(srv);
      await new Promise((r) => srv.stdout!.once('data', r));
    }
  }, 60_000);

  afterAll(() => {
    for (const s of servers) s.kill();
    for (const n of created) spawnSync('ip', ['netns', 'del', n]);
  });

  /** Loads each family's rules for `policies` into the node namespace, replacing the previous set's. */
  function load(policies: NetworkPolicy[]) {
    const input = { policies, pods: DUAL_STACK_PODS, namespaces: NAMESPACES, nodeName: 'node' };
    for (const [family, save, restore] of [[4, 'iptables-save', 'iptables-restore'], [6, 'ip6tables-save', 'ip6tables-restore']] as const) {
      const current = run(enter(ns.node!)[0]!, [...enter(ns.node!).slice(1), save, '-t', 'filter']);
      run(enter(ns.node!)[0]!, [...enter(ns.node!).slice(1), restore, '--noflush', '-w', '5'], policyRestoreInput(buildPolicyRules(input, family), current));
    }
  }

  /** From inside `from`'s namespace, a TCP connect to every target at once: 'X' connected, '.' not. */
  function connectAll(from: string, targets: { ip: string; port: number }[]): string[] {
    const script = `const net=require('net');const ts=JSON.parse(process.argv[1]);
      Promise.all(ts.map((t)=>new Promise((res)=>{const s=net.connect({host:t.ip,port:t.port,timeout:800});
      s.on('connect',()=>{s.destroy();res('X')});s.on('error',()=>res('.'));s.on('timeout',()=>{s.destroy();res('.')})})))
      .then((r)=>console.log(r.join('')));`;
    const out = run(enter(ns[from]!)[0]!, [...enter(ns[from]!).slice(1), process.execPath, '-e', script, JSON.stringify(targets)]).trim();
    return [...out];
  }

  it('gives the verdicts netsim predicts for every pair, port and family, for each policy set', () => {
    for (const policies of IPV6_POLICY_SETS) {
      load(policies);
      const w = dualStackWorld(policies);
      const real: string[] = [];
      const sim: string[] = [];
      for (const from of DUAL_STACK_PODS) {
        const cells: { cell: string; ip: string; port: number }[] = [];
        for (const to of DUAL_STACK_PODS) {
          if (from === to) continue;
          for (const family of [4, 6] as const)
            for (const port of PORTS) cells.push({ cell: `${policies[0]!.metadata.name} ${name(from)}->${name(to)} v${family}:${port}`, ip: podIPOf(to, family)!, port });
        }
        const got = connectAll(name(from), cells);
        // A refused cell is asked once more: a policy's DROP refuses again, while a first packet that waited
        // on neighbour discovery past the connect timeout does not.
        const again = cells.map((c, i) => ({ c, i })).filter(({ i }) => got[i] !== 'X');
        if (again.length) connectAll(name(from), again.map(({ c }) => c)).forEach((r, k) => (got[again[k]!.i] = r));
        cells.forEach((c, i) => {
          real.push(`${c.cell} ${got[i]}`);
          sim.push(`${c.cell} ${w.tcpConnect(name(from), c.ip, c.port, { trace: false }).state === 'established' ? 'X' : '.'}`);
        });
      }
      expect(real).toEqual(sim);
      // Not vacuous: each set both admits and refuses something in IPv6.
      expect(sim.some((c) => c.includes(' v6:') && c.endsWith('X'))).toBe(true);
      expect(sim.some((c) => c.includes(' v6:') && c.endsWith('.'))).toBe(true);
    }
  }, 120_000);
});
