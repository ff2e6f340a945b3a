import { createMemoryStore, type EndpointSlice, type Service } from '@kemu/core';
import { formatTrace, type World } from '@kemu/netsim';
import { serviceChain } from './chain-names.js';
import { describe, expect, it } from 'vitest';
import { buildRules, restoreInput } from './iptables-rules.js';
import { Proxier } from './proxier.js';
import { simRuleSink } from './rule-sink.js';
import { servicePorts } from './service-ports.js';
import { service, slice, twoNodes } from './test-helpers.js';

const PODS = { a: { node: 1, ip: '10.244.1.2' }, b: { node: 1, ip: '10.244.1.3' }, c: { node: 2, ip: '10.244.2.2' } } as const;

async function program(w: ReturnType<typeof twoNodes>, ports: ReturnType<typeof servicePorts>) {
  for (const n of ['node1', 'node2']) {
    const sink = simRuleSink(w, n);
    await sink.restore(restoreInput(buildRules(ports, { nodeName: n, clusterCIDR: '10.244.0.0/16' }), await sink.save()));
  }
}

describe('kube-proxy on the simulated datapath', () => {
  it('a ClusterIP reaches every endpoint, on this node and the other, with replies un-NATed', async () => {
    const w = twoNodes(PODS);
    await program(
      w,
      servicePorts(
        [service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] })],
        [slice('web', [{ ip: '10.244.1.3', node: 'node1' }, { ip: '10.244.2.2', node: 'node2' }])],
      ),
    );
    const first = w.tcpConnect('a', '10.96.0.20', 80);
    expect(first.state).toBe('established');
    expect(formatTrace(first.trace)).toMatch(/nat KUBE-SERVICES rule 1: -A KUBE-SERVICES -d 10\.96\.0\.20\/32 .*-j KUBE-SVC-/);
    const hit = new Set<string>();
    for (let i = 0; i < 40; i++) {
      expect(w.tcpConnect('a', '10.96.0.20', 80, { trace: false }).state).toBe('established');
    }
    for (const c of w.conntrack('node1')) if (c.proto === 6) hit.add(c.reply.split(':')[0]!);
    expect([...hit].sort()).toEqual(['10.244.1.3', '10.244.2.2']);
  });

  it('a NodePort answers on every node, masqueraded so replies return through it', async () => {
    const w = twoNodes(PODS);
    await program(
      w,
      servicePorts(
        [service('np', { type: 'NodePort', clusterIP: '10.96.0.21', clusterIPs: ['10.96.0.21'], ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] })],
        [slice('np', [{ ip: '10.244.2.2', node: 'node2' }])],
      ),
    );
    for (const nodeIP of ['192.168.0.1', '192.168.0.2']) {
      const r = w.tcpConnect('ext', nodeIP, 30080);
      expect([nodeIP, r.state]).toEqual([nodeIP, 'established']);
      expect(formatTrace(r.trace)).toContain('nat KUBE-NODEPORTS rule 1');
    }
    expect(w.conntrack('node1').find((c) => c.proto === 6)!.nat).toEqual(['dnat', 'snat']);
  });

  it('a Service without endpoints is rejected, and the trace says so', async () => {
    const w = twoNodes(PODS);
    await program(w, servicePorts([service('empty', { clusterIP: '10.96.0.22', clusterIPs: ['10.96.0.22'] })], []));
    const r = w.tcpConnect('a', '10.96.0.22', 80);
    expect(r.state).toBe('unreachable');
    expect(r.trace.find((h) => h.kind === 'drop')).toMatchObject({
      ns: 'node1',
      reason: 'rejected: default/empty:http has no endpoints',
    });
  });

  it('follows Services and EndpointSlices in the store and leaves no chain behind when they go', async () => {
    const store = await createMemoryStore();
    const w = twoNodes(PODS);
    const errors: unknown[] = [];
    const proxier = new Proxier({ store, sink: simRuleSink(w, 'node1'), nodeName: 'node1', clusterCIDR: '10.244.0.0/16', minSyncPeriodMs: 10, onError: (e) => errors.push(e) });
    await proxier.start();
    try {
      const svc = await store.create(service('web', {}));
      const ip = (svc as { spec: { clusterIP: string } }).spec.clusterIP;
      await store.create(slice('web', [{ ip: '10.244.2.2', node: 'node2' }]));
      await expect.poll(() => w.tcpConnect('a', ip, 80, { trace: false }).state, { timeout: 5000 }).toBe('established');
      await store.delete('Service', 'default', 'web');
      await store.delete('EndpointSlice', 'default', 'web-abcde');
      await expect.poll(() => w.iptablesSave('node1', { table: 'nat' }).match(/KUBE-(SVC|SEP)-/g), { timeout: 5000 }).toBeNull();
      expect(w.tcpConnect('a', ip, 80, { trace: false }).state).not.toBe('established');
      expect(errors).toEqual([]);
    } finally {
      await proxier.stop();
      await store.close();
    }
  });

  it('forgets UDP flows to an endpoint that went, so they stop following a stale DNAT', async () => {
    const store = await createMemoryStore();
    const w = twoNodes(PODS);
    w.listen('c', { proto: 'udp', port: 5353 });
    const proxier = new Proxier({ store, sink: simRuleSink(w, 'node1'), nodeName: 'node1', clusterCIDR: '10.244.0.0/16', minSyncPeriodMs: 10 });
    await proxier.start();
    try {
      const svc = await store.create(service('dns', { ports: [{ name: 'dns', protocol: 'UDP', port: 53 }] }));
      const ip = (svc as { spec: { clusterIP: string } }).spec.clusterIP;
      const eps = slice('dns', [{ ip: '10.244.2.2', node: 'node2' }], 5353);
      eps.ports = [{ name: 'dns', protocol: 'UDP', port: 5353 }];
      await store.create(eps);
      await expect.poll(() => w.udpSend('a', ip, 53, new Uint8Array(4), { trace: false }).delivered, { timeout: 5000 }).toBe('c');
      const udp = () => w.conntrack('node1').filter((c) => c.proto === 17 && c.reply.startsWith('10.244.2.2:'));
      expect(udp().length).toBeGreaterThan(0);
      await store.delete('EndpointSlice', 'default', 'dns-abcde');
      await expect.poll(() => udp().length, { timeout: 5000 }).toBe(0);
    } finally {
      await proxier.stop();
      await store.close();
    }
  });

  it('the periodic resync rewrites nothing while nothing changed, and repairs tables someone else changed', async () => {
    const store = await createMemoryStore();
    const w = twoNodes(PODS);
    const proxier = new Proxier({ store, sink: simRuleSink(w, 'node1'), nodeName: 'node1', clusterCIDR: '10.244.0.0/16', minSyncPeriodMs: 10, syncPeriodMs: 40 });
    await proxier.start();
    try {
      const svc = await store.create(service('web', {}));
      const ip = (svc as { spec: { clusterIP: string } }).spec.clusterIP;
      await store.create(slice('web', [{ ip: '10.244.2.2', node: 'node2' }]));
      await expect.poll(() => w.tcpConnect('a', ip, 80, { trace: false }).state, { timeout: 5000 }).toBe('established');
      const synced = proxier.last!.at;
      const generation = w.netfilterGeneration('node1');
      await new Promise((r) => setTimeout(r, 300));
      // Several periods went by: no sync ran and the tables were not written.
      expect(proxier.last!.at).toBe(synced);
      expect(w.netfilterGeneration('node1')).toBe(generation);
      // Another writer flushes kube-proxy's Service chain: the next period puts the rules back.
      w.iptablesRestore('node1', '*nat\n-F KUBE-SERVICES\nCOMMIT\n', { noflush: true });
      expect(w.tcpConnect('a', ip, 80, { trace: false }).state).not.toBe('established');
      await expect.poll(() => w.tcpConnect('a', ip, 80, { trace: false }).state, { timeout: 5000 }).toBe('established');
      expect(proxier.last!.at).toBeGreaterThan(synced);
    } finally {
      await proxier.stop();
      await store.close();
    }
  });

  it('on a change rewrites only the changed Services\' chains, and ends where a full sync would', async () => {
    const store = await createMemoryStore();
    const w = twoNodes(PODS);
    const sink = simRuleSink(w, 'node1');
    const inputs: string[] = [];
    const recording = { ...sink, restore: (text: string) => (inputs.push(text), sink.restore(text)) };
    const proxier = new Proxier({ store, sink: recording, nodeName: 'node1', clusterCIDR: '10.244.0.0/16', minSyncPeriodMs: 10 });
    await proxier.start();
    try {
      for (const [name, ip] of [['a', '10.244.1.2'], ['b', '10.244.1.3'], ['c', '10.244.2.2']] as const) {
        await store.create(service(name, {}));
        await store.create(slice(name, [{ ip, node: ip.startsWith('10.244.1.') ? 'node1' : 'node2' }]));
      }
      const chainOf = (name: string) => serviceChain(`default/${name}:http`, 'tcp');
      await expect.poll(() => ['a', 'b', 'c'].every((n) => w.iptablesSave('node1', { table: 'nat' }).includes(`:${chainOf(n)}`)), { timeout: 5000 }).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      inputs.length = 0;
      // a's endpoints change, b goes, d comes; c is left alone.
      await store.update({ ...(await store.get('EndpointSlice', 'default', 'a-abcde')), endpoints: [{ addresses: ['10.244.2.2'], nodeName: 'node2', conditions: { ready: true } }] } as EndpointSlice);
      await store.delete('Service', 'default', 'b');
      await store.delete('EndpointSlice', 'default', 'b-abcde');
      await store.create(service('d', {}));
      await store.create(slice('d', [{ ip: '10.244.1.3', node: 'node1' }]));
      await expect.poll(() => { const nat = w.iptablesSave('node1', { table: 'nat' }); return nat.includes(`:${chainOf('d')}`) && !nat.includes(`:${chainOf('b')}`) && nat.includes('10.244.2.2:8080'); }, { timeout: 5000 }).toBe(true);
      await new Promise((r) => setTimeout(r, 50));
      expect(inputs.length).toBeGreaterThan(0);
      for (const text of inputs) expect(text).not.toContain(`:${chainOf('c')}`);
      expect(inputs.some((t) => t.includes(`-X ${chainOf('b')}`))).toBe(true);
      // The tables now hold what one full sync of the same objects writes on a fresh node.
      const fresh = twoNodes(PODS);
      const svcs = (await store.list('Service', {})).items as Service[];
      const slices = (await store.list('EndpointSlice', {})).items as EndpointSlice[];
      const fsink = simRuleSink(fresh, 'node1');
      await fsink.restore(restoreInput(buildRules(servicePorts(svcs, slices), { nodeName: 'node1', clusterCIDR: '10.244.0.0/16' }), await fsink.save()));
      const lines = (x: World) => x.iptablesSave('node1', { table: 'nat' }).split('\n').filter((l) => l.startsWith('-A') || l.startsWith(':')).sort();
      expect(lines(w)).toEqual(lines(fresh));
      // An endpoint change alone rewrites that Service's own chains, not the shared ones it did not change.
      inputs.length = 0;
      await store.update({ ...(await store.get('EndpointSlice', 'default', 'd-abcde')), endpoints: [{ addresses: ['10.244.1.2'], nodeName: 'node1', conditions: { ready: true } }] } as EndpointSlice);
      await expect.poll(() => w.iptablesSave('node1', { table: 'nat' }).includes('--to-destination 10.244.1.2:8080'), { timeout: 5000 }).toBe(true);
      expect(inputs.join('')).toContain(`:${chainOf('d')}`);
      expect(inputs.join('')).not.toContain(':KUBE-SERVICES');
      expect(w.tcpConnect('b', w.iptablesSave('node1', { table: 'nat' }).match(/-d (\S+)\/32 .*default\/d:http cluster IP/)![1]!, 80, { trace: false }).state).toBe('established');
    } finally {
      await proxier.stop();
      await store.close();
    }
  });
});

