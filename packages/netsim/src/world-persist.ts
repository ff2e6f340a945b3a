// Saving and restoring a whole world as JSON (toJSON / fromJSON), the shape the sim datapath's state
// file holds.
import { formatIpAddr, ipKey, toPrefix } from '@kemu/ip';
import { formatMac, macKeyAt, macKeyToBytes, mustParseIp, mustParseMac, parseCidr } from './addr.js';
import { NetsimError } from './errors.js';
import { registerVxlanPort } from './packet.js';
import type { LinkKind, Listener, NatRuleInfo, NeighState, RouteInfo } from './types.js';
import { insertRoute, routeInfo } from './world-fib.js';
import { type Addr, DEFAULT_AGEING_MS, Link, Ns, type PortFlags, validNsName } from './world-model.js';
import * as nf from './nf-table.js';
import { compileNat } from './world-nat.js';
import type { WorldState } from './world-state.js';

export function toJSON(w: WorldState): WorldJSON {
  const namespaces: NsJSON[] = [];
  for (const ns of w.nss.values()) {
    const links: LinkJSON[] = [...ns.links.values()]
      .sort((a, b) => a.index - b.index)
      .map((l) => {
        const j: LinkJSON = {
          index: l.index,
          name: l.name,
          kind: l.kind,
          mac: formatMac(l.mac),
          mtu: l.mtu,
          up: l.up,
        };
        if (l.master) j.master = l.master.name;
        if (l.port) j.port = { ...l.port };
        if (l.peer) j.peer = { ns: l.peer.ns.name, name: l.peer.name };
        if (l.proxyArp) j.proxyArp = true;
        if (l.promisc) j.promisc = true;
        if (l.mtuSetByUser) j.mtuSetByUser = true;
        if (l.kind === 'bridge') {
          j.ageingMs = l.ageingMs;
          j.fdb = [...l.fdb!]
            .filter(([, e]) => !e.local)
            .map(([k, e]) => ({
              mac: formatMac(macKeyToBytes(k)),
              port: e.port.name,
              permanent: e.permanent,
              updatedUs: e.updatedUs,
            }));
        }
        if (l.kind === 'vxlan') {
          j.vxlan = {
            vni: l.vni,
            port: l.vxPort,
            local: l.vxLocal ? formatIpAddr(l.vxLocal) : null,
            dev: l.vxDev,
            learning: l.vxLearning,
            ttl: l.vxTtl,
            linkNs: l.vxLinkNs?.name ?? ns.name,
            ageingMs: l.ageingMs,
          };
          j.fdb = [...l.vxFdb!.values()].map((e) => ({
            mac: formatMac(e.mac),
            dsts: e.dsts.map(formatIpAddr),
            permanent: e.permanent,
            updatedUs: e.updatedUs,
          }));
        }
        const neigh = [...l.neigh.values()]
          .filter((n) => n.mac && n.state !== 'INCOMPLETE')
          .map((n) => ({
            ip: formatIpAddr(n.ip),
            mac: formatMac(n.mac!),
            state: n.state,
            updatedUs: n.updatedUs,
          }));
        if (neigh.length) j.neigh = neigh;
        return j;
      });
    const routes: RouteJSON[] = [];
    for (const t of ns.tables.values()) for (const r of [...t.v4, ...t.v6]) routes.push({ ...routeInfo(r) });
    namespaces.push({
      name: ns.name,
      nextIfindex: ns.nextIfindex,
      forwarding: { ipv4: ns.fwd4, ipv6: ns.fwd6 },
      links,
      addresses: ns.addrs.map((a) => ({
        dev: a.dev.name,
        cidr: `${formatIpAddr(a.ip)}/${a.len}`,
        scope: a.scope,
      })),
      routes,
      nat: ns.nat.map((r) => ({ id: r.id, rule: structuredClone(r.rule) })),
      natSeq: ns.natSeq,
      ...(ns.nfIfAny?.ruleCount
        ? {
            iptables: { v4: nf.save(ns.nf, 4), v6: nf.save(ns.nf, 6) },
            nftMaps: Object.fromEntries([...ns.nf.maps].map(([k, m]) => [k, Object.fromEntries(m.elements)])),
          }
        : {}),
      sysctls: Object.fromEntries(ns.sysctlsIfAny ?? []),
      listeners: ns.listeners.map((l) => ({ ...l })),
      nextEphemeral: ns.nextEphemeral,
      echoId: ns.echoId,
    });
  }
  return { version: 1, clockUs: w.clockUs, macSeq: w.macSeq, seed: w.seed, namespaces };
}

export function restore(w: WorldState, j: WorldJSON): void {
  for (const n of j.namespaces) {
    const ns = new Ns(n.name);
    if (!validNsName(n.name) || w.nss.has(n.name)) throw new NetsimError('EINVAL', `namespace ${n.name}`);
    w.nss.set(n.name, ns);
  }
  // Links first (veth pairs span namespaces), then masters, then addresses and routes.
  const byNs = new Map<string, Map<string, LinkJSON>>();
  for (const n of j.namespaces) {
    const ns = w.nss.get(n.name)!;
    const m = new Map<string, LinkJSON>();
    byNs.set(n.name, m);
    for (const lj of n.links) {
      m.set(lj.name, lj);
      const l = new Link(ns, lj.index, lj.name, lj.kind, mustParseMac(lj.mac), lj.mtu);
      l.up = lj.up;
      l.proxyArp = lj.proxyArp ?? false;
      l.promisc = lj.promisc ?? false;
      l.mtuSetByUser = lj.mtuSetByUser ?? false;
      if (lj.kind === 'bridge') {
        l.ports = new Set();
        l.fdb = new Map([[l.macKey, { port: l, updatedUs: 0, permanent: true, local: true }]]);
        l.ageingMs = lj.ageingMs ?? DEFAULT_AGEING_MS;
      }
      if (lj.kind === 'vxlan') {
        const v = lj.vxlan!;
        l.vni = v.vni;
        l.vxPort = v.port;
        l.vxLocal = v.local ? mustParseIp(v.local) : null;
        l.vxDev = v.dev;
        l.vxLearning = v.learning;
        l.vxTtl = v.ttl;
        l.ageingMs = v.ageingMs ?? DEFAULT_AGEING_MS;
        l.vxFdb = new Map();
        for (const e of lj.fdb ?? []) {
          const mac = mustParseMac(e.mac);
          l.vxFdb.set(macKeyAt(mac, 0), {
            mac,
            dsts: (e.dsts ?? []).map((d) => mustParseIp(d)),
            permanent: e.permanent,
            updatedUs: e.updatedUs,
          });
        }
        registerVxlanPort(v.port);
      }
      for (const nj of lj.neigh ?? []) {
        const ip = mustParseIp(nj.ip);
        l.neigh.set(ipKey(ip), {
          ip,
          key: ipKey(ip),
          mac: mustParseMac(nj.mac),
          state: nj.state,
          updatedUs: nj.updatedUs,
          queue: [],
        });
      }
      if (ns.links.has(l.name)) throw new NetsimError('EEXIST', `link ${l.name} in ${ns.name}`);
      ns.links.set(l.name, l);
    }
    ns.nextIfindex = n.nextIfindex;
  }
  for (const n of j.namespaces) {
    const ns = w.nss.get(n.name)!;
    for (const lj of n.links) {
      const l = ns.links.get(lj.name)!;
      if (lj.peer) {
        const pns = w.nss.get(lj.peer.ns);
        const p = pns?.links.get(lj.peer.name);
        if (!p || p.kind !== 'veth')
          throw new NetsimError('ENODEV', `veth peer ${lj.peer.ns}/${lj.peer.name} of ${n.name}/${lj.name}`);
        l.peer = p;
      }
      if (lj.master) {
        const br = ns.links.get(lj.master);
        if (!br || br.kind !== 'bridge') throw new NetsimError('ENODEV', `master ${lj.master} of ${lj.name}`);
        l.master = br;
        l.port = {
          hairpin: false,
          learning: true,
          flood: true,
          mcastFlood: true,
          isolated: false,
          ...lj.port,
        };
        br.ports!.add(l);
        br.fdb!.set(l.macKey, { port: l, updatedUs: 0, permanent: true, local: true });
      }
      if (lj.kind === 'vxlan') {
        const lns = w.nss.get(lj.vxlan!.linkNs) ?? ns;
        l.vxLinkNs = lns;
        const socks = lns.vxSock.get(l.vxPort) ?? [];
        socks.push(l);
        lns.vxSock.set(l.vxPort, socks);
      }
    }
    for (const lj of n.links) {
      if (lj.kind !== 'bridge') continue;
      const br = ns.links.get(lj.name)!;
      for (const e of lj.fdb ?? []) {
        const port = ns.links.get(e.port!);
        if (!port) throw new NetsimError('ENODEV', `fdb port ${e.port}`);
        br.fdb!.set(macKeyAt(mustParseMac(e.mac), 0), {
          port,
          updatedUs: e.updatedUs,
          permanent: e.permanent,
          local: false,
        });
      }
    }
    ns.fwd4 = !!n.forwarding?.ipv4;
    ns.fwd6 = !!n.forwarding?.ipv6;
    for (const a of n.addresses) {
      const l = ns.links.get(a.dev);
      if (!l) throw new NetsimError('ENODEV', `address device ${a.dev}`);
      const { ip, len } = parseCidr(a.cidr);
      const ad: Addr = { ip, key: ipKey(ip), len, prefix: toPrefix(ip, len), dev: l, scope: a.scope };
      ns.addrs.push(ad);
      if (!ns.local.has(ad.key)) ns.local.set(ad.key, ad);
    }
    for (const r of n.routes) {
      const dev = r.dev === null ? null : (ns.links.get(r.dev) ?? null);
      if (r.dev !== null && !dev) throw new NetsimError('ENODEV', `route device ${r.dev}`);
      const via = r.via === null ? null : mustParseIp(r.via);
      const { ip, len } = parseCidr(r.dst, r.family);
      insertRoute(ns, {
        family: r.family,
        dst: toPrefix(ip, len),
        type: r.type,
        dev,
        via,
        onlink: r.onlink,
        src: r.src === null ? null : mustParseIp(r.src),
        metric: r.metric,
        table: r.table,
        proto: r.proto,
        scope: r.scope,
        net4: 0,
        mask4: 0,
      });
    }
    for (const rj of n.nat ?? []) {
      const c = compileNat(rj.rule);
      c.id = rj.id;
      ns.nat.push(c);
    }
    ns.natSeq = n.natSeq ?? ns.nat.length;
    for (const [name, elements] of Object.entries(n.nftMaps ?? {})) nf.setMap(ns.nf, name, elements);
    if (n.iptables?.v4) nf.restore(ns.nf, 4, n.iptables.v4);
    if (n.iptables?.v6) nf.restore(ns.nf, 6, n.iptables.v6);
    ns.sysctls.clear();
    for (const [k, v] of Object.entries(n.sysctls ?? {})) ns.sysctls.set(k, v);
    ns.listeners = (n.listeners ?? []).map((l) => ({ ...l }));
    ns.nextEphemeral = n.nextEphemeral ?? 32768;
    ns.echoId = n.echoId ?? 0;
  }
  w.clockUs = j.clockUs ?? 0;
  w.macSeq = j.macSeq ?? 0;
}

// ---------------------------------------------------------------- JSON shapes

export interface LinkJSON {
  index: number;
  name: string;
  kind: LinkKind;
  mac: string;
  mtu: number;
  up: boolean;
  master?: string;
  port?: PortFlags;
  peer?: { ns: string; name: string };
  proxyArp?: boolean;
  promisc?: boolean;
  mtuSetByUser?: boolean;
  ageingMs?: number;
  vxlan?: {
    vni: number;
    port: number;
    local: string | null;
    dev: string | null;
    learning: boolean;
    ttl: number;
    linkNs: string;
    ageingMs?: number;
  };
  fdb?: { mac: string; port?: string; dsts?: string[]; permanent: boolean; updatedUs: number }[];
  neigh?: { ip: string; mac: string; state: NeighState; updatedUs: number }[];
}

export type RouteJSON = RouteInfo;

export interface NsJSON {
  name: string;
  nextIfindex: number;
  forwarding: { ipv4: boolean; ipv6: boolean };
  links: LinkJSON[];
  addresses: { dev: string; cidr: string; scope: 'global' | 'link' | 'host' }[];
  routes: RouteJSON[];
  nat: NatRuleInfo[];
  natSeq: number;
  /** iptables-save text per family, when the namespace has rules. */
  iptables?: { v4: string; v6: string };
  nftMaps?: Record<string, Record<string, string>>;
  sysctls?: Record<string, string>;
  listeners: Listener[];
  nextEphemeral: number;
  echoId: number;
}

export interface WorldJSON {
  version: 1;
  clockUs: number;
  macSeq: number;
  seed: number;
  namespaces: NsJSON[];
}
