// Network devices (`ip link`): creating veth pairs, bridges, VXLAN and dummy devices; renaming, moving
// between namespaces, up/down, MTU and MAC changes; what goes with a device when it is deleted.
import { formatIpAddr, ipKey } from '@kemu/ip';
import { formatMac, isMulticastMac, linkLocalFromMac, macKeyAt, mustParseIp, mustParseMac } from './addr.js';
import { NetsimError } from './errors.js';
import { registerVxlanPort, VXLAN_PORT } from './packet.js';
import type { LinkChange, LinkInfo, LinkSpec } from './types.js';
import { bridgeMtuAdjust, release } from './world-bridge.js';
import { addPrefixRoute, insertAddr, removeAddr } from './world-ifaddr.js';
import { Link, type Ns, validIfname } from './world-model.js';
import { linkByName, nsByName, type WorldState } from './world-state.js';

export function newMac(w: WorldState): Uint8Array {
  const n = ++w.macSeq;
  return Uint8Array.of(0x02, w.seed, (n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255);
}

export function macOrNew(w: WorldState, s: string | undefined): Uint8Array {
  if (s === undefined) return newMac(w);
  const m = mustParseMac(s);
  if (isMulticastMac(m)) throw new NetsimError('EADDRNOTAVAIL', `link-layer address ${s} is multicast`);
  return m;
}

export function checkMtu(mtu: number | undefined, def: number): number {
  if (mtu === undefined) return def;
  if (!Number.isInteger(mtu) || mtu < 68 || mtu > 65535)
    throw new NetsimError('EINVAL', `mtu ${mtu} out of range`);
  return mtu;
}

export function addLink(w: WorldState, nsName: string, spec: LinkSpec): void {
  const ns = nsByName(w, nsName);
  if (!spec || typeof spec !== 'object') throw new NetsimError('EINVAL', 'link spec missing');
  if (!validIfname(spec.name))
    throw new NetsimError('EINVAL', `"${String(spec.name)}" is not a valid ifname`);
  if (ns.links.has(spec.name)) throw new NetsimError('EEXIST', `link ${spec.name} in ${nsName}`);
  switch (spec.kind) {
    case 'veth': {
      const peerSpec = spec.peer;
      if (!peerSpec || !validIfname(peerSpec.name)) {
        throw new NetsimError('EINVAL', `"${String(peerSpec?.name)}" is not a valid ifname`);
      }
      const pns = peerSpec.ns === undefined ? ns : nsByName(w, peerSpec.ns);
      if (pns.links.has(peerSpec.name) || (pns === ns && peerSpec.name === spec.name)) {
        throw new NetsimError('EEXIST', `link ${peerSpec.name} in ${pns.name}`);
      }
      const mtu = checkMtu(spec.mtu, 1500);
      const a = new Link(ns, ns.nextIfindex++, spec.name, 'veth', macOrNew(w, spec.mac), mtu);
      const b = new Link(pns, pns.nextIfindex++, peerSpec.name, 'veth', macOrNew(w, peerSpec.mac), mtu);
      a.peer = b;
      b.peer = a;
      ns.links.set(a.name, a);
      pns.links.set(b.name, b);
      return;
    }
    case 'bridge': {
      const l = new Link(
        ns,
        ns.nextIfindex++,
        spec.name,
        'bridge',
        macOrNew(w, spec.mac),
        checkMtu(spec.mtu, 1500),
      );
      l.ports = new Set();
      l.fdb = new Map();
      if (spec.ageingMs !== undefined) {
        if (!Number.isFinite(spec.ageingMs) || spec.ageingMs < 0)
          throw new NetsimError('EINVAL', 'bad ageing time');
        l.ageingMs = spec.ageingMs;
      }
      l.fdb.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
      ns.links.set(l.name, l);
      return;
    }
    case 'vxlan': {
      if (!Number.isInteger(spec.vni) || spec.vni < 0 || spec.vni > 0xffffff) {
        throw new NetsimError('ERANGE', `vxlan id ${String(spec.vni)} out of range`);
      }
      const port = spec.port ?? VXLAN_PORT;
      if (!Number.isInteger(port) || port < 1 || port > 65535)
        throw new NetsimError('EINVAL', `bad vxlan port ${port}`);
      const local = spec.local === undefined ? null : mustParseIp(spec.local, 'local address');
      // Headroom for the outer headers: 50 bytes over IPv4, 70 over IPv6 (only when a lower device caps it).
      let mtuDef = 1500;
      if (spec.dev !== undefined) mtuDef = linkByName(ns, spec.dev).mtu - (local?.family === 6 ? 70 : 50);
      for (const other of ns.vxSock.get(port) ?? []) {
        if (other.vni === spec.vni)
          throw new NetsimError('EEXIST', `vxlan vni ${spec.vni} port ${port} already used by ${other.name}`);
      }
      const l = new Link(
        ns,
        ns.nextIfindex++,
        spec.name,
        'vxlan',
        macOrNew(w, spec.mac),
        checkMtu(spec.mtu, mtuDef),
      );
      l.vni = spec.vni;
      l.vxPort = port;
      l.vxLocal = local;
      l.vxDev = spec.dev ?? null;
      l.vxLinkNs = ns;
      l.vxLearning = spec.learning ?? true;
      l.vxTtl = spec.ttl ?? 64;
      l.vxFdb = new Map();
      ns.links.set(l.name, l);
      const socks = ns.vxSock.get(port) ?? [];
      socks.push(l);
      ns.vxSock.set(port, socks);
      registerVxlanPort(port);
      return;
    }
    case 'dummy': {
      const l = new Link(
        ns,
        ns.nextIfindex++,
        spec.name,
        'dummy',
        macOrNew(w, spec.mac),
        checkMtu(spec.mtu, 1500),
      );
      ns.links.set(l.name, l);
      return;
    }
    default:
      throw new NetsimError('ENOTSUP', `unknown link kind "${String((spec as { kind?: unknown }).kind)}"`);
  }
}

export function deleteLink(w: WorldState, nsName: string, name: string): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, name);
  if (l.kind === 'loopback') throw new NetsimError('ENOTSUP', 'cannot delete the loopback device');
  destroyLink(w, l);
}

export function destroyLink(w: WorldState, l: Link): void {
  if (l.ports) for (const p of [...l.ports]) release(p);
  if (l.master) release(l);
  flushLinkState(l);
  l.alive = false;
  l.ns.links.delete(l.name);
  if (l.kind === 'vxlan' && l.vxLinkNs) {
    const socks = l.vxLinkNs.vxSock.get(l.vxPort)?.filter((x) => x !== l) ?? [];
    if (socks.length) l.vxLinkNs.vxSock.set(l.vxPort, socks);
    else l.vxLinkNs.vxSock.delete(l.vxPort);
  }
  const peer = l.peer;
  if (peer) {
    l.peer = null;
    peer.peer = null;
    if (peer.ns.links.get(peer.name) === peer) destroyLink(w, peer);
  }
}

/** Addresses, routes and neighbours that reference a device go when it is deleted or moved. */
export function flushLinkState(l: Link): void {
  const ns = l.ns;
  for (const a of ns.addrs.filter((x) => x.dev === l)) removeAddr(ns, a);
  for (const t of ns.tables.values()) {
    t.v4 = t.v4.filter((r) => r.dev !== l);
    t.v6 = t.v6.filter((r) => r.dev !== l);
  }
  l.neighIfAny?.clear();
  const sysctls = ns.sysctlsIfAny;
  if (sysctls) for (const k of [...sysctls.keys()]) if (k.split('/')[3] === l.name) sysctls.delete(k);
}

export function setLink(w: WorldState, nsName: string, name: string, ch: LinkChange): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, name);
  if (!ch || typeof ch !== 'object') throw new NetsimError('EINVAL', 'link change missing');
  // Validate everything first so a rejected change leaves the link as it was.
  if (ch.mtu !== undefined) checkMtu(ch.mtu, 0);
  const mac = ch.mac !== undefined ? macOrNew(w, ch.mac) : null;
  let master: Link | null | undefined;
  if (ch.master !== undefined) {
    if (ch.master === null) master = null;
    else {
      master = linkByName(ns, ch.master);
      if (master.kind !== 'bridge') throw new NetsimError('ENOTSUP', `${ch.master} is not a bridge`);
      if (master === l) throw new NetsimError('ELOOP', 'cannot enslave a bridge to itself');
      if (l.kind === 'bridge') throw new NetsimError('ELOOP', 'cannot enslave a bridge to a bridge');
      if (l.kind === 'loopback') throw new NetsimError('EINVAL', 'cannot enslave the loopback device');
    }
  }
  const portFlag =
    ch.hairpin !== undefined ||
    ch.learning !== undefined ||
    ch.flood !== undefined ||
    ch.mcastFlood !== undefined ||
    ch.isolated !== undefined;
  if (portFlag && !l.master && master == null)
    throw new NetsimError('ENOTSUP', `${name} is not a bridge port`);
  if (ch.ageingMs !== undefined && l.kind !== 'bridge' && l.kind !== 'vxlan')
    throw new NetsimError('ENOTSUP', `${name} has no FDB ageing`);
  let target: Ns | undefined;
  if (ch.netns !== undefined) {
    target = nsByName(w, ch.netns);
    if (l.kind === 'loopback') throw new NetsimError('EINVAL', 'the loopback device cannot change namespace');
    const newName = ch.name ?? l.name;
    if (target !== ns && target.links.has(newName))
      throw new NetsimError('EEXIST', `link ${newName} in ${target.name}`);
  }
  if (ch.name !== undefined && ch.name !== l.name) {
    if (!validIfname(ch.name)) throw new NetsimError('EINVAL', `"${String(ch.name)}" is not a valid ifname`);
    if ((target ?? ns).links.has(ch.name)) throw new NetsimError('EEXIST', `link ${ch.name}`);
    if (l.up && ch.up !== false && (!target || target === ns))
      throw new NetsimError('EBUSY', `cannot rename ${name} while it is up`);
  }

  if (target && target !== ns) {
    if (l.master) release(l);
    if (l.ports) for (const p of [...l.ports]) release(p);
    flushLinkState(l);
    l.up = false;
    ns.links.delete(l.name);
    l.ns = target;
    l.index = target.nextIfindex++;
    target.links.set(ch.name ?? l.name, l);
  }
  if (ch.name !== undefined && ch.name !== l.name) {
    l.ns.links.delete(l.name);
    l.name = ch.name;
    l.ns.links.set(l.name, l);
  }
  if (ch.mtu !== undefined) {
    l.mtu = ch.mtu;
    if (l.kind === 'bridge') l.mtuSetByUser = true;
  }
  if (mac) {
    if (l.fdb) l.fdb.delete(l.macKey);
    if (l.master) l.master.fdb!.delete(l.macKey);
    l.mac = mac;
    l.macKey = macKeyAt(mac, 0);
    if (l.fdb) l.fdb.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
    if (l.master) l.master.fdb!.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
  }
  if (master !== undefined && master !== l.master) {
    if (l.master) release(l);
    if (master) {
      l.master = master;
      l.port = { hairpin: false, learning: true, flood: true, mcastFlood: true, isolated: false };
      master.ports!.add(l);
      master.fdb!.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
    }
  }
  if (l.master && (ch.mtu !== undefined || master)) bridgeMtuAdjust(l.master);
  if (l.port) {
    if (ch.hairpin !== undefined) l.port.hairpin = ch.hairpin;
    if (ch.learning !== undefined) l.port.learning = ch.learning;
    if (ch.flood !== undefined) l.port.flood = ch.flood;
    if (ch.mcastFlood !== undefined) l.port.mcastFlood = ch.mcastFlood;
    if (ch.isolated !== undefined) l.port.isolated = ch.isolated;
  }
  if (ch.proxyArp !== undefined) l.proxyArp = ch.proxyArp;
  if (ch.promisc !== undefined) l.promisc = ch.promisc;
  if (ch.ageingMs !== undefined) l.ageingMs = ch.ageingMs;
  if (ch.up !== undefined && ch.up !== l.up) {
    if (ch.up) linkUp(l);
    else linkDown(l);
  }
}

export function linkUp(l: Link): void {
  l.up = true;
  const ns = l.ns;
  if (l.kind === 'loopback') {
    // The kernel gives lo its addresses when it comes up.
    if (!ns.addrs.some((a) => a.dev === l && a.ip.family === 4 && a.key === 0x7f000001)) {
      insertAddr(ns, l, { family: 4, bytes: Uint8Array.of(127, 0, 0, 1) }, 8, 'host');
    }
    const v6lo = new Uint8Array(16);
    v6lo[15] = 1;
    if (!ns.local.has(ipKey({ family: 6, bytes: v6lo })))
      insertAddr(ns, l, { family: 6, bytes: v6lo }, 128, 'host');
    return;
  }
  for (const a of ns.addrs) if (a.dev === l) addPrefixRoute(ns, a);
  // IPv6 link-local address (addr_gen_mode eui64), as the kernel assigns on NETDEV_UP.
  const ll = linkLocalFromMac(l.mac);
  const llKey = ipKey({ family: 6, bytes: ll });
  if (!ns.addrs.some((a) => a.dev === l && a.key === llKey))
    insertAddr(ns, l, { family: 6, bytes: ll }, 64, 'link');
}

export function linkDown(l: Link): void {
  l.up = false;
  const ns = l.ns;
  // IPv4 drops every route through a device that goes down; IPv6 drops the kernel's own routes.
  for (const t of ns.tables.values()) {
    t.v4 = t.v4.filter((r) => r.dev !== l);
    t.v6 = t.v6.filter((r) => !(r.dev === l && r.proto === 'kernel'));
  }
  for (const a of ns.addrs.filter((x) => x.dev === l && x.scope === 'link' && x.ip.family === 6))
    removeAddr(ns, a);
  for (const [k, n] of l.neigh) if (n.state !== 'PERMANENT') l.neigh.delete(k);
}

export function getLink(w: WorldState, nsName: string, name: string): LinkInfo {
  return linkInfo(linkByName(nsByName(w, nsName), name));
}

/** Whether the namespace holds a link of that name: one map lookup, however many links it holds. */
export function hasLink(w: WorldState, nsName: string, name: string): boolean {
  return nsByName(w, nsName).links.has(name);
}

export function links(w: WorldState, nsName: string): LinkInfo[] {
  return [...nsByName(w, nsName).links.values()].sort((a, b) => a.index - b.index).map((l) => linkInfo(l));
}

export function linkInfo(l: Link): LinkInfo {
  const info: LinkInfo = {
    index: l.index,
    name: l.name,
    kind: l.kind,
    mac: formatMac(l.mac),
    mtu: l.mtu,
    up: l.up,
    carrier: l.carrier,
    master: l.master?.name ?? null,
    proxyArp: l.proxyArp,
    promisc: l.promisc,
    stats: { ...l.stats },
  };
  if (l.peer) info.peer = { ns: l.peer.ns.name, name: l.peer.name };
  if (l.port) info.port = { ...l.port };
  if (l.kind === 'bridge') info.bridge = { ageingMs: l.ageingMs };
  if (l.kind === 'vxlan') {
    info.vxlan = {
      vni: l.vni,
      port: l.vxPort,
      local: l.vxLocal ? formatIpAddr(l.vxLocal) : null,
      dev: l.vxDev,
      learning: l.vxLearning,
      ttl: l.vxTtl,
    };
  }
  return info;
}
