import {
  type AddrInfo,
  type Datapath,
  DatapathError,
  type FdbSpec,
  HOST_NETNS,
  type LinkChanges,
  type LinkInfo,
  type LinkSpec,
  type NatRule,
  type NeighSpec,
  type NetnsRef,
  type RouteInfo,
  type RouteSpec,
} from './datapath.js';

interface Ns {
  links: Map<string, LinkInfo>;
  addrs: AddrInfo[];
  routes: RouteInfo[];
  neighs: NeighSpec[];
  fdb: FdbSpec[];
  sysctl: Map<string, string>;
  nat: NatRule[];
}

function newNs(): Ns {
  const ns: Ns = {
    links: new Map(),
    addrs: [],
    routes: [],
    neighs: [],
    fdb: [],
    sysctl: new Map(),
    nat: [],
  };
  ns.links.set('lo', { name: 'lo', index: 1, kind: 'loopback', mac: '00:00:00:00:00:00', mtu: 65536, up: false });
  return ns;
}

let macCounter = 1;
function nextMac(): string {
  const n = macCounter++;
  return `0a:58:00:00:${((n >> 8) & 0xff).toString(16).padStart(2, '0')}:${(n & 0xff).toString(16).padStart(2, '0')}`;
}

const family = (cidr: string): 4 | 6 => (cidr.includes(':') ? 6 : 4);

/**
 * A small in-memory Datapath for unit tests of plugin logic: it keeps state per namespace and enforces the
 * errno conventions of the interface (ENOENT/EEXIST), but models no packets. Namespaces other than the host
 * exist once {@link MemoryDatapath.addNetns} was called.
 */
export class MemoryDatapath implements Datapath {
  readonly kind = 'memory';
  private readonly namespaces = new Map<NetnsRef, Ns>([[HOST_NETNS, newNs()]]);
  private nextIndex = 2;

  addNetns(path: NetnsRef): void {
    if (!this.namespaces.has(path)) this.namespaces.set(path, newNs());
  }

  removeNetns(path: NetnsRef): void {
    const ns = this.namespaces.get(path);
    if (!ns) return;
    // veths whose peer lived there disappear with it, as in the kernel.
    for (const link of ns.links.values()) if (link.kind === 'veth') this.dropPeer(link);
    this.namespaces.delete(path);
  }

  private ns(netns: NetnsRef): Ns {
    const ns = this.namespaces.get(netns);
    if (!ns) throw new DatapathError('ENOENT', `network namespace ${netns} does not exist`);
    return ns;
  }

  private link(ns: Ns, name: string): LinkInfo {
    const l = ns.links.get(name);
    if (!l) throw new DatapathError('ENOENT', `link ${name} not found`);
    return l;
  }

  private dropPeer(link: LinkInfo): void {
    for (const other of this.namespaces.values()) {
      for (const l of other.links.values()) {
        if (l.kind === 'veth' && l.index === link.peerIndex) this.removeLink(other, l.name);
      }
    }
  }

  private removeLink(ns: Ns, name: string): void {
    ns.links.delete(name);
    ns.addrs = ns.addrs.filter((a) => a.link !== name);
    ns.routes = ns.routes.filter((r) => r.dev !== name);
    ns.neighs = ns.neighs.filter((n) => n.dev !== name);
    ns.fdb = ns.fdb.filter((f) => f.dev !== name);
  }

  async netnsExists(netns: NetnsRef): Promise<boolean> {
    return this.namespaces.has(netns);
  }

  async getLink(netns: NetnsRef, name: string): Promise<LinkInfo | undefined> {
    const l = this.ns(netns).links.get(name);
    return l ? { ...l } : undefined;
  }

  async listLinks(netns: NetnsRef): Promise<LinkInfo[]> {
    return [...this.ns(netns).links.values()].map((l) => ({ ...l }));
  }

  async addLink(netns: NetnsRef, spec: LinkSpec): Promise<LinkInfo> {
    const ns = this.ns(netns);
    if (ns.links.has(spec.name)) throw new DatapathError('EEXIST', `link ${spec.name} already exists`);
    const base: LinkInfo = {
      name: spec.name,
      index: this.nextIndex++,
      kind: spec.kind,
      mac: spec.mac ?? nextMac(),
      mtu: spec.mtu ?? 1500,
      up: spec.up ?? false,
    };
    if (spec.kind === 'vxlan') base.vxlan = { ...spec.vxlan };
    if (spec.kind === 'bridge') base.bridge = { ...spec.bridge };
    if (spec.kind === 'veth') {
      const peerNs = this.ns(spec.peer.netns);
      if (peerNs.links.has(spec.peer.name)) throw new DatapathError('EEXIST', `link ${spec.peer.name} already exists`);
      const peer: LinkInfo = {
        name: spec.peer.name,
        index: this.nextIndex++,
        kind: 'veth',
        mac: spec.peer.mac ?? nextMac(),
        mtu: base.mtu,
        up: false,
        peerIndex: base.index,
      };
      base.peerIndex = peer.index;
      peerNs.links.set(peer.name, peer);
    }
    ns.links.set(spec.name, base);
    return { ...base };
  }

  async setLink(netns: NetnsRef, name: string, c: LinkChanges): Promise<void> {
    const ns = this.ns(netns);
    const l = this.link(ns, name);
    if (c.master) {
      const m = ns.links.get(c.master);
      if (m?.kind !== 'bridge') throw new DatapathError('EINVAL', `${c.master} is not a bridge`);
    }
    if (c.hairpin !== undefined && !(c.master ?? l.master)) {
      throw new DatapathError('EINVAL', `link ${name} is not a bridge port`);
    }
    if (c.name !== undefined && c.name !== name && ns.links.has(c.name)) {
      throw new DatapathError('EEXIST', `link ${c.name} already exists`);
    }
    const target = c.netns !== undefined ? this.ns(c.netns) : ns;
    const newName = c.name ?? name;
    if (target !== ns && target.links.has(newName)) throw new DatapathError('EEXIST', `link ${newName} already exists`);
    if (c.up !== undefined) l.up = c.up;
    if (c.mtu !== undefined) l.mtu = c.mtu;
    if (c.mac !== undefined) l.mac = c.mac;
    if (c.master !== undefined) l.master = c.master ?? undefined;
    if (c.promisc !== undefined) l.promisc = c.promisc;
    if (c.hairpin !== undefined) l.hairpin = c.hairpin;
    if (newName !== name || target !== ns) {
      this.removeLink(ns, name);
      l.name = newName;
      if (target !== ns) {
        l.up = false;
        l.master = undefined;
      }
      target.links.set(newName, l);
    }
  }

  async delLink(netns: NetnsRef, name: string): Promise<void> {
    const ns = this.ns(netns);
    const l = this.link(ns, name);
    if (l.kind === 'veth') this.dropPeer(l);
    this.removeLink(ns, name);
  }

  async listAddrs(netns: NetnsRef, link?: string): Promise<AddrInfo[]> {
    return this.ns(netns)
      .addrs.filter((a) => link === undefined || a.link === link)
      .map((a) => ({ ...a }));
  }

  async addAddr(netns: NetnsRef, link: string, cidr: string): Promise<void> {
    const ns = this.ns(netns);
    this.link(ns, link);
    if (ns.addrs.some((a) => a.link === link && a.cidr === cidr)) {
      throw new DatapathError('EEXIST', `address ${cidr} already on ${link}`);
    }
    ns.addrs.push({ link, cidr, family: family(cidr), scope: 'global' });
  }

  async delAddr(netns: NetnsRef, link: string, cidr: string): Promise<void> {
    const ns = this.ns(netns);
    const i = ns.addrs.findIndex((a) => a.link === link && a.cidr === cidr);
    if (i < 0) throw new DatapathError('ENOENT', `address ${cidr} not on ${link}`);
    ns.addrs.splice(i, 1);
  }

  async listRoutes(netns: NetnsRef, f?: { table?: number; dev?: string; family?: 4 | 6 }): Promise<RouteInfo[]> {
    return this.ns(netns)
      .routes.filter(
        (r) =>
          (f?.table === undefined || (r.table ?? 254) === f.table) &&
          (f?.dev === undefined || r.dev === f.dev) &&
          (f?.family === undefined || r.family === f.family),
      )
      .map((r) => ({ ...r }));
  }

  private sameRoute(a: RouteSpec, b: RouteSpec): boolean {
    return a.dst === b.dst && (a.table ?? 254) === (b.table ?? 254) && (a.metric ?? 0) === (b.metric ?? 0);
  }

  async addRoute(netns: NetnsRef, route: RouteSpec, opts?: { replace?: boolean }): Promise<void> {
    const ns = this.ns(netns);
    if (route.dev) this.link(ns, route.dev);
    const i = ns.routes.findIndex((r) => this.sameRoute(r, route));
    if (i >= 0 && !opts?.replace) throw new DatapathError('EEXIST', `route ${route.dst} already exists`);
    const info: RouteInfo = { ...route, family: family(route.dst) };
    if (i >= 0) ns.routes[i] = info;
    else ns.routes.push(info);
  }

  async delRoute(netns: NetnsRef, route: RouteSpec): Promise<void> {
    const ns = this.ns(netns);
    const i = ns.routes.findIndex((r) => this.sameRoute(r, route) && (!route.dev || r.dev === route.dev));
    if (i < 0) throw new DatapathError('ENOENT', `route ${route.dst} not found`);
    ns.routes.splice(i, 1);
  }

  async listNeighs(netns: NetnsRef, dev?: string): Promise<NeighSpec[]> {
    return this.ns(netns).neighs.filter((n) => dev === undefined || n.dev === dev);
  }

  async setNeigh(netns: NetnsRef, neigh: NeighSpec): Promise<void> {
    const ns = this.ns(netns);
    this.link(ns, neigh.dev);
    ns.neighs = ns.neighs.filter((n) => !(n.ip === neigh.ip && n.dev === neigh.dev));
    ns.neighs.push({ ...neigh });
  }

  async delNeigh(netns: NetnsRef, neigh: Pick<NeighSpec, 'ip' | 'dev'>): Promise<void> {
    const ns = this.ns(netns);
    const before = ns.neighs.length;
    ns.neighs = ns.neighs.filter((n) => !(n.ip === neigh.ip && n.dev === neigh.dev));
    if (ns.neighs.length === before) throw new DatapathError('ENOENT', `neighbour ${neigh.ip} not found`);
  }

  async listFdb(netns: NetnsRef, dev?: string): Promise<FdbSpec[]> {
    return this.ns(netns).fdb.filter((f) => dev === undefined || f.dev === dev);
  }

  async setFdb(netns: NetnsRef, entry: FdbSpec): Promise<void> {
    const ns = this.ns(netns);
    this.link(ns, entry.dev);
    ns.fdb = ns.fdb.filter((f) => !(f.mac === entry.mac && f.dev === entry.dev && f.dst === entry.dst));
    ns.fdb.push({ ...entry });
  }

  async delFdb(netns: NetnsRef, entry: Pick<FdbSpec, 'mac' | 'dev' | 'dst'>): Promise<void> {
    const ns = this.ns(netns);
    const before = ns.fdb.length;
    ns.fdb = ns.fdb.filter((f) => !(f.mac === entry.mac && f.dev === entry.dev && f.dst === entry.dst));
    if (ns.fdb.length === before) throw new DatapathError('ENOENT', `fdb entry ${entry.mac} not found`);
  }

  async getSysctl(netns: NetnsRef, key: string): Promise<string> {
    return this.ns(netns).sysctl.get(key) ?? '0';
  }

  async setSysctl(netns: NetnsRef, key: string, value: string): Promise<void> {
    if (!/^[a-z0-9_.-]+$/i.test(key)) throw new DatapathError('EINVAL', `invalid sysctl key ${key}`);
    this.ns(netns).sysctl.set(key, value);
  }

  async addNatRules(netns: NetnsRef, rules: NatRule[]): Promise<void> {
    const ns = this.ns(netns);
    const owners = new Set(rules.map((r) => r.owner));
    ns.nat = ns.nat.filter((r) => !owners.has(r.owner)).concat(rules.map((r) => ({ ...r })));
  }

  async delNatRules(netns: NetnsRef, owner: string): Promise<void> {
    const ns = this.namespaces.get(netns);
    if (ns) ns.nat = ns.nat.filter((r) => r.owner !== owner);
  }

  async listNatRules(netns: NetnsRef, owner?: string): Promise<NatRule[]> {
    return this.ns(netns).nat.filter((r) => owner === undefined || r.owner === owner);
  }
}
