// VXLAN (RFC 7348): encapsulation towards the remote VTEPs the device's FDB names, decapsulation of
// datagrams arriving on its UDP port, and learning remote MACs from them (drivers/net/vxlan).
import { bytesEqual, type Family, formatIpAddr, formatIpBytes, type IpAddr } from '@kemu/ip';
import { formatMac, isMulticastMac, macKeyAt } from './addr.js';
import { IPPROTO_UDP, ipSrcOffset, ipv4Packet, ipv6Packet, udpDatagram, vxlanHeader } from './packet.js';
import { rec } from './world-capture.js';
import { enqueue } from './world-dev.js';
import { resolveRoute, selectSource } from './world-fib.js';
import { ipRouteOutput } from './world-ip.js';
import type { Link, Ns } from './world-model.js';
import type { WorldState } from './world-state.js';

export function vxlanXmit(w: WorldState, l: Link, frame: Buffer): void {
  const fdb = l.vxFdb!;
  let dsts: IpAddr[] | undefined;
  let how: string;
  if (!isMulticastMac(frame, 0)) {
    const e = fdb.get(macKeyAt(frame, 0));
    if (e && (e.permanent || w.clockUs - e.updatedUs <= l.ageingMs * 1000)) {
      dsts = e.dsts;
      how = `fdb hit ${formatMac(frame, 0)} -> ${e.dsts.map(formatIpAddr).join(',')}`;
    } else {
      dsts = fdb.get(0)?.dsts;
      how = `fdb miss ${formatMac(frame, 0)}, default -> ${dsts?.map(formatIpAddr).join(',') ?? '(none)'}`;
    }
  } else {
    dsts = fdb.get(0)?.dsts;
    how = `flood -> ${dsts?.map(formatIpAddr).join(',') ?? '(none)'}`;
  }
  if (!dsts || dsts.length === 0) {
    rec(
      w,
      'drop',
      l.ns,
      l,
      'vxlan transmit',
      frame,
      undefined,
      `no fdb entry for ${formatMac(frame, 0)} and no default destination`,
    );
    return;
  }
  if (w.tr) rec(w, 'fdb', l.ns, l, how);
  const ns = l.vxLinkNs ?? l.ns;
  // Entropy for ECMP in the underlay: the source port hashes the inner flow.
  let h = 2166136261;
  for (let i = 0; i < Math.min(frame.length, 14 + 20); i++) h = Math.imul(h ^ frame[i]!, 16777619);
  const sport = 32768 + ((h >>> 0) % (61000 - 32768));
  const payload = Buffer.concat([vxlanHeader(l.vni), frame]);
  for (const dst of dsts) {
    const r = resolveRoute(w, ns, dst.bytes, 0, dst.family);
    if (!r || (r.type !== 'unicast' && r.type !== 'local')) {
      rec(w, 'drop', ns, l, `vxlan encap to ${formatIpAddr(dst)}`, frame, undefined, 'no route to remote VTEP');
      continue;
    }
    const src = l.vxLocal ?? selectSource(ns, r, dst.bytes, 0, dst.family);
    if (!src) {
      rec(w, 'drop', ns, l, 'vxlan encap', frame, undefined, 'no local address for the outer header');
      continue;
    }
    const udp = udpDatagram(sport, l.vxPort, payload);
    let outer: Buffer;
    if (dst.family === 4) {
      outer = ipv4Packet(
        { src: src.bytes, dst: dst.bytes, proto: IPPROTO_UDP, ttl: l.vxTtl, df: false },
        udp,
      );
    } else {
      outer = ipv6Packet({ src: src.bytes, dst: dst.bytes, nextHeader: IPPROTO_UDP, hopLimit: l.vxTtl }, udp);
    }
    if (w.tr)
      rec(
        w,
        'encap',
        ns,
        l,
        `vxlan vni ${l.vni} ${formatIpAddr(src)}:${sport} -> ${formatIpAddr(dst)}:${l.vxPort}`,
        outer,
        dst.family,
      );
    ipRouteOutput(w, ns, outer, dst.family, r, false, null);
  }
}

/** UDP to a VXLAN port on this namespace: decapsulate and hand the inner frame to the vxlan device. */
export function vxlanRcv(
  w: WorldState,
  ns: Ns,
  devs: Link[],
  p: Buffer,
  family: Family,
  l4: number,
  end: number,
): boolean {
  if (end - l4 < 8 + 8 + 14) {
    rec(w, 'drop', ns, null, 'vxlan receive', p, family, 'runt VXLAN packet');
    return true;
  }
  const v = l4 + 8;
  if ((p[v]! & 0x08) === 0) {
    rec(w, 'drop', ns, null, 'vxlan receive', p, family, 'VXLAN I flag not set');
    return true;
  }
  const vni = (p[v + 4]! << 16) | (p[v + 5]! << 8) | p[v + 6]!;
  const l = devs.find((d) => d.vni === vni);
  if (!l) {
    rec(w, 'drop', ns, null, 'vxlan receive', p, family, `no vxlan device for vni ${vni}`);
    return true;
  }
  const inner = Buffer.from(p.subarray(v + 8, end));
  const srcOff = ipSrcOffset(family);
  if (w.tr) rec(w, 'decap', ns, l, `vxlan vni ${vni} from ${formatIpBytes(p, srcOff, family)}`, inner);
  if (l.vxLearning && !isMulticastMac(inner, 6)) {
    const mk = macKeyAt(inner, 6);
    const cur = l.vxFdb!.get(mk);
    const srcIp: IpAddr = {
      family,
      bytes: Uint8Array.from(p.subarray(srcOff, srcOff + (family === 4 ? 4 : 16))),
    };
    if (!cur || (!cur.permanent && !bytesEqual(cur.dsts[0]!.bytes, 0, srcIp.bytes, 0, srcIp.bytes.length))) {
      l.vxFdb!.set(mk, {
        mac: Uint8Array.from(inner.subarray(6, 12)),
        dsts: [srcIp],
        permanent: false,
        updatedUs: w.clockUs,
      });
      if (w.tr) rec(w, 'fdb', l.ns, l, `learn ${formatMac(inner, 6)} -> ${formatIpAddr(srcIp)}`);
    } else if (!cur.permanent) cur.updatedUs = w.clockUs;
  }
  enqueue(w, l, inner);
  return true;
}

/** Ages out a VXLAN device's learned remotes; other devices have no VXLAN FDB. */
export function vxlanFdbExpire(w: WorldState, l: Link): void {
  if (!l.vxFdb) return;
  for (const [k, e] of l.vxFdb) {
    if (!e.permanent && w.clockUs - e.updatedUs > l.ageingMs * 1000) l.vxFdb.delete(k);
  }
}
