// Services, EndpointSlices and a two-node simulated cluster for the tests (not exported from the package).
import type { EndpointSlice, Service, ServiceSpec } from '@kemu/core';
import { World } from '@kemu/netsim';

export function service(name: string, spec: Partial<ServiceSpec>, ns = 'default'): Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns },
    spec: { type: 'ClusterIP', ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }], ...spec },
  };
}

export function slice(
  svc: string,
  endpoints: { ip: string; node?: string; ready?: boolean; serving?: boolean; terminating?: boolean }[],
  port = 8080,
  ns = 'default',
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${svc}-abcde`, namespace: ns, labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4',
    ports: [{ name: 'http', protocol: 'TCP', port }],
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      nodeName: e.node,
      conditions: { ready: e.ready ?? true, serving: e.serving ?? e.ready ?? true, terminating: e.terminating ?? false },
    })),
  };
}

/**
 * Two nodes (node1 192.168.0.1, node2 192.168.0.2) routing each other's pod /24 over a shared underlay
 * bridge, pods on each node's cni0 bridge, br_netfilter on, and a client `ext` on the underlay.
 */
export function twoNodes(pods: Record<string, { node: 1 | 2; ip: string }>): World {
  const w = new World();
  w.addNamespace('underlay');
  w.addLink('underlay', { kind: 'bridge', name: 'br0' });
  w.setLink('underlay', 'br0', { up: true });
  const uplink = (ns: string, ip: string) => {
    w.addLink(ns, { kind: 'veth', name: 'eth0', peer: { name: `up-${ns}`, ns: 'underlay' } });
    w.setLink('underlay', `up-${ns}`, { master: 'br0', up: true });
    w.setLink(ns, 'lo', { up: true });
    w.setLink(ns, 'eth0', { up: true });
    w.addAddress(ns, 'eth0', `${ip}/24`);
  };
  for (const i of [1, 2]) {
    const node = `node${i}`;
    w.addNamespace(node);
    uplink(node, `192.168.0.${i}`);
    w.setForwarding(node, 4, true);
    w.setSysctl(node, 'net.bridge.bridge-nf-call-iptables', '1');
    w.addLink(node, { kind: 'bridge', name: 'cni0' });
    w.setLink(node, 'cni0', { up: true });
    w.addAddress(node, 'cni0', `10.244.${i}.1/24`);
    w.addRoute(node, { dst: `10.244.${3 - i}.0/24`, via: `192.168.0.${3 - i}` });
    w.addRoute(node, { dst: 'default', via: '192.168.0.100' });
  }
  w.addNamespace('ext');
  uplink('ext', '192.168.0.100');
  for (const [name, p] of Object.entries(pods)) {
    const node = `node${p.node}`;
    w.addNamespace(name);
    const hostIf = `veth${name}`.slice(0, 15);
    w.addLink(node, { kind: 'veth', name: hostIf, peer: { name: 'eth0', ns: name } });
    w.setLink(node, hostIf, { master: 'cni0', up: true });
    w.setLink(name, 'lo', { up: true });
    w.setLink(name, 'eth0', { up: true });
    w.addAddress(name, 'eth0', `${p.ip}/24`);
    w.addRoute(name, { dst: 'default', via: `10.244.${p.node}.1` });
    w.listen(name, { proto: 'tcp', port: 8080 });
  }
  return w;
}
