// The Linux bridge (net/bridge): ports, MTU following the smallest port, FDB learning, ageing, flooding,
// hairpin and isolation, and the `bridge fdb` commands (which also reach a VXLAN device's own FDB).
import { bytesEqual, formatIpAddr } from '@kemu/ip';
import { formatMac, isMulticastMac, macKeyAt, macKeyToBytes, mustParseIp, mustParseMac } from './addr.js';
import { NetsimError } from './errors.js';
import type { FdbInfo, FdbSpec } from './types.js';
import { capture, rec } from './world-capture.js';
import { devXmit, netifReceive, tick } from './world-dev.js';
import type { FdbEntry, Link } from './world-model.js';
import { nfBridged } from './world-netfilter.js';
import { linkByName, nsByName, type WorldState } from './world-state.js';

export function release(port: Link): void {
  const br = port.master;
  if (!br) return;
  br.ports!.delete(port);
  for (const [k, e] of br.fdb!) if (e.port === port) br.fdb!.delete(k);
  port.master = null;
  port.port = null;
  bridgeMtuAdjust(br);
}

export function bridgeMtuAdjust(br: Link): void {
  if (br.mtuSetByUser || br.ports!.size === 0) return;
  let min = Number.POSITIVE_INFINITY;
  for (const p of br.ports!) min = Math.min(min, p.mtu);
  br.mtu = min;
}

export function addFdb(
  w: WorldState,
  nsName: string,
  dev: string,
  spec: FdbSpec,
  mode: 'add' | 'replace' | 'append' = 'add',
): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, dev);
  const mac = mustParseMac(spec.mac);
  const mk = macKeyAt(mac, 0);
  const groupMac = mk === 0 || isMulticastMac(mac);
  if (l.kind === 'vxlan') {
    if (spec.dst === undefined) throw new NetsimError('EINVAL', 'vxlan fdb entry needs a remote dst');
    const dst = mustParseIp(spec.dst, 'remote');
    const cur = l.vxFdb!.get(mk);
    const same = cur?.dsts.some(
      (d) => d.family === dst.family && bytesEqual(d.bytes, 0, dst.bytes, 0, d.bytes.length),
    );
    if (mode === 'append' && !groupMac)
      throw new NetsimError('EINVAL', 'append is only for all-zeros or multicast entries');
    // The kernel never lets "replace" create or change a flood (all-zeros / multicast) entry.
    if (mode === 'replace' && groupMac)
      throw new NetsimError('ENOTSUP', 'Cannot replace an existing non-unicast fdb entry');
    if (cur) {
      if (mode === 'add' || (mode === 'append' && same))
        throw new NetsimError('EEXIST', `fdb ${spec.mac} dev ${dev}`);
      if (mode === 'append') {
        cur.dsts.push(dst);
        return;
      }
    }
    l.vxFdb!.set(mk, { mac, dsts: [dst], permanent: spec.permanent ?? true, updatedUs: w.clockUs });
    return;
  }
  const br = l.kind === 'bridge' ? l : l.master;
  if (!br) throw new NetsimError('EINVAL', `${dev} is not a bridge port`);
  if (mode === 'append') throw new NetsimError('EINVAL', 'append is only for VXLAN devices');
  const cur = br.fdb!.get(mk);
  if (cur && mode === 'add') throw new NetsimError('EEXIST', `fdb ${spec.mac} dev ${dev}`);
  br.fdb!.set(mk, { port: l, updatedUs: w.clockUs, permanent: spec.permanent ?? true, local: l === br });
}

export function deleteFdb(w: WorldState, nsName: string, dev: string, macStr: string, dst?: string): void {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, dev);
  const mk = macKeyAt(mustParseMac(macStr), 0);
  if (l.kind === 'vxlan') {
    const cur = l.vxFdb!.get(mk);
    if (!cur) throw new NetsimError('ENOENT', `fdb ${macStr} dev ${dev}`);
    if (dst !== undefined) {
      const d = mustParseIp(dst, 'remote');
      const rest = cur.dsts.filter(
        (x) => !(x.family === d.family && bytesEqual(x.bytes, 0, d.bytes, 0, d.bytes.length)),
      );
      if (rest.length === cur.dsts.length)
        throw new NetsimError('ENOENT', `fdb ${macStr} dst ${dst} dev ${dev}`);
      if (rest.length) cur.dsts = rest;
      else l.vxFdb!.delete(mk);
    } else l.vxFdb!.delete(mk);
    return;
  }
  const br = l.kind === 'bridge' ? l : l.master;
  const cur = br ? br.fdb!.get(mk) : undefined;
  if (!br || !cur || (cur.port !== l && l !== br))
    throw new NetsimError('ENOENT', `fdb ${macStr} dev ${dev}`);
  br.fdb!.delete(mk);
}

export function fdb(w: WorldState, nsName: string, dev: string): FdbInfo[] {
  const ns = nsByName(w, nsName);
  const l = linkByName(ns, dev);
  const out: FdbInfo[] = [];
  if (l.vxFdb) {
    for (const e of l.vxFdb.values()) {
      for (const d of e.dsts) {
        out.push({
          mac: formatMac(e.mac),
          dev: l.name,
          dst: formatIpAddr(d),
          master: null,
          permanent: e.permanent,
          local: false,
          ageMs: e.permanent ? null : Math.floor((w.clockUs - e.updatedUs) / 1000),
        });
      }
    }
  }
  const br = l.kind === 'bridge' ? l : l.master;
  if (br) {
    for (const [k, e] of br.fdb!) {
      if (l !== br && e.port !== l) continue;
      if (!e.permanent && w.clockUs - e.updatedUs > br.ageingMs * 1000) continue;
      out.push({
        mac: formatMac(macKeyToBytes(k)),
        dev: e.port.name,
        dst: null,
        master: e.port === br ? null : br.name,
        permanent: e.permanent,
        local: e.local,
        ageMs: e.permanent ? null : Math.floor((w.clockUs - e.updatedUs) / 1000),
      });
    }
  }
  return out;
}

export function fdbLookup(w: WorldState, br: Link, mk: number): FdbEntry | null {
  const e = br.fdb!.get(mk);
  if (!e) return null;
  if (!e.permanent && w.clockUs - e.updatedUs > br.ageingMs * 1000) {
    br.fdb!.delete(mk);
    if (w.tr) rec(w, 'fdb', br.ns, br, `entry ${formatMac(macKeyToBytes(mk))} aged out`);
    return null;
  }
  return e;
}

export function bridgeInput(w: WorldState, br: Link, port: Link, frame: Buffer): void {
  if (!br.up) {
    rec(w, 'drop', br.ns, port, 'bridge input', frame, undefined, `bridge ${br.name} is down`);
    return;
  }
  if (port.port!.learning && !isMulticastMac(frame, 6)) {
    const sk = macKeyAt(frame, 6);
    const cur = br.fdb!.get(sk);
    if (!cur || (!cur.permanent && cur.port !== port)) {
      br.fdb!.set(sk, { port, updatedUs: w.clockUs, permanent: false, local: false });
      if (w.tr) rec(w, 'fdb', br.ns, br, `learn ${formatMac(frame, 6)} on ${port.name}`);
    } else if (!cur.permanent) cur.updatedUs = w.clockUs;
  }
  bridgeForward(w, br, port, frame);
}

/** Forwarding decision for a frame entering the bridge from `ingress` (null: sent by the bridge device). */
export function bridgeForward(w: WorldState, br: Link, ingress: Link | null, frame: Buffer): void {
  const mcast = isMulticastMac(frame, 0);
  if (!mcast) {
    const e = fdbLookup(w, br, macKeyAt(frame, 0));
    if (e) {
      if (e.local) {
        if (ingress === null) {
          rec(w, 'drop', br.ns, br, 'bridge transmit', frame, undefined, 'destination is the bridge itself');
          return;
        }
        if (w.tr) rec(w, 'fdb', br.ns, br, `local ${formatMac(frame, 0)} -> up to ${br.name}`);
        bridgeLocalIn(w, br, frame);
        return;
      }
      if (e.port === ingress && !ingress.port!.hairpin) {
        rec(
          w,
          'drop',
          br.ns,
          ingress,
          'bridge forward',
          frame,
          undefined,
          `destination is behind the ingress port and hairpin is off`,
        );
        return;
      }
      if (ingress && ingress.port!.isolated && e.port.port!.isolated) {
        rec(w, 'drop', br.ns, ingress, 'bridge forward', frame, undefined, 'both ports are isolated');
        return;
      }
      if (w.tr) rec(w, 'fdb', br.ns, br, `hit ${formatMac(frame, 0)} -> port ${e.port.name}`);
      const f = ingress ? nfBridged(w, br, frame) : frame;
      if (f) devXmit(w, e.port, f);
      return;
    }
  }
  // Flood: broadcast/multicast, or unknown unicast.
  const out: Link[] = [];
  for (const p of br.ports!) {
    if (p === ingress && !p.port!.hairpin) continue;
    if (mcast ? !p.port!.mcastFlood : !p.port!.flood) continue;
    if (ingress && ingress.port!.isolated && p.port!.isolated) continue;
    out.push(p);
  }
  if (w.tr) {
    rec(
      w,
      'fdb',
      br.ns,
      br,
      `${mcast ? 'flood' : `miss ${formatMac(frame, 0)}, flood`} to ${out.length ? out.map((p) => p.name).join(',') : '(no ports)'}${mcast && ingress ? ` + ${br.name}` : ''}`,
    );
  }
  for (const p of out) devXmit(w, p, frame);
  if (mcast && ingress) bridgeLocalIn(w, br, frame);
}

/** A frame passed up to the bridge device's own stack. */
export function bridgeLocalIn(w: WorldState, br: Link, frame: Buffer): void {
  tick(w);
  br.stats.rxPackets++;
  br.stats.rxBytes += frame.length;
  capture(w, br, frame, 'rx');
  if (w.tr) rec(w, 'rx', br.ns, br, 'bridge receive', frame);
  netifReceive(w, br, frame);
}

/** Ages out a bridge's learned entries (br_fdb_cleanup); other devices have no bridge FDB. */
export function fdbExpire(w: WorldState, l: Link): void {
  if (!l.fdb) return;
  for (const [k, e] of l.fdb) {
    if (!e.permanent && w.clockUs - e.updatedUs > l.ageingMs * 1000) l.fdb.delete(k);
  }
}
