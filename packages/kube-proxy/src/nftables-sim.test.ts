import { createMemoryStore } from '@kemu/core';
import { formatTrace } from '@kemu/netsim';
import { describe, expect, it } from 'vitest';
import { nftServiceBase } from './chain-names.js';
import { buildNftables, nftablesScript, type NftRules } from './nftables-rules.js';
import { Proxier } from './proxier.js';
import { simRuleSink } from './rule-sink.js';
import { servicePorts } from './service-ports.js';
import { service, slice, twoNodes } from './test-helpers.js';

const PODS = { a: { node: 1, ip: '10.244.1.2' }, b: { node: 1, ip: '10.244.1.3' }, c: { node: 2, ip: '10.244.2.2' } } as const;
const CTX = { clusterCIDR: '10.244.0.0/16', serviceCIDRs: ['10.96.0.0/16'] };

/** A listing's chains and sets, in any order (nft lists them in the order they were made). */
const blocks = (listing: string) => listing.split('\n\n').map((b) => b.replace(/^table[^\n]*\n|\n}\n$/g, '')).sort();

function program(w: ReturnType<typeof twoNodes>, ports: ReturnType<typeof servicePorts>, previous: Record<string, NftRules | null> = {}) {
  for (const n of ['node1', 'node2']) {
    const rules = buildNftables(ports, { ...CTX, nodeName: n });
    w.nft(n, nftablesScript(rules, previous[n] ?? null));
    previous[n] = rules;
  }
  return previous;
}

describe('kube-proxy nftables mode on the simulated datapath', () => {
  it('a ClusterIP reaches every endpoint through the service-ips map, with replies un-NATed', () => {
    const w = twoNodes(PODS);
    program(w, servicePorts([service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] })], [slice('web', [{ ip: '10.244.1.3', node: 'node1' }, { ip: '10.244.2.2', node: 'node2' }])]));
    const first = w.tcpConnect('a', '10.96.0.20', 80);
    expect(first.state).toBe('established');
    const base = nftServiceBase('default/web:http', 'tcp');
    expect(formatTrace(first.trace)).toContain(`nft ip kube-proxy services rule 1: ip daddr . meta l4proto . th dport vmap @service-ips: 10.96.0.20 . tcp . 80 -> goto service-${base}`);
    for (let i = 0; i < 40; i++) expect(w.tcpConnect('a', '10.96.0.20', 80, { trace: false }).state).toBe('established');
    const hit = new Set<string>();
    for (const c of w.conntrack('node1')) if (c.proto === 6) hit.add(c.reply.split(':')[0]!);
    expect([...hit].sort()).toEqual(['10.244.1.3', '10.244.2.2']);
  });

  it('a NodePort answers on every node, masqueraded so replies return through it', () => {
    const w = twoNodes(PODS);
    program(
      w,
      servicePorts(
        [service('np', { type: 'NodePort', clusterIP: '10.96.0.21', clusterIPs: ['10.96.0.21'], ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] })],
        [slice('np', [{ ip: '10.244.2.2', node: 'node2' }])],
      ),
    );
    for (const nodeIP of ['192.168.0.1', '192.168.0.2']) {
      const r = w.tcpConnect('ext', nodeIP, 30080);
      expect([nodeIP, r.state]).toEqual([nodeIP, 'established']);
      expect(formatTrace(r.trace)).toContain('vmap @service-nodeports: tcp . 30080 -> goto external-');
    }
    expect(w.conntrack('node1').find((c) => c.proto === 6)!.nat).toEqual(['dnat', 'snat']);
  });

  it('rejects a Service without endpoints and an unused port of a ClusterIP, and drops an unallocated ClusterIP', () => {
    const w = twoNodes(PODS);
    program(w, servicePorts([service('empty', { clusterIP: '10.96.0.22', clusterIPs: ['10.96.0.22'] }), service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] })], [slice('web', [{ ip: '10.244.2.2', node: 'node2' }])]));
    const r = w.tcpConnect('a', '10.96.0.22', 80);
    expect(r.state).toBe('unreachable');
    expect(r.trace.find((h) => h.kind === 'drop')).toMatchObject({ ns: 'node1', reason: 'rejected: default/empty:http (@no-endpoint-services)' });
    const port = w.tcpConnect('a', '10.96.0.20', 81);
    expect(port.state).toBe('unreachable');
    expect(port.trace.find((h) => h.kind === 'drop')!.reason).toBe('rejected: Reject traffic to invalid ports of ClusterIPs');
    const none = w.tcpConnect('a', '10.96.0.99', 80);
    expect(none.state).not.toBe('established');
    expect(none.trace.find((h) => h.kind === 'drop')!.detail).toContain('cluster-ips-check rule 2');
  });

  it('keeps a client on one endpoint with sessionAffinity ClientIP', () => {
    const w = twoNodes(PODS);
    const svc = service('sticky', { clusterIP: '10.96.0.50', clusterIPs: ['10.96.0.50'], sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } });
    program(w, servicePorts([svc], [slice('sticky', [{ ip: '10.244.1.3', node: 'node1' }, { ip: '10.244.2.2', node: 'node2' }])]));
    for (let i = 0; i < 20; i++) expect(w.tcpConnect('a', '10.96.0.50', 80, { trace: false }).state).toBe('established');
    const hit = new Set(w.conntrack('node1').filter((c) => c.proto === 6).map((c) => c.reply.split(':')[0]));
    expect(hit.size).toBe(1);
    expect(w.nftList('node1', 'ip', 'kube-proxy')).toMatch(/set affinity-\S+ \{\n\t\ttype ipv4_addr\n\t\tsize 65535\n\t\tflags dynamic,timeout\n\t\ttimeout 10m\n\t\telements = \{ 10\.244\.1\.2 expires \d+m\d*s? \}/);
  });

  it('an incremental sync touches only the Service that changed, and one that went leaves nothing behind', () => {
    const w = twoNodes(PODS);
    const svcs = [service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] }), service('other', { clusterIP: '10.96.0.30', clusterIPs: ['10.96.0.30'] })];
    const prev = program(w, servicePorts(svcs, [slice('web', [{ ip: '10.244.2.2', node: 'node2' }]), slice('other', [{ ip: '10.244.1.3', node: 'node1' }])]));
    const rules = buildNftables(servicePorts(svcs, [slice('web', [{ ip: '10.244.1.3', node: 'node1' }]), slice('other', [{ ip: '10.244.1.3', node: 'node1' }])]), { ...CTX, nodeName: 'node1' });
    const script = nftablesScript(rules, prev.node1!);
    expect(script).not.toContain('other');
    expect(script).not.toMatch(/^add table|^flush map/m);
    expect(script).toContain('__10.244.2.2/8080');
    w.nft('node1', script);
    expect(w.nftList('node1', 'ip', 'kube-proxy')).not.toContain('10.244.2.2');
    // The same end state as a full sync writes into an empty namespace.
    w.addNamespace('fresh');
    w.nft('fresh', nftablesScript(rules, null));
    expect(blocks(w.nftList('node1', 'ip', 'kube-proxy'))).toEqual(blocks(w.nftList('fresh', 'ip', 'kube-proxy')));
    const gone = buildNftables([], { ...CTX, nodeName: 'node1' });
    w.nft('node1', nftablesScript(gone, rules));
    expect(w.nftList('node1', 'ip', 'kube-proxy')).not.toMatch(/(service|endpoint)-[A-Z2-7]{8}-|10\.96\.0\.(20|30)/);
  });

  it('follows Services and EndpointSlices in the store with --proxy-mode=nftables', async () => {
    const store = await createMemoryStore();
    const w = twoNodes(PODS);
    const errors: unknown[] = [];
    const proxier = new Proxier({ store, mode: 'nftables', sink: simRuleSink(w, 'node1'), nodeName: 'node1', clusterCIDR: '10.244.0.0/16', minSyncPeriodMs: 10, onError: (e) => errors.push(e) });
    await proxier.start();
    try {
      const svc = await store.create(service('web', {}));
      const ip = (svc as { spec: { clusterIP: string } }).spec.clusterIP;
      await store.create(slice('web', [{ ip: '10.244.2.2', node: 'node2' }]));
      await expect.poll(() => w.tcpConnect('a', ip, 80, { trace: false }).state, { timeout: 5000 }).toBe('established');
      expect(w.iptablesSave('node1')).not.toContain('KUBE-');
      await store.delete('Service', 'default', 'web');
      await store.delete('EndpointSlice', 'default', 'web-abcde');
      await expect.poll(() => /chain (service|endpoint)-[A-Z2-7]{8}-/.test(w.nftList('node1', 'ip', 'kube-proxy')), { timeout: 5000 }).toBe(false);
      expect(w.tcpConnect('a', ip, 80, { trace: false }).state).not.toBe('established');
      expect(errors).toEqual([]);
    } finally {
      await proxier.stop();
      await store.close();
    }
  });
});
