// Fixtures shared by the dual-stack NetworkPolicy tests (simulated and real kernel); not part of the package.
import type { NetworkPolicy, Pod } from '@kemu/core';
import { World } from '@kemu/netsim';
import { buildPolicyRules, type NamespaceInfo, podIPOf, policyRestoreInput } from './policy-rules.js';

export const pod = (name: string, ns: string, i: number, labels: Record<string, string>, ports: { name: string; containerPort: number }[] = []): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: ns, labels },
  spec: { nodeName: 'node', containers: [{ name: 'c', image: 'x', ports }] },
  status: { phase: 'Running', podIP: `10.244.${i}.2`, podIPs: [{ ip: `10.244.${i}.2` }, { ip: `fd00:10:244:${i}::2` }] },
});

export const policy = (name: string, ns: string, spec: NetworkPolicy['spec']): NetworkPolicy => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name, namespace: ns },
  spec,
});

export const DUAL_STACK_PODS = [
  pod('web', 'shop', 1, { app: 'web' }),
  pod('db', 'shop', 2, { app: 'db' }, [{ name: 'pg', containerPort: 5432 }]),
  pod('batch', 'shop', 3, { app: 'batch' }),
  pod('probe', 'ops', 4, { app: 'probe' }),
];
export const NAMESPACES: NamespaceInfo[] = [
  { name: 'shop', labels: {} },
  { name: 'ops', labels: { team: 'ops' } },
];

export const IPV6_POLICY_SETS: NetworkPolicy[][] = [
  // Ingress by pod selector and named port: the same in both families.
  [policy('db-allow-web', 'shop', { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }], ports: [{ port: 'pg' }] }] })],
  // Egress to an IPv6 block with an except: IPv4 egress of batch is denied, IPv6 follows the block.
  [policy('batch-v6', 'shop', { podSelector: { matchLabels: { app: 'batch' } }, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: 'fd00:10:244::/48', except: ['fd00:10:244:2::/64'] } }] }] })],
  // Ingress from one IPv4 and one IPv6 block naming different pods.
  [
    policy('db-blocks', 'shop', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [{ from: [{ ipBlock: { cidr: '10.244.1.0/24' } }, { ipBlock: { cidr: 'fd00:10:244:4::/64' } }], ports: [{ port: 8080 }] }],
    }),
  ],
];

/** Pods routed through one node namespace, each on its own /24 and /64, listening on 5432 and 8080. */
export function dualStackWorld(policies: NetworkPolicy[]) {
  const w = new World();
  w.addNamespace('node');
  w.setForwarding('node', 4, true);
  w.setForwarding('node', 6, true);
  DUAL_STACK_PODS.forEach((p, i) => {
    const name = p.metadata.name!;
    const v4 = podIPOf(p, 4)!;
    const v6 = podIPOf(p, 6)!;
    w.addNamespace(name);
    w.addLink('node', { kind: 'veth', name: `np${i}`, peer: { name: 'eth0', ns: name } });
    w.addAddress('node', `np${i}`, `${v4.replace(/\.2$/, '.1')}/24`);
    w.addAddress('node', `np${i}`, `${v6.replace(/::2$/, '::1')}/64`);
    w.setLink('node', `np${i}`, { up: true });
    w.setLink(name, 'eth0', { up: true });
    w.setLink(name, 'lo', { up: true });
    w.addAddress(name, 'eth0', `${v4}/24`);
    w.addAddress(name, 'eth0', `${v6}/64`);
    w.addRoute(name, { dst: 'default', via: v4.replace(/\.2$/, '.1') });
    w.addRoute(name, { dst: '::/0', via: v6.replace(/::2$/, '::1') });
    for (const port of [5432, 8080]) w.listen(name, { proto: 'tcp', port });
  });
  const input = { policies, pods: DUAL_STACK_PODS, namespaces: NAMESPACES, nodeName: 'node' };
  for (const family of [4, 6] as const)
    w.iptablesRestore('node', policyRestoreInput(buildPolicyRules(input, family), w.iptablesSave('node', { family, table: 'filter' })), { family, noflush: true });
  return w;
}
