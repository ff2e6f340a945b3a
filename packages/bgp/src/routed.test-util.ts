// Shared by the BGP-routed scenario tests (Linux kernel and netsim): calico-style pod plumbing through any
// @kemu/cni Datapath, so both datapaths are built by the very same calls.
import { type Datapath, HOST_NETNS } from '@kemu/cni';

/** The MAC calico gives every host-side veth; pods reach their node through it. */
export const HOST_VETH_MAC = 'ee:ee:ee:ee:ee:ee';
/** The link-local next hop calico pods route through. */
export const POD_GATEWAY = '169.254.1.1';

/** Underlay bridge, node addresses and the pool the scenarios share. */
export const UNDERLAY_SUBNET = 24;
export const POOL = { cidr: '10.250.0.0/16', blockSize: 26 };

/** A node namespace ready to route: loopback and its underlay port up with `ip`, forwarding on. */
export async function prepareNode(dp: Datapath, ip: string): Promise<void> {
  await dp.setLink(HOST_NETNS, 'lo', { up: true });
  await dp.setLink(HOST_NETNS, 'eth0', { up: true });
  await dp.addAddr(HOST_NETNS, 'eth0', `${ip}/${UNDERLAY_SUBNET}`);
  await dp.setSysctl(HOST_NETNS, 'net.ipv4.ip_forward', '1');
}

/**
 * Connects pod namespace `podNs` to its node the way calico does: a veth whose pod end carries the address
 * as a /32 with a default route via 169.254.1.1, and whose node end has `<ip>/32` routed onto it. Calico
 * answers the pod's ARP for 169.254.1.1 by proxy ARP; a permanent neighbour entry gives the same result
 * without depending on the node's own routes.
 */
export async function plumbPod(dp: Datapath, podNs: string, hostIf: string, ip: string): Promise<void> {
  await dp.addLink(HOST_NETNS, {
    kind: 'veth',
    name: hostIf,
    mac: HOST_VETH_MAC,
    up: true,
    peer: { name: 'eth0', netns: podNs },
  });
  await dp.setLink(podNs, 'lo', { up: true });
  await dp.setLink(podNs, 'eth0', { up: true });
  await dp.addAddr(podNs, 'eth0', `${ip}/32`);
  await dp.addRoute(podNs, { dst: `${POD_GATEWAY}/32`, dev: 'eth0', scope: 'link' });
  await dp.addRoute(podNs, { dst: '0.0.0.0/0', via: POD_GATEWAY, dev: 'eth0' });
  await dp.setNeigh(podNs, { ip: POD_GATEWAY, mac: HOST_VETH_MAC, dev: 'eth0', permanent: true });
  await dp.addRoute(HOST_NETNS, { dst: `${ip}/32`, dev: hostIf, scope: 'link' });
}

/** Routes a node's datapath holds that a BGP speaker installed, as `[dst, via]`, sorted. */
export async function bgpRoutes(dp: Datapath): Promise<[string, string][]> {
  return (await dp.listRoutes(HOST_NETNS, { family: 4 }))
    .filter((r) => r.protocol === 'bgp')
    .map((r): [string, string] => [r.dst, r.via ?? ''])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

export async function until(cond: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
