// NAT rules (DNAT, SNAT, MASQUERADE) and the header rewriting they do on conntrack's behalf
// (net/netfilter/nf_nat_*).
import { bytesEqual, type Family, formatIpAddr, formatIpBytes, ipKeyAt, prefixContains, toPrefix } from '@kemu/ip';
import { mustParseIp, parseCidr } from './addr.js';
import { NetsimError } from './errors.js';
import { ipDstOffset, IPPROTO_TCP, IPPROTO_UDP, ipSrcOffset, refreshChecksums } from './packet.js';
import type { NatRule, NatRuleInfo } from './types.js';
import { rec } from './world-capture.js';
import { ctConfirm, tupleKey, tupleOf } from './world-conntrack.js';
import type { CompiledNat, Conn, CtRef, Link, Ns, Tuple } from './world-model.js';
import { nsByName, type WorldState } from './world-state.js';

export function addNatRule(w: WorldState, nsName: string, rule: NatRule): number {
  const ns = nsByName(w, nsName);
  const c = compileNat(rule);
  c.id = ++ns.natSeq;
  ns.nat.push(c);
  return c.id;
}

export function deleteNatRulesByOwner(w: WorldState, nsName: string, owner: string): number {
  const ns = nsByName(w, nsName);
  const before = ns.nat.length;
  ns.nat = ns.nat.filter((r) => r.rule.owner !== owner);
  return before - ns.nat.length;
}

export function deleteNatRule(w: WorldState, nsName: string, id: number): void {
  const ns = nsByName(w, nsName);
  const i = ns.nat.findIndex((r) => r.id === id);
  if (i < 0) throw new NetsimError('ENOENT', `nat rule ${id}`);
  ns.nat.splice(i, 1);
}

export function natRules(w: WorldState, nsName: string): NatRuleInfo[] {
  return nsByName(w, nsName).nat.map((r) => ({ id: r.id, rule: structuredClone(r.rule) }));
}

export function compileNat(rule: NatRule): CompiledNat {
  if (!rule || typeof rule !== 'object') throw new NetsimError('EINVAL', 'nat rule missing');
  const pfx = (s: string) => {
    const { ip, len } = parseCidr(s);
    return toPrefix(ip, len);
  };
  if (rule.type === 'dnat') {
    if (rule.proto !== 'tcp' && rule.proto !== 'udp')
      throw new NetsimError('EINVAL', `dnat proto ${String(rule.proto)}`);
    if (!Number.isInteger(rule.dport) || rule.dport < 1 || rule.dport > 65535)
      throw new NetsimError('EINVAL', `dnat port ${rule.dport}`);
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(rule.to) ??
      /^([^:]+)(?::(\d+))?$/.exec(rule.to) ?? [rule.to, rule.to, undefined];
    const to = mustParseIp(m[1]!, 'dnat target');
    const toPort = m[2] === undefined ? undefined : Number(m[2]);
    if (toPort !== undefined && (toPort < 1 || toPort > 65535))
      throw new NetsimError('EINVAL', `dnat target port ${toPort}`);
    const dst = rule.dst === undefined ? undefined : pfx(rule.dst);
    if (dst && dst.family !== to.family)
      throw new NetsimError('EINVAL', 'dnat match and target families differ');
    const src = rule.src === undefined ? undefined : pfx(rule.src);
    if (src && src.family !== to.family)
      throw new NetsimError('EINVAL', 'dnat source and target families differ');
    return { id: 0, rule: structuredClone(rule), family: to.family, dst, src, to, toPort };
  }
  if (rule.type === 'snat' || rule.type === 'masquerade') {
    const src = rule.src === undefined ? undefined : pfx(rule.src);
    const dst = rule.dst === undefined ? undefined : pfx(rule.dst);
    const notDst = rule.notDst?.map(pfx);
    const to = rule.to === undefined ? undefined : mustParseIp(rule.to, 'snat target');
    if (rule.type === 'snat' && !to) throw new NetsimError('EINVAL', 'snat rule needs "to"');
    if (rule.proto !== undefined && rule.proto !== 'tcp' && rule.proto !== 'udp')
      throw new NetsimError('EINVAL', `snat proto ${String(rule.proto)}`);
    if (rule.dport !== undefined && (!Number.isInteger(rule.dport) || rule.dport < 1 || rule.dport > 65535))
      throw new NetsimError('EINVAL', `snat port ${rule.dport}`);
    const family = (rule.family ?? src?.family ?? dst?.family ?? to?.family ?? 0) as Family | 0;
    return { id: 0, rule: structuredClone(rule), family, src, dst, notDst, to };
  }
  throw new NetsimError('EINVAL', `unknown nat rule type "${String((rule as { type?: unknown }).type)}"`);
}

export function rewrite(
  p: Buffer,
  family: Family,
  which: 'src' | 'dst',
  addr: Uint8Array,
  port: number,
): void {
  const off = which === 'src' ? ipSrcOffset(family) : ipDstOffset(family);
  p.set(addr, off);
  const proto = family === 4 ? p[9]! : p[6]!;
  const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
  if (proto === IPPROTO_TCP || proto === IPPROTO_UDP) p.writeUInt16BE(port, l4 + (which === 'src' ? 0 : 2));
  refreshChecksums(p, family);
}

/**
 * Conntrack on the way in: a packet of a known connection gets its established NAT mapping; the first
 * packet of a new one gets an unconfirmed entry, which NAT rules may still change.
 */
export function natPre(w: WorldState, ns: Ns, p: Buffer, family: Family, inDev: Link | null): CtRef | null {
  const t = tupleOf(p, family);
  if (!t) return null;
  const k = tupleKey(t.proto, t.src, t.sport, t.dst, t.dport);
  const hit = ns.ct.get(k);
  if (hit) {
    const c = hit.conn;
    c.lastUs = w.clockUs;
    if (hit.dir === 'orig' && c.dnat) {
      rewrite(p, family, 'dst', c.reply.src, c.reply.sport);
      if (w.tr)
        rec(
          w,
          'nat',
          ns,
          inDev,
          `DNAT (established) to ${formatIpBytes(c.reply.src, 0, family)}:${c.reply.sport}`,
          p,
          family,
        );
    } else if (hit.dir === 'reply' && c.snat) {
      rewrite(p, family, 'dst', c.orig.src, c.orig.sport);
      if (w.tr)
        rec(
          w,
          'nat',
          ns,
          inDev,
          `de-SNAT to ${formatIpBytes(c.orig.src, 0, family)}:${c.orig.sport}`,
          p,
          family,
        );
    }
    return { conn: c, dir: hit.dir, isNew: false };
  }
  const orig: Tuple = {
    proto: t.proto,
    src: Uint8Array.from(t.src),
    sport: t.sport,
    dst: Uint8Array.from(t.dst),
    dport: t.dport,
  };
  const conn: Conn = {
    family,
    orig,
    reply: { proto: t.proto, src: orig.dst, sport: orig.dport, dst: orig.src, dport: orig.sport },
    dnat: false,
    snat: false,
    confirmed: false,
    lastUs: w.clockUs,
  };
  ns.ct.set(k, { conn, dir: 'orig' });
  return { conn, dir: 'orig', isNew: true };
}

/** The first packet of a connection meets the namespace's DNAT rules (`addNatRule`). */
export function natDnatNew(w: WorldState, ns: Ns, p: Buffer, family: Family, inDev: Link | null, ref: CtRef): void {
  const conn = ref.conn;
  const t = conn.orig;
  const orig = conn.orig;
  const protoName = t.proto === IPPROTO_TCP ? 'tcp' : t.proto === IPPROTO_UDP ? 'udp' : null;
  if (protoName) {
    for (const r of ns.nat) {
      if (
        r.rule.type !== 'dnat' ||
        r.family !== family ||
        r.rule.proto !== protoName ||
        r.rule.dport !== t.dport
      )
        continue;
      if (r.dst ? !prefixContains(r.dst, t.dst, 0) : !ns.local.has(ipKeyAt(t.dst, 0, family))) continue;
      if (r.src && !prefixContains(r.src, t.src, 0)) continue;
      if (r.rule.iif !== undefined && inDev?.name !== r.rule.iif) continue;
      if (r.rule.notIif !== undefined && inDev?.name === r.rule.notIif) continue;
      const port = r.toPort ?? t.dport;
      conn.dnat = true;
      conn.reply = { proto: t.proto, src: r.to!.bytes, sport: port, dst: orig.src, dport: orig.sport };
      rewrite(p, family, 'dst', r.to!.bytes, port);
      if (w.tr)
        rec(
          w,
          'nat',
          ns,
          inDev,
          `DNAT rule ${r.id}${r.rule.comment ? ` (${r.rule.comment})` : ''}: ${formatIpBytes(orig.dst, 0, family)}:${orig.dport} -> ${formatIpAddr(r.to!)}:${port}`,
          p,
          family,
        );
      break;
    }
  }
}

export function natPost(w: WorldState, ns: Ns, p: Buffer, family: Family, out: Link, ref: CtRef): void {
  const c = ref.conn;
  if (!ref.isNew || c.confirmed) {
    if (ref.dir === 'orig' && c.snat) {
      rewrite(p, family, 'src', c.reply.dst, c.reply.dport);
      if (w.tr)
        rec(w, 'nat', ns, out, `SNAT (established) to ${formatIpBytes(c.reply.dst, 0, family)}`, p, family);
    } else if (ref.dir === 'reply' && c.dnat) {
      rewrite(p, family, 'src', c.orig.dst, c.orig.dport);
      if (w.tr)
        rec(
          w,
          'nat',
          ns,
          out,
          `de-DNAT to ${formatIpBytes(c.orig.dst, 0, family)}:${c.orig.dport}`,
          p,
          family,
        );
    }
    return;
  }
  if (!c.snat) natSnatNew(w, ns, p, family, out, c);
  ctConfirm(ns, c);
}

/** The first packet of a connection meets the namespace's SNAT/MASQUERADE rules (`addNatRule`). */
function natSnatNew(w: WorldState, ns: Ns, p: Buffer, family: Family, out: Link, c: Conn): void {
  const sOff = ipSrcOffset(family);
  const dOff = ipDstOffset(family);
  for (const r of ns.nat) {
    if (r.rule.type === 'dnat') continue;
    if (r.family && r.family !== family) continue;
    if (r.src && !prefixContains(r.src, c.orig.src, 0)) continue;
    if (r.dst && !prefixContains(r.dst, p, dOff)) continue;
    if (r.notDst?.some((x) => x.family === family && prefixContains(x, p, dOff))) continue;
    if (r.rule.outIf !== undefined && r.rule.outIf !== out.name) continue;
    if (r.rule.proto !== undefined && c.orig.proto !== (r.rule.proto === 'tcp' ? IPPROTO_TCP : IPPROTO_UDP))
      continue;
    if (r.rule.dport !== undefined && c.reply.sport !== r.rule.dport) continue;
    let to: Uint8Array | null = null;
    if (r.rule.type === 'snat') to = r.to!.family === family ? r.to!.bytes : null;
    else {
      const a = ns.addrs.find((x) => x.dev === out && x.ip.family === family && x.scope === 'global');
      to = a ? a.ip.bytes : null;
    }
    if (!to) continue;
    if (bytesEqual(to, 0, p, sOff, to.length)) break;
    c.snat = true;
    c.reply = { ...c.reply, dst: Uint8Array.from(to) };
    rewrite(p, family, 'src', to, c.reply.dport);
    if (w.tr)
      rec(
        w,
        'nat',
        ns,
        out,
        `${r.rule.type === 'snat' ? 'SNAT' : 'MASQUERADE'} rule ${r.id}${r.rule.comment ? ` (${r.rule.comment})` : ''}: source -> ${formatIpBytes(to, 0, family)}`,
        p,
        family,
      );
    break;
  }
}
