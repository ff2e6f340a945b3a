// Neighbour resolution: the ARP and NDP exchanges, the per-device neighbour table with its states, the
// packets queued while a resolution is pending and `ip neigh` (net/core/neighbour.c, net/ipv4/arp.c,
// net/ipv6/ndisc.c).
import { bytesEqual, type Family, formatIpAddr, formatIpBytes, type IpAddr, ipKey, ipKeyAt, prefixContains } from '@kemu/ip';
import { BROADCAST_MAC, formatMac, multicastMacForIPv6, mustParseIp, mustParseMac, solicitedNodeAddr } from './addr.js';
import { NetsimError } from './errors.js';
import {
  arpPacket,
  ETH_P_ARP,
  ETH_P_IP,
  ETH_P_IPV6,
  ethFrame,
  IPPROTO_ICMPV6,
  ipv6Packet,
  ndpMessage,
} from './packet.js';
import type { NeighInfo, NeighSpec, NeighState } from './types.js';
import { rec } from './world-capture.js';
import { devXmit, run } from './world-dev.js';
import { resolveRoute } from './world-fib.js';
import type { Link, NeighEntry, Ns } from './world-model.js';
import { linkByName, nsByName, type WorldState } from './world-state.js';

/** Packets queued on an unresolved neighbour (the kernel's unres_qlen default). */
const UNRES_QLEN = 101;
/** Neighbour timers: REACHABLE turns STALE, and STALE/FAILED entries are collected. */
const NEIGH_REACHABLE_MS = 30_000;
const NEIGH_GC_STALE_MS = 60_000;

export function addNeighbour(w: WorldState, nsName: string, spec: NeighSpec, replace = false): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, spec.dev);
  const ip = mustParseIp(spec.ip, 'neighbour address');
  const mac = mustParseMac(spec.mac);
  const key = ipKey(ip);
  const cur = l.neigh.get(key);
  if (cur && !replace && cur.state !== 'INCOMPLETE' && cur.state !== 'FAILED')
    throw new NetsimError('EEXIST', `neighbour ${spec.ip} dev ${spec.dev}`);
  const state = spec.state ?? 'PERMANENT';
  const queue = cur?.queue ?? [];
  const e: NeighEntry = { ip, key, mac, state, updatedUs: w.clockUs, queue: [] };
  l.neigh.set(key, e);
  if (queue.length) {
    for (const q of queue) sendResolved(w, l, e, q.p, q.family);
    run(w);
  }
}

export function deleteNeighbour(w: WorldState, nsName: string, dev: string, ipStr: string): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, dev);
  const ip = mustParseIp(ipStr, 'neighbour address');
  if (!l.neigh.delete(ipKey(ip))) throw new NetsimError('ENOENT', `neighbour ${ipStr} dev ${dev}`);
}

export function flushNeighbours(w: WorldState, nsName: string, dev?: string, all = false): void {
  const ns = nsByName(w, nsName);
  const devs = dev === undefined ? [...ns.links.values()] : [linkByName(ns, dev)];
  for (const l of devs) for (const [k, n] of l.neigh) if (all || n.state !== 'PERMANENT') l.neigh.delete(k);
}

export function neighbours(w: WorldState, nsName: string, dev?: string): NeighInfo[] {
  const ns = nsByName(w, nsName);
  const devs = dev === undefined ? [...ns.links.values()] : [linkByName(ns, dev)];
  const out: NeighInfo[] = [];
  for (const l of devs) {
    for (const n of l.neigh.values()) {
      out.push({
        dev: l.name,
        ip: formatIpAddr(n.ip),
        family: n.ip.family,
        mac: n.mac ? formatMac(n.mac) : null,
        state: n.state,
      });
    }
  }
  return out;
}

export function arpRcv(w: WorldState, l: Link, frame: Buffer): void {
  const ns = l.ns;
  if (
    frame.length < 42 ||
    frame[14] !== 0 ||
    frame[15] !== 1 ||
    frame[16] !== 0x08 ||
    frame[17] !== 0x00 ||
    frame[18] !== 6 ||
    frame[19] !== 4
  ) {
    rec(w, 'drop', ns, l, 'arp', frame, undefined, 'malformed ARP');
    return;
  }
  const op = (frame[20]! << 8) | frame[21]!;
  const spaKey = ipKeyAt(frame, 28, 4);
  const tpaKey = ipKeyAt(frame, 38, 4);
  if (op === 1) {
    let answer = false;
    let why = '';
    const a = ns.local.get(tpaKey);
    if (a) {
      answer = true;
      if (w.tr) why = `${formatIpBytes(frame, 38, 4)} is local`;
    } else if (l.proxyArp) {
      const r = resolveRoute(w, ns, frame, 38, 4);
      if (r && r.type === 'unicast' && r.dev !== l) {
        answer = true;
        why = `proxy ARP: route via ${r.dev?.name}`;
      }
    }
    if (!answer) {
      if (w.tr) rec(w, 'local', ns, l, `ARP request for ${formatIpBytes(frame, 38, 4)} ignored (not ours)`);
      return;
    }
    const sha = frame.subarray(22, 28);
    // The requester's mapping is learned on the way (as STALE, like the kernel).
    if (spaKey !== 0)
      learnNeigh(
        w,
        l,
        { family: 4, bytes: Uint8Array.from(frame.subarray(28, 32)) },
        Uint8Array.from(sha),
        'STALE',
        false,
      );
    const reply = arpPacket(2, l.mac, frame.subarray(38, 42), sha, frame.subarray(28, 32));
    const out = ethFrame(sha, l.mac, ETH_P_ARP, reply);
    if (w.tr) rec(w, 'reply', ns, l, `ARP reply (${why})`, out);
    devXmit(w, l, out);
    return;
  }
  if (op === 2) {
    const e = l.neigh.get(spaKey);
    if (!e) {
      if (w.tr) rec(w, 'local', ns, l, 'unsolicited ARP reply ignored (arp_accept=0)');
      return;
    }
    learnNeigh(w, l, e.ip, Uint8Array.from(frame.subarray(22, 28)), 'REACHABLE', true);
    return;
  }
  rec(w, 'drop', ns, l, 'arp', frame, undefined, `ARP op ${op}`);
}

export function learnNeigh(
  w: WorldState,
  l: Link,
  ip: IpAddr,
  mac: Uint8Array,
  state: NeighState,
  confirm: boolean,
): void {
  const key = ipKey(ip);
  let e = l.neigh.get(key);
  if (e && (e.state === 'PERMANENT' || e.state === 'NOARP')) return;
  if (!e) {
    e = { ip, key, mac, state, updatedUs: w.clockUs, queue: [] };
    l.neigh.set(key, e);
  } else {
    if (!confirm && e.state === 'REACHABLE' && e.mac && bytesEqual(e.mac, 0, mac, 0, 6)) return;
    e.mac = mac;
    e.state = state;
    e.updatedUs = w.clockUs;
  }
  if (w.tr) rec(w, 'neigh', l.ns, l, `${formatIpAddr(ip)} lladdr ${formatMac(mac)} ${state}`);
  if (e.queue.length) {
    const q = e.queue;
    e.queue = [];
    for (const p of q) sendResolved(w, l, e, p.p, p.family);
  }
}

export function ndiscRcv(
  w: WorldState,
  ns: Ns,
  l: Link,
  p: Buffer,
  l4: number,
  end: number,
  type: number,
): void {
  if (p[7] !== 255 || end - l4 < 24) {
    rec(w, 'drop', ns, l, 'ndisc', p, 6, 'invalid neighbour discovery message');
    return;
  }
  const target = Uint8Array.from(p.subarray(l4 + 8, l4 + 24));
  let ll: Uint8Array | null = null;
  for (let o = l4 + 24; o + 8 <= end; ) {
    const olen = p[o + 1]! * 8;
    if (olen === 0) break;
    if ((p[o] === 1 && type === 135) || (p[o] === 2 && type === 136))
      ll = Uint8Array.from(p.subarray(o + 2, o + 8));
    o += olen;
  }
  if (type === 135) {
    const a = ns.local.get(ipKeyAt(target, 0, 6));
    if (!a) {
      if (w.tr)
        rec(w, 'local', ns, l, `neighbor solicitation for ${formatIpBytes(target, 0, 6)} ignored (not ours)`);
      return;
    }
    const src: IpAddr = { family: 6, bytes: Uint8Array.from(p.subarray(8, 24)) };
    const unspecified = src.bytes.every((x) => x === 0);
    if (ll && !unspecified) learnNeigh(w, l, src, ll, 'STALE', false);
    const dst = unspecified ? Uint8Array.of(0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) : src.bytes;
    const na = ipv6Packet(
      { src: target, dst, nextHeader: IPPROTO_ICMPV6, hopLimit: 255 },
      ndpMessage(136, target, l.mac, { solicited: !unspecified, override: true, router: ns.fwd6 }),
    );
    const dmac = unspecified ? multicastMacForIPv6(dst) : (ll ?? BROADCAST_MAC);
    const f = ethFrame(dmac, l.mac, ETH_P_IPV6, na);
    if (w.tr) rec(w, 'reply', ns, l, 'neighbor advertisement', f);
    devXmit(w, l, f);
    return;
  }
  const e = l.neigh.get(ipKeyAt(target, 0, 6));
  if (!e || !ll) return;
  learnNeigh(w, l, e.ip, ll, 'REACHABLE', true);
}

/** Hands a routed packet to the next hop's link-layer address, resolving it first (neigh_output). */
export function neighOutput(
  w: WorldState,
  dev: Link,
  nh: Uint8Array,
  nhOff: number,
  p: Buffer,
  family: Family,
  forwarded: boolean,
): void {
  // IPv6 multicast maps straight to a 33:33 MAC; no resolution.
  if (family === 6 && nh[nhOff] === 0xff) {
    devXmit(w, dev, ethFrame(multicastMacForIPv6(nh, nhOff), dev.mac, ETH_P_IPV6, p));
    return;
  }
  if (family === 4 && isBroadcastOn(dev, nh, nhOff)) {
    devXmit(w, dev, ethFrame(BROADCAST_MAC, dev.mac, ETH_P_IP, p));
    return;
  }
  const key = ipKeyAt(nh, nhOff, family);
  let e = dev.neigh.get(key);
  if (e && e.mac && e.state !== 'INCOMPLETE' && e.state !== 'FAILED') {
    sendResolved(w, dev, e, p, family);
    return;
  }
  if (e && e.state === 'INCOMPLETE') {
    if (e.queue.length < UNRES_QLEN) e.queue.push({ p, family, forwarded });
    return;
  }
  const ip: IpAddr = {
    family,
    bytes: Uint8Array.from(nh.subarray(nhOff, nhOff + (family === 4 ? 4 : 16))),
  };
  e = {
    ip,
    key,
    mac: null,
    state: 'INCOMPLETE',
    updatedUs: w.clockUs,
    queue: [{ p, family, forwarded }],
  };
  dev.neigh.set(key, e);
  w.pendingNeigh.push({ dev, entry: e });
  solicit(w, dev, ip, p, family);
}

export function isBroadcastOn(dev: Link, b: Uint8Array, off: number): boolean {
  if (b[off] === 255 && b[off + 1] === 255 && b[off + 2] === 255 && b[off + 3] === 255) return true;
  for (const a of dev.ns.addrs) {
    if (a.dev !== dev || a.ip.family !== 4 || a.len >= 31) continue;
    const host = (0xffffffff >>> a.len) >>> 0;
    if (((ipKeyAt(b, off, 4) as number) & host) >>> 0 === host && prefixContains(a.prefix, b, off))
      return true;
  }
  return false;
}

export function sendResolved(w: WorldState, dev: Link, e: NeighEntry, p: Buffer, family: Family): void {
  const f = ethFrame(e.mac!, dev.mac, family === 4 ? ETH_P_IP : ETH_P_IPV6, p);
  devXmit(w, dev, f);
}

/** ARP request / neighbour solicitation for `ip` on `dev`; the source comes from the waiting packet. */
export function solicit(w: WorldState, dev: Link, ip: IpAddr, p: Buffer, family: Family): void {
  const ns = dev.ns;
  if (family === 4) {
    // Announce the packet's source if it is ours on this device, else the device's primary address.
    let spa: Uint8Array | null = null;
    const sk = ipKeyAt(p, 12, 4);
    const own = ns.local.get(sk);
    if (own && own.dev === dev) spa = own.ip.bytes;
    if (!spa) spa = ns.addrs.find((a) => a.dev === dev && a.ip.family === 4)?.ip.bytes ?? null;
    if (!spa && own) spa = own.ip.bytes;
    if (!spa) spa = new Uint8Array(4);
    const req = arpPacket(1, dev.mac, spa, new Uint8Array(6), ip.bytes);
    const f = ethFrame(BROADCAST_MAC, dev.mac, ETH_P_ARP, req);
    if (w.tr) rec(w, 'neigh', ns, dev, `resolve ${formatIpAddr(ip)}: ARP who-has`, f);
    devXmit(w, dev, f);
    return;
  }
  let src: Uint8Array | null = null;
  const own = ns.local.get(ipKeyAt(p, 8, 6));
  if (own && own.dev === dev) src = own.ip.bytes;
  if (!src)
    src = ns.addrs.find((a) => a.dev === dev && a.ip.family === 6 && a.scope === 'link')?.ip.bytes ?? null;
  if (!src) src = ns.addrs.find((a) => a.dev === dev && a.ip.family === 6)?.ip.bytes ?? null;
  if (!src) {
    rec(w, 'drop', ns, dev, 'ndisc', p, family, 'no IPv6 address on the device to solicit from');
    return;
  }
  const sn = solicitedNodeAddr(ip.bytes);
  const pkt = ipv6Packet(
    { src, dst: sn, nextHeader: IPPROTO_ICMPV6, hopLimit: 255 },
    ndpMessage(135, ip.bytes, dev.mac),
  );
  const f = ethFrame(multicastMacForIPv6(sn), dev.mac, ETH_P_IPV6, pkt);
  if (w.tr) rec(w, 'neigh', ns, dev, `resolve ${formatIpAddr(ip)}: neighbor solicitation`, f);
  devXmit(w, dev, f);
}

/** A resolution nobody answered: the entry fails and the packets that waited on it are dropped. */
export function neighFailed(w: WorldState, dev: Link, entry: NeighEntry): void {
  if (entry.state !== 'INCOMPLETE') return;
  entry.state = 'FAILED';
  entry.updatedUs = w.clockUs;
  const q = entry.queue;
  entry.queue = [];
  for (const p of q) {
    rec(
      w,
      'drop',
      dev.ns,
      dev,
      `neighbour ${formatIpAddr(entry.ip)} unresolved`,
      p.p,
      p.family,
      'no ARP/NDP reply',
    );
    if (p.forwarded) w.stack.icmpErrorTo(w, dev.ns, p.p, p.family, 'host-unreachable');
    else
      w.stack.failLocal(
        w,
        dev.ns,
        p.p,
        p.family,
        formatIpAddr(firstSource(dev.ns, p.family) ?? entry.ip),
        'Destination Host Unreachable',
      );
  }
}

export function firstSource(ns: Ns, family: Family): IpAddr | null {
  return ns.addrs.find((a) => a.ip.family === family && a.scope !== 'host')?.ip ?? null;
}

/** The neighbour timers: REACHABLE turns STALE, and STALE/FAILED entries are collected. */
export function neighExpire(w: WorldState, l: Link): void {
  for (const [k, n] of l.neigh) {
    const age = w.clockUs - n.updatedUs;
    if (n.state === 'REACHABLE' && age > NEIGH_REACHABLE_MS * 1000) n.state = 'STALE';
    if ((n.state === 'STALE' || n.state === 'FAILED') && age > NEIGH_GC_STALE_MS * 1000) l.neigh.delete(k);
  }
}
