// The same rules on real Linux and on netsim: iptables-save reads back what netsim prints, and real TCP
// connections to a ClusterIP reach the endpoint set netsim predicts (and fail where netsim says so).
import { World } from '@kemu/netsim';
import { peers, requirePeers } from '@kemu/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRules, restoreInput } from './iptables-rules.js';
import { linuxRuleSink, simRuleSink } from './rule-sink.js';
import { servicePorts } from './service-ports.js';
import { LinuxTestNode, simTestNode } from './linux-test-node.js';
import { service, slice } from './test-helpers.js';

const ok = requirePeers('the kube-proxy linux datapath tests', [peers.netns, peers.iptables]);

// Services: web has two endpoints, empty has none.
const SERVICES = [service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] }), service('empty', { clusterIP: '10.96.0.22', clusterIPs: ['10.96.0.22'] })];
const SLICES = [slice('web', [{ ip: '10.244.2.2', node: 'node' }, { ip: '10.244.3.2', node: 'node' }])];
const CTX = { nodeName: 'node', clusterCIDR: '10.244.0.0/16' };
const PODS = { client: '10.244.1.2', s1: '10.244.2.2', s2: '10.244.3.2' } as const;

describe.runIf(ok)('kube-proxy rules on real Linux', () => {
  let node: LinuxTestNode;

  beforeAll(async () => {
    node = await LinuxTestNode.start(PODS, ['s1', 's2']);
    const sink = linuxRuleSink(node.path('node'));
    await sink.restore(restoreInput(buildRules(servicePorts(SERVICES, SLICES), CTX), await sink.save()));
  }, 60_000);

  afterAll(() => node?.stop());

  it('reads back, through iptables-save, what netsim holds for the same input', async () => {
    const w = new World();
    w.addNamespace('node');
    const sim = simRuleSink(w, 'node');
    await sim.restore(restoreInput(buildRules(servicePorts(SERVICES, SLICES), CTX), await sim.save()));
    const real = await linuxRuleSink(node.path('node')).save();
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
    const r = node.inNs('client', process.execPath, ['-e', script]);
    expect(r.status, r.stderr).toBe(0);
    const real = JSON.parse(r.stdout) as { seen: string[]; empty: string };

    const w = simTestNode(PODS);
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
