// Topologies shared by the tests (not exported from the package).
import { World } from './world.js';

/** One host namespace with bridge cni0 (10.244.0.1/24) and `n` pods pod1..podN at 10.244.0.(i+1). */
export function bridgeWorld(n: number, opts: { captureLimit?: number } = {}): World {
  const w = new World(opts);
  w.addNamespace('host');
  w.addLink('host', { kind: 'bridge', name: 'cni0' });
  w.setLink('host', 'cni0', { up: true });
  w.addAddress('host', 'cni0', '10.244.0.1/24');
  w.addAddress('host', 'cni0', 'fd00:244::1/64');
  for (let i = 1; i <= n; i++)
    addPod(w, 'host', 'cni0', `pod${i}`, `10.244.0.${i + 1}`, '10.244.0.1', `fd00:244::${i + 1}`);
  return w;
}

export function addPod(
  w: World,
  host: string,
  bridge: string,
  name: string,
  ip: string,
  gw: string,
  ip6?: string,
): void {
  w.addNamespace(name);
  const hostIf = `veth${name}`.slice(0, 15);
  w.addLink(host, { kind: 'veth', name: hostIf, peer: { name: 'eth0', ns: name } });
  w.setLink(host, hostIf, { master: bridge, up: true });
  w.setLink(name, 'lo', { up: true });
  w.setLink(name, 'eth0', { up: true });
  w.addAddress(name, 'eth0', `${ip}/24`);
  w.addRoute(name, { dst: 'default', via: gw });
  if (ip6) w.addAddress(name, 'eth0', `${ip6}/64`);
}

/**
 * Two nodes joined by an underlay veth (192.168.0.1 <-> 192.168.0.2), each with a bridge and one pod,
 * and a flannel-style VXLAN overlay: vni 1, routes via the remote flannel.1 address, permanent neighbour
 * and FDB entries pointing at the remote VTEP.
 */
export function vxlanWorld(): World {
  const w = new World();
  w.addNamespace('node1');
  w.addNamespace('node2');
  w.addLink('node1', { kind: 'veth', name: 'eth0', peer: { name: 'eth0', ns: 'node2' } });
  const vtepMac = ['0a:00:00:00:01:01', '0a:00:00:00:02:01'];
  for (const i of [1, 2]) {
    const node = `node${i}`;
    w.setLink(node, 'lo', { up: true });
    w.setLink(node, 'eth0', { up: true });
    w.addAddress(node, 'eth0', `192.168.0.${i}/24`);
    w.setForwarding(node, 4, true);
    w.addLink(node, { kind: 'bridge', name: 'cni0' });
    w.setLink(node, 'cni0', { up: true });
    w.addAddress(node, 'cni0', `10.244.${i}.1/24`);
    addPod(w, node, 'cni0', `pod${i}`, `10.244.${i}.2`, `10.244.${i}.1`);
    w.addLink(node, {
      kind: 'vxlan',
      name: 'flannel.1',
      vni: 1,
      local: `192.168.0.${i}`,
      dev: 'eth0',
      learning: false,
      mac: vtepMac[i - 1],
    });
    w.setLink(node, 'flannel.1', { up: true });
    w.addAddress(node, 'flannel.1', `10.244.${i}.0/32`);
  }
  for (const [i, j] of [
    [1, 2],
    [2, 1],
  ] as const) {
    const node = `node${i}`;
    w.addRoute(node, { dst: `10.244.${j}.0/24`, via: `10.244.${j}.0`, dev: 'flannel.1', onlink: true });
    w.addNeighbour(node, { dev: 'flannel.1', ip: `10.244.${j}.0`, mac: vtepMac[j - 1]! });
    w.addFdb(node, 'flannel.1', { mac: vtepMac[j - 1]!, dst: `192.168.0.${j}` });
  }
  return w;
}
