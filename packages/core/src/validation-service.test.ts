import { describe, expect, it } from 'vitest';
import { applyDefaults, assertValid, InvalidError, updateErrors, validationErrors, type KubeObject, type Service } from './index.js';

const svc = (spec: Record<string, unknown>): Service =>
  ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec }) as Service;

const errs = (o: KubeObject) => {
  applyDefaults(o);
  return validationErrors(o).map((c) => `${c.field}: ${c.message}`);
};

describe('Service', () => {
  it('defaults type, affinity, protocol, targetPort and traffic policies', () => {
    const s = svc({ selector: { app: 'web' }, ports: [{ port: 80 }] });
    applyDefaults(s);
    expect(s.spec).toMatchObject({
      type: 'ClusterIP',
      sessionAffinity: 'None',
      internalTrafficPolicy: 'Cluster',
      ports: [{ port: 80, protocol: 'TCP', targetPort: 80 }],
    });
    expect(s.spec.externalTrafficPolicy).toBeUndefined();
    expect(validationErrors(s)).toEqual([]);
    const np = svc({ type: 'NodePort', ports: [{ port: 80, targetPort: 'http' }] });
    applyDefaults(np);
    expect(np.spec.externalTrafficPolicy).toBe('Cluster');
    expect(np.spec.ports![0].targetPort).toBe('http');
  });

  it('reports the API server field errors', () => {
    expect(errs(svc({ ports: [] }))).toEqual(['spec.ports: Required value']);
    expect(errs(svc({ clusterIP: 'None' }))).toEqual([]);
    expect(errs(svc({ ports: [{ port: 80 }, { port: 81 }] }))).toEqual(['spec.ports[0].name: Required value', 'spec.ports[1].name: Required value']);
    expect(errs(svc({ ports: [{ port: 0 }] }))).toEqual([
      'spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive',
      'spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive',
    ]);
    expect(errs(svc({ ports: [{ port: 80, nodePort: 30080 }] }))).toEqual([
      "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
    ]);
    expect(errs(svc({ type: 'Bogus', ports: [{ port: 80 }] }))[0]).toBe(
      'spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"',
    );
    expect(errs(svc({ ports: [{ port: 80, protocol: 'ICMP' }] }))).toEqual([
      'spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    ]);
    expect(errs(svc({ clusterIP: '10.0.0.300', ports: [{ port: 80 }] }))).toEqual([
      'spec.clusterIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ]);
    expect(errs(svc({ type: 'ExternalName' }))).toEqual(['spec.externalName: Required value']);
    expect(errs(svc({ ports: [{ port: 80, targetPort: 'a_b' }] }))).toEqual([
      'spec.ports[0].targetPort: Invalid value: "a_b": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
    ]);
    expect(errs(svc({ ports: [{ port: 80 }], selector: { 'a b': 'x' } }))[0]).toMatch(/^spec\.selector: Invalid value: "a b"/);
    expect(errs(svc({ ports: [{ port: 80 }], externalTrafficPolicy: 'Local' }))).toEqual([
      "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set when `type` is 'NodePort' or 'LoadBalancer'",
    ]);
  });

  it('keeps cluster IPs immutable on update', () => {
    const a = svc({ clusterIP: '10.96.0.10', ports: [{ port: 53, protocol: 'UDP' }] });
    applyDefaults(a);
    const b = svc({ clusterIP: '10.96.0.11', ports: [{ port: 53, protocol: 'UDP' }] });
    applyDefaults(b);
    expect(updateErrors(b, a).map((c) => `${c.field}: ${c.message}`)).toEqual([
      'spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set',
    ]);
    const asExternal = svc({ type: 'ExternalName', externalName: 'example.com' });
    applyDefaults(asExternal);
    expect(updateErrors(asExternal, a)).toEqual([]);
  });

  it('throws 422 Invalid naming the kind', () => {
    const s = svc({ ports: [] });
    applyDefaults(s);
    try {
      assertValid(s);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidError);
      expect((e as InvalidError).message).toBe('Service "web" is invalid: spec.ports: Required value');
    }
  });
});

describe('Endpoints and EndpointSlice', () => {
  it('validates addresses and ports', () => {
    const ep = {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'web', namespace: 'default' },
      subsets: [{ addresses: [{ ip: '10.0.0.1' }, { ip: '127.0.0.1' }], ports: [{ port: 80 }, { name: 'b', port: 70000 }] }],
    } as KubeObject;
    expect(errs(ep)).toEqual([
      'subsets[0].addresses[1].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
      'subsets[0].ports[0].name: Required value',
      'subsets[0].ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive',
    ]);
  });

  it('checks address type, endpoint limits and immutability', () => {
    const slice = (addressType: string, endpoints: unknown[]) =>
      ({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'web-abc', namespace: 'default' }, addressType, endpoints, ports: [{ port: 80 }] }) as KubeObject;
    const ok = slice('IPv4', [{ addresses: ['10.1.0.5'], conditions: { ready: true } }]);
    expect(errs(ok)).toEqual([]);
    expect(ok.ports).toEqual([{ port: 80, name: '', protocol: 'TCP' }]);
    expect(errs(slice('IPv4', [{ addresses: ['fd00::1'] }, { addresses: [] }]))).toEqual([
      'endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address',
      'endpoints[1].addresses: Required value: must contain at least 1 address',
    ]);
    const many = Array.from({ length: 1001 }, () => ({ addresses: ['10.1.0.5'] }));
    expect(errs(slice('IPv4', many))).toEqual(['endpoints: Too many: 1001: must have at most 1000 items']);
    expect(errs(slice('IP', []))[0]).toBe('addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"');
    const v6 = slice('IPv6', []);
    expect(updateErrors(v6, ok).map((c) => c.message)).toEqual(['Invalid value: "IPv6": field is immutable']);
  });
});

describe('NetworkPolicy', () => {
  const np = (spec: Record<string, unknown>) =>
    ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny', namespace: 'default' }, spec }) as KubeObject;

  it('defaults policyTypes from the rules present', () => {
    const a = np({ podSelector: {} });
    applyDefaults(a);
    expect(a.spec.policyTypes).toEqual(['Ingress']);
    const b = np({ podSelector: {}, egress: [{ ports: [{ port: 53 }] }] });
    applyDefaults(b);
    expect(b.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(b.spec.egress[0].ports[0].protocol).toBe('TCP');
  });

  it('reports peers, ports and CIDRs as the API server does', () => {
    expect(
      errs(
        np({
          podSelector: { matchLabels: { app: 'db' } },
          ingress: [
            {
              from: [{}, { podSelector: {}, ipBlock: { cidr: '10.0.0.0/8' } }, { ipBlock: { cidr: '10.0.0.0/8', except: ['10.1.0.0/16', '192.168.0.0/24', '10.0.0.0/8'] } }],
              ports: [{ port: 'http', endPort: 90 }, { port: 100, endPort: 90 }],
            },
          ],
          policyTypes: ['Ingress', 'Sideways'],
        }),
      ),
    ).toEqual([
      'spec.ingress[0].ports[0].endPort: Forbidden: may not be specified when `port` is non-numeric',
      'spec.ingress[0].ports[1].endPort: Invalid value: 90: must be greater than or equal to `port`',
      'spec.ingress[0].from[0]: Required value: must specify a peer',
      'spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer',
      'spec.ingress[0].from[2].ipBlock.except[1]: Invalid value: "192.168.0.0/24": must be a strict subset of `cidr`',
      'spec.ingress[0].from[2].ipBlock.except[2]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`',
      'spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Egress", "Ingress"',
    ]);
  });
});
