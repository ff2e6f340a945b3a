// The cluster DNS Service as kubeadm makes it: `kube-dns` in kube-system at the tenth address of the
// service CIDR (the kubelets' clusterDNS), ports dns 53/UDP, dns-tcp 53/TCP and metrics 9153/TCP. Where the
// cluster network can host a server socket (the simulated datapath), the DNS server answers on the first
// local node's address, as a hostNetwork CoreDNS would, and an EndpointSlice names that address: a pod's
// query then crosses kube-proxy's DNAT to it as a datagram and the answer comes back un-NATed.
import { DEFAULT_SERVICE_CIDR, type EndpointSlice, isAlreadyExists, isNotFound, type Service, type Store } from '@kemu/core';
import { answerMessage, type DnsServer } from '@kemu/dns';
import { nthAddress } from '@kemu/ip';
import type { ClusterNetwork } from './cluster-network.js';

export const KUBE_DNS_NAMESPACE = 'kube-system';
export const KUBE_DNS_NAME = 'kube-dns';
export const DNS_PORT = 53;
const METRICS_PORT = 9153;
const MANAGED_BY = 'cluster-dns.kemu.io';

/** The cluster DNS address kubeadm picks: the tenth of the service CIDR (10.96.0.10 for 10.96.0.0/12). */
export function clusterDnsIP(serviceCIDR: string = DEFAULT_SERVICE_CIDR): string {
  return nthAddress(serviceCIDR.split(',')[0]!.trim(), 10);
}

const ports = [
  { name: 'dns', port: DNS_PORT, protocol: 'UDP' as const },
  { name: 'dns-tcp', port: DNS_PORT, protocol: 'TCP' as const },
  { name: 'metrics', port: METRICS_PORT, protocol: 'TCP' as const },
];

/** Creates the kube-dns Service at `ip` unless it exists (a restarted cluster keeps its own). */
export async function ensureKubeDnsService(store: Store, ip: string): Promise<void> {
  // Looked up first: a second create would be refused for its address before its name, as upstream does.
  try {
    await store.get('Service', KUBE_DNS_NAMESPACE, KUBE_DNS_NAME);
    return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  try {
    await store.create<Service>({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: KUBE_DNS_NAME,
        namespace: KUBE_DNS_NAMESPACE,
        labels: { 'k8s-app': 'kube-dns', 'kubernetes.io/cluster-service': 'true', 'kubernetes.io/name': 'CoreDNS' },
        annotations: { 'prometheus.io/port': String(METRICS_PORT), 'prometheus.io/scrape': 'true' },
      },
      // No selector: the endpoint is the server's socket on a node, published below, not a pod.
      spec: { clusterIP: ip, clusterIPs: [ip], ports: ports.map((p) => ({ ...p, targetPort: p.port })) },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

/** The EndpointSlice that sends kube-dns to the DNS server on `nodeName` at `nodeIP`. */
export function dnsEndpointSlice(nodeName: string, nodeIP: string): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${KUBE_DNS_NAME}-server`,
      namespace: KUBE_DNS_NAMESPACE,
      labels: { 'kubernetes.io/service-name': KUBE_DNS_NAME, 'endpointslice.kubernetes.io/managed-by': MANAGED_BY },
    },
    addressType: 'IPv4',
    ports: ports.map((p) => ({ name: p.name, port: p.port, protocol: p.protocol })),
    endpoints: [{ addresses: [nodeIP], nodeName, conditions: { ready: true, serving: true, terminating: false } }],
  };
}

/**
 * Puts the DNS server's answers on `nodeName`'s address in the cluster network (UDP 53 answered by the
 * server's resolver, TCP 53 accepting where the network can) and points kube-dns at it. The result stops
 * the socket; undefined when the node's namespace is out of this process's reach (a simulated node of
 * another process).
 */
export async function serveClusterDns(o: { store: Store; network: ClusterNetwork; dns: DnsServer; nodeName: string; nodeIP: string }): Promise<(() => Promise<void>) | undefined> {
  // A node of another process is reachable only where namespaces are the machine's (the linux datapath).
  if (!o.network.serveUdp || !(o.network.nodes.has(o.nodeName) || o.network.onMachine)) return undefined;
  // The in-cluster socket answers from the cluster's own records only; forwarding waits on the network.
  const stop = await o.network.serveUdp(o.nodeName, DNS_PORT, (query) => answerMessage(o.dns.resolver, query, 'udp'), { tcp: true });
  const slice = dnsEndpointSlice(o.nodeName, o.nodeIP);
  try {
    const old = await o.store.get('EndpointSlice', KUBE_DNS_NAMESPACE, slice.metadata.name!);
    await o.store.update<EndpointSlice>({ ...slice, metadata: { ...slice.metadata, resourceVersion: old.metadata.resourceVersion } });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await o.store.create(slice);
  }
  return stop;
}
