import { describe, expect, it } from 'vitest';
import { endpointChain, serviceChain } from './chain-names.js';
import { buildRules, probability, restoreInput } from './iptables-rules.js';
import { servicePorts } from './service-ports.js';
import { service, slice } from './test-helpers.js';

const node = { nodeName: 'node1', clusterCIDR: '10.244.0.0/16' };

describe('kube-proxy iptables rules', () => {
  it('names chains as upstream does', () => {
    expect(serviceChain('default/kubernetes:https', 'tcp')).toBe('KUBE-SVC-NPX46M4PTMTKRN6Y');
    expect(serviceChain('kube-system/kube-dns:dns', 'udp')).toBe('KUBE-SVC-TCOU7JCQXEZGVUNU');
    expect(serviceChain('kube-system/kube-dns:dns-tcp', 'tcp')).toBe('KUBE-SVC-ERIFXISQEP7F7OF4');
    expect(endpointChain('default/web:http', 'tcp', '10.244.1.2:8080')).toMatch(/^KUBE-SEP-[A-Z2-7]{16}$/);
  });

  it('spreads a ClusterIP over its endpoints with statistic probabilities 1/n, 1/(n-1), ...', () => {
    const ports = servicePorts(
      [service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] })],
      [slice('web', [{ ip: '10.244.1.2' }, { ip: '10.244.2.2' }, { ip: '10.244.2.3' }])],
    );
    const r = buildRules(ports, node);
    const svc = serviceChain('default/web:http', 'tcp');
    expect(r.nat).toContain(`-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j ${svc}`);
    const lb = r.nat.filter((l) => l.startsWith(`-A ${svc} `) && l.includes('KUBE-SEP-'));
    expect(lb.map((l) => /--probability (\S+)/.exec(l)?.[1] ?? 'last')).toEqual(['0.3333333333', '0.5000000000', 'last']);
    expect(r.nat).toContain(`-A ${svc} ! -s 10.244.0.0/16 -d 10.96.0.20/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ`);
    const sep = endpointChain('default/web:http', 'tcp', '10.244.2.3:8080');
    expect(r.nat).toContain(`-A ${sep} -p tcp -m comment --comment default/web:http -m tcp -j DNAT --to-destination 10.244.2.3:8080`);
    expect(r.nat.at(-1)).not.toContain('KUBE-NODEPORTS');
    expect(r.nat.filter((l) => l.includes('must be the last rule'))).toHaveLength(1);
    expect(probability(0, 4)).toBe('0.2500000000');
  });

  it('gives headless and ExternalName Services no rules, and a Service without endpoints a REJECT', () => {
    const ports = servicePorts(
      [
        service('headless', { clusterIP: 'None', clusterIPs: ['None'] }),
        service('ext', { type: 'ExternalName', externalName: 'example.com' }),
        service('empty', { clusterIP: '10.96.0.30', clusterIPs: ['10.96.0.30'] }),
      ],
      [slice('headless', [{ ip: '10.244.1.2' }])],
    );
    expect(ports.map((p) => p.name)).toEqual(['default/empty:http']);
    const r = buildRules(ports, node);
    expect(r.filter).toContain(
      '-A KUBE-SERVICES -d 10.96.0.30/32 -p tcp -m comment --comment "default/empty:http has no endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable',
    );
    expect(r.nat.some((l) => l.includes('default/empty'))).toBe(false);
  });

  it('uses serving terminating endpoints only when none is ready', () => {
    const svc = [service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] })];
    const both = buildRules(servicePorts(svc, [slice('web', [{ ip: '10.244.1.2' }, { ip: '10.244.1.3', ready: false, serving: true, terminating: true }])]), node);
    expect(both.nat.join('\n')).not.toContain('10.244.1.3');
    const onlyTerminating = buildRules(servicePorts(svc, [slice('web', [{ ip: '10.244.1.3', ready: false, serving: true, terminating: true }])]), node);
    expect(onlyTerminating.nat.join('\n')).toContain('--to-destination 10.244.1.3:8080');
  });

  it('NodePort with externalTrafficPolicy Local goes to this node\'s endpoints only, and drops without one', () => {
    const svc = [service('np', { type: 'NodePort', clusterIP: '10.96.0.40', clusterIPs: ['10.96.0.40'], externalTrafficPolicy: 'Local', ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }] })];
    const eps = [slice('np', [{ ip: '10.244.1.2', node: 'node1' }, { ip: '10.244.2.2', node: 'node2' }])];
    const r1 = buildRules(servicePorts(svc, eps), node);
    const svl = r1.nat.filter((l) => l.startsWith('-A KUBE-SVL-') && l.includes('KUBE-SEP-'));
    expect(svl).toHaveLength(1);
    expect(svl[0]).toContain('default/np:http -> 10.244.1.2:8080');
    expect(r1.nat.some((l) => l.startsWith('-A KUBE-NODEPORTS') && l.includes('--dport 30080 -j KUBE-EXT-'))).toBe(true);
    const r3 = buildRules(servicePorts(svc, eps), { ...node, nodeName: 'node3' });
    expect(r3.filter).toContain('-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment "default/np:http has no local endpoints" -m addrtype --dst-type LOCAL -m tcp --dport 30080 -j DROP');
  });

  it('sessionAffinity ClientIP checks and sets the recent list of each endpoint', () => {
    const svc = [service('sticky', { clusterIP: '10.96.0.50', clusterIPs: ['10.96.0.50'], sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } })];
    const r = buildRules(servicePorts(svc, [slice('sticky', [{ ip: '10.244.1.2' }, { ip: '10.244.1.3' }])]), node);
    const sep = endpointChain('default/sticky:http', 'tcp', '10.244.1.2:8080');
    expect(r.nat.join('\n')).toContain(`-m recent --rcheck --seconds 600 --reap --name ${sep} --mask 255.255.255.255 --rsource -j ${sep}`);
    expect(r.nat.join('\n')).toContain(`-A ${sep} -p tcp -m comment --comment default/sticky:http -m recent --set --name ${sep} --mask 255.255.255.255 --rsource -m tcp -j DNAT --to-destination 10.244.1.2:8080`);
  });

  it('writes a rule set of upstream scale (hundreds of thousands of lines) into one restore input', () => {
    const nat = Array.from({ length: 300_000 }, (_, i) => `-A KUBE-SERVICES -d 10.${i >> 16}.${(i >> 8) & 255}.${i & 255}/32 -j ACCEPT`);
    const text = restoreInput({ filter: [], nat, chains: { filter: [], nat: ['KUBE-SERVICES'] } }, '');
    expect(text.split('\n').filter((l) => l.startsWith('-A KUBE-SERVICES'))).toHaveLength(300_000);
  });

  it('restore input deletes chains of Services that went and inserts missing jumps once', () => {
    const before = buildRules(servicePorts([service('web', { clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'] })], [slice('web', [{ ip: '10.244.1.2' }])]), node);
    const current = `*nat\n:PREROUTING ACCEPT [0:0]\n${before.chains.nat.map((c) => `:${c} - [0:0]`).join('\n')}\n-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\nCOMMIT\n`;
    const text = restoreInput(buildRules([], node), current);
    for (const c of before.chains.nat.filter((c) => /^KUBE-(SVC|SEP)-/.test(c))) expect(text).toContain(`-X ${c}`);
    expect(text).not.toContain('-I PREROUTING');
    expect(text).toContain('-I OUTPUT 1 -m comment --comment "kubernetes service portals" -j KUBE-SERVICES');
  });
});
