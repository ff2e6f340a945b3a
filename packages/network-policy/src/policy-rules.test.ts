import type { NetworkPolicy, Pod } from '@kemu/core';
import { World } from '@kemu/netsim';
import { describe, expect, it } from 'vitest';
import { allowed } from './policy-eval.js';
import { buildPolicyRules, type NamespaceInfo, policyRestoreInput } from './policy-rules.js';

const pod = (name: string, ns: string, ip: string, labels: Record<string, string>, ports: { name: string; containerPort: number }[] = []): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels },
  spec: { nodeName: 'node', containers: [{ name: 'c', image: 'x', ports }] },
  status: { phase: 'Running', podIP: ip },
});

const policy = (name: string, ns: string, spec: NetworkPolicy['spec']): NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec,
});

const PODS = [
  pod('web', 'shop', '10.244.0.2', { app: 'web' }),
  pod('db', 'shop', '10.244.0.3', { app: 'db' }, [{ name: 'pg', containerPort: 5432 }]),
  pod('batch', 'shop', '10.244.0.4', { app: 'batch' }),
  pod('probe', 'ops', '10.244.0.5', { app: 'probe' }),
];
const NAMESPACES: NamespaceInfo[] = [
  { name: 'shop', labels: {} },
  { name: 'ops', labels: { team: 'ops' } },
];

/** One node, one bridge (br_netfilter on), the pods above listening on 5432, 8080 and 9000-9100. */
function world(policies: NetworkPolicy[]) {
  const w = new World();
  w.addNamespace('node');
  w.addLink('node', { kind: 'bridge', name: 'cni0' });
  w.setLink('node', 'cni0', { up: true });
  w.addAddress('node', 'cni0', '10.244.0.1/24');
  w.setSysctl('node', 'net.bridge.bridge-nf-call-iptables', '1');
  for (const p of PODS) {
    const name = p.metadata.name!;
    w.addNamespace(name);
    w.addLink('node', { kind: 'veth', name: `v${name}`, peer: { name: 'eth0', ns: name } });
    w.setLink('node', `v${name}`, { master: 'cni0', up: true });
    w.setLink(name, 'eth0', { up: true });
    w.setLink(name, 'lo', { up: true });
    w.addAddress(name, 'eth0', `${p.status!.podIP}/24`);
    w.addRoute(name, { dst: 'default', via: '10.244.0.1' });
    for (const port of [5432, 8080, 9050]) w.listen(name, { proto: 'tcp', port });
  }
  const rules = buildPolicyRules({ policies, pods: PODS, namespaces: NAMESPACES, nodeName: 'node' });
  w.iptablesRestore('node', policyRestoreInput(rules, w.iptablesSave('node', { table: 'filter' })), { noflush: true });
  return w;
}

const IP = Object.fromEntries(PODS.map((p) => [p.metadata.name!, p.status!.podIP!]));
const reach = (w: World, from: string, to: string, port: number) => w.tcpConnect(from, IP[to]!, port, { trace: false }).state === 'established';

describe('NetworkPolicy on the simulated datapath', () => {
  it('isolates a pod for ingress and lets exactly the allowed peers and ports through', () => {
    const w = world([
      policy('db-allow-web', 'shop', {
        podSelector: { matchLabels: { app: 'db' } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 'pg' }] },
          { from: [{ namespaceSelector: { matchLabels: { team: 'ops' } } }], ports: [{ port: 9000, endPort: 9100 }] },
        ],
      }),
    ]);
    expect(reach(w, 'web', 'db', 5432)).toBe(true);
    expect(reach(w, 'web', 'db', 8080)).toBe(false);
    expect(reach(w, 'batch', 'db', 5432)).toBe(false);
    expect(reach(w, 'probe', 'db', 9050)).toBe(true);
    expect(reach(w, 'probe', 'db', 5432)).toBe(false);
    // Not selected: everything still reaches batch.
    expect(reach(w, 'probe', 'batch', 8080)).toBe(true);
    const t = w.tcpConnect('batch', IP.db!, 5432);
    expect(t.trace.filter((h) => h.kind === 'drop').at(-1)).toMatchObject({
      ns: 'node',
      reason: 'dropped: NetworkPolicy shop/db-allow-web: no ingress rule allows this',
    });
  });

  it('default-deny egress with an ipBlock and except', () => {
    const w = world([
      policy('batch-egress', 'shop', {
        podSelector: { matchLabels: { app: 'batch' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '10.244.0.0/24', except: ['10.244.0.3/32'] } }] }],
      }),
    ]);
    expect(reach(w, 'batch', 'web', 8080)).toBe(true);
    expect(reach(w, 'batch', 'db', 5432)).toBe(false);
    expect(reach(w, 'web', 'db', 5432)).toBe(true);
  });

  it('a default-deny namespace plus one allow rule gives exactly the expected truth table', () => {
    const w = world([
      policy('default-deny', 'shop', { podSelector: {}, policyTypes: ['Ingress'] }),
      policy('allow-web-to-db', 'shop', { podSelector: { matchLabels: { app: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }] }),
    ]);
    const names = PODS.map((p) => p.metadata.name!);
    const table = names.map((from) => names.map((to) => (from === to ? '-' : reach(w, from, to, 8080) ? 'X' : '.')).join('')).join('\n');
    // Rows: from web, db, batch, probe; columns: to the same. Only web->db and anything->probe (ops) pass.
    expect(table).toBe(['-X.X', '.-.X', '..-X', '...-'].join('\n'));
  });

  it('removes the chains of a pod that is no longer selected', () => {
    const w = world([policy('deny', 'shop', { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] })]);
    expect(w.iptablesSave('node', { table: 'filter' })).toMatch(/KEMU-NP-I-/);
    const rules = buildPolicyRules({ policies: [], pods: PODS, namespaces: NAMESPACES, nodeName: 'node' });
    w.iptablesRestore('node', policyRestoreInput(rules, w.iptablesSave('node', { table: 'filter' })), { noflush: true });
    expect(w.iptablesSave('node', { table: 'filter' })).not.toMatch(/KEMU-NP-/);
    expect(reach(w, 'batch', 'db', 5432)).toBe(true);
  });

  it('agrees with a pure evaluation of the policies for every pair, port and ICMP', () => {
    const sets: NetworkPolicy[][] = [
      [policy('db-allow-web', 'shop', { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ protocol: 'TCP', port: 'pg' }] }, { from: [{ namespaceSelector: { matchLabels: { team: 'ops' } } }], ports: [{ port: 9000, endPort: 9100 }] }] })],
      [policy('batch-egress', 'shop', { podSelector: { matchLabels: { app: 'batch' } }, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '10.244.0.0/24', except: ['10.244.0.3/32'] } }], ports: [{ port: 8080 }] }] })],
      [policy('default-deny', 'shop', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }), policy('web-out', 'shop', { podSelector: { matchLabels: { app: 'web' } }, egress: [{}] })],
    ];
    for (const policies of sets) {
      const w = world(policies);
      for (const from of PODS)
        for (const to of PODS) {
          if (from === to) continue;
          for (const port of [5432, 8080, 9050, undefined]) {
            const sim = port === undefined ? w.ping(from.metadata.name!, to.status!.podIP!).reachable : reach(w, from.metadata.name!, to.metadata.name!, port);
            const want = allowed({ from, to, port }, policies, NAMESPACES);
            expect(`${policies[0]!.metadata.name} ${from.metadata.name}->${to.metadata.name}:${port ?? 'icmp'} ${sim}`).toBe(`${policies[0]!.metadata.name} ${from.metadata.name}->${to.metadata.name}:${port ?? 'icmp'} ${want}`);
          }
        }
    }
  });
});
