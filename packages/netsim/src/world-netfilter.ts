// The netfilter hook points, named as the kernel names them (NF_INET_*), and the tables that run at each
// in priority order: raw, conntrack, mangle, nat (first packet of a connection only), filter. world-ip.ts
// calls these for every packet and touches nothing else of netfilter. A namespace with no iptables rules
// and no maps takes the old path (conntrack plus the simple NAT rules) at no extra cost.
import { type Family, formatIpBytes, ipKeyAt, prefixContains } from '@kemu/ip';
import { ipDstOffset, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP, IPPROTO_UDP, ipSrcOffset } from './packet.js';
import { type NfRule, type NfTableName, ruleComment } from './nf-rule.js';
import type { NfChain } from './nf-table.js';
import { rec } from './world-capture.js';
import { ctConfirm } from './world-conntrack.js';
import type { CtRef, Link, Ns } from './world-model.js';
import { natDnatNew, natPost, natPre, rewrite } from './world-nat.js';
import type { WorldState } from './world-state.js';

/** What travels with one packet through one namespace: its conntrack entry, mark and devices. */
export interface Skb {
  ct: CtRef | null;
  mark: number;
  inDev: Link | null;
  outDev: Link | null;
}

type Hook = 'PREROUTING' | 'INPUT' | 'FORWARD' | 'OUTPUT' | 'POSTROUTING';
type Verdict = 'accept' | 'drop';

const MAX_DEPTH = 64;

/** Deterministic randomness for `statistic --mode random`, seeded from the world. */
const rngs = new WeakMap<WorldState, { s: number }>();
function random(w: WorldState): number {
  let r = rngs.get(w);
  if (!r) {
    r = { s: (0x9e3779b9 ^ (w.seed * 0x01000193)) >>> 0 || 1 };
    rngs.set(w, r);
  }
  // xorshift32
  let x = r.s;
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  r.s = x >>> 0;
  return r.s / 0x100000000;
}

function ifMatch(pattern: string, dev: Link | null): boolean {
  if (!dev) return false;
  return pattern.endsWith('+') ? dev.name.startsWith(pattern.slice(0, -1)) : dev.name === pattern;
}

interface PktView {
  proto: number;
  l4: number;
  sport: number;
  dport: number;
  sOff: number;
  dOff: number;
}

function view(p: Buffer, family: Family): PktView {
  const proto = family === 4 ? p[9]! : p[6]!;
  const l4 = family === 4 ? (p[0]! & 0xf) * 4 : 40;
  const ports = (proto === IPPROTO_TCP || proto === IPPROTO_UDP || proto === 132) && p.length >= l4 + 4;
  return {
    proto,
    l4,
    sport: ports ? p.readUInt16BE(l4) : -1,
    dport: ports ? p.readUInt16BE(l4 + 2) : -1,
    sOff: ipSrcOffset(family),
    dOff: ipDstOffset(family),
  };
}

const protoName = (n: number) => (n === IPPROTO_TCP ? 'tcp' : n === IPPROTO_UDP ? 'udp' : n === 132 ? 'sctp' : String(n));

function isLocal(ns: Ns, p: Buffer, off: number, family: Family): boolean {
  if (ns.local.has(ipKeyAt(p, off, family))) return true;
  return family === 4 ? p[off] === 127 : false;
}

function ctStates(skb: Skb, v: PktView, p: Buffer, family: Family): string[] {
  const ct = skb.ct;
  if (!ct) {
    const icmp = family === 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6;
    // ICMP errors belong to the connection they report on.
    if (v.proto === icmp && !(family === 4 ? [0, 8].includes(p[v.l4]!) : [128, 129].includes(p[v.l4]!))) return ['RELATED'];
    return ['INVALID'];
  }
  const s = [ct.isNew && !ct.conn.confirmed ? 'NEW' : 'ESTABLISHED'];
  if (ct.conn.dnat) s.push('DNAT');
  if (ct.conn.snat) s.push('SNAT');
  return s;
}

function mapKey(parts: string[], v: PktView, p: Buffer, family: Family): string {
  return parts
    .map((k) =>
      k === 'saddr'
        ? formatIpBytes(p, v.sOff, family)
        : k === 'daddr'
          ? formatIpBytes(p, v.dOff, family)
          : k === 'l4proto'
            ? protoName(v.proto)
            : k === 'sport'
              ? String(v.sport)
              : String(v.dport),
    )
    .join(' . ');
}

function matches(w: WorldState, ns: Ns, r: NfRule, p: Buffer, family: Family, skb: Skb, v: PktView): boolean {
  if (r.src && prefixContains(r.src, p, v.sOff) === !!r.srcNeg) return false;
  if (r.dst && prefixContains(r.dst, p, v.dOff) === !!r.dstNeg) return false;
  if (r.proto && (v.proto === r.proto) === !!r.protoNeg) return false;
  if (r.inIf !== undefined && ifMatch(r.inIf, skb.inDev) === !!r.inIfNeg) return false;
  if (r.outIf !== undefined && ifMatch(r.outIf, skb.outDev) === !!r.outIfNeg) return false;
  for (const m of r.matches) {
    switch (m.kind) {
      case 'comment':
        break;
      case 'l4':
        if (v.sport < 0) return false;
        if (m.sport && (v.sport >= m.sport.lo && v.sport <= m.sport.hi) === !!m.sportNeg) return false;
        if (m.dport && (v.dport >= m.dport.lo && v.dport <= m.dport.hi) === !!m.dportNeg) return false;
        break;
      case 'multiport': {
        if (v.sport < 0) return false;
        const port = m.dports ? v.dport : v.sport;
        const hit = (m.dports ?? m.sports!).some((x) => port >= x.lo && port <= x.hi);
        if (hit === m.neg) return false;
        break;
      }
      case 'mark':
        if (((skb.mark & m.mask) === m.value) === m.neg) return false;
        break;
      case 'statistic-random':
        if (random(w) >= m.probability) return false;
        break;
      case 'statistic-nth':
        // Counted per rule: every n-th packet that reaches it, starting at --packet.
        if (m.count++ % m.every !== m.packet) return false;
        break;
      case 'addrtype':
        if (m.dstType && (m.dstType === 'LOCAL' ? isLocal(ns, p, v.dOff, family) : m.dstType === 'UNICAST') === !!m.dstNeg) return false;
        if (m.srcType && (m.srcType === 'LOCAL' ? isLocal(ns, p, v.sOff, family) : m.srcType === 'UNICAST') === !!m.srcNeg) return false;
        break;
      case 'ctstate': {
        const st = ctStates(skb, v, p, family);
        if (m.states.some((s) => st.includes(s)) === m.neg) return false;
        break;
      }
      case 'recent': {
        let list = ns.nf.recent.get(m.name);
        if (!list) ns.nf.recent.set(m.name, (list = new Map()));
        const key = formatIpBytes(p, m.side === 'rsource' ? v.sOff : v.dOff, family);
        const now = w.clockUs;
        if (m.reap && m.seconds !== undefined)
          for (const [k, t] of list) if (now - t > m.seconds * 1e6) list.delete(k);
        if (m.op === 'set') list.set(key, now);
        else {
          const t = list.get(key);
          const hit = t !== undefined && (m.seconds === undefined || now - t <= m.seconds * 1e6);
          if (!hit) return false;
          if (m.op === 'update') list.set(key, now);
          if (m.op === 'remove') list.delete(key);
        }
        break;
      }
      case 'set': {
        const set = ns.nf.maps.get(m.name);
        const key = m.dirs
          .map((d, i) => {
            const addrOff = d === 'src' ? v.sOff : v.dOff;
            if (i === 0) return formatIpBytes(p, addrOff, family);
            return `${protoName(v.proto)}:${d === 'src' ? v.sport : v.dport}`;
          })
          .join(',');
        if (!!set?.elements.has(key) === m.neg) return false;
        break;
      }
    }
  }
  return true;
}

function describe(table: NfTableName, chain: string, i: number, r: NfRule): string {
  return `${table} ${chain} rule ${i}: -A ${chain} ${r.spec}`;
}

/**
 * Runs one table's built-in chain for a packet: rules in order, jumps and gotos on a stack, RETURN,
 * the chain policy at the end. Every matched rule is a trace hop naming table, chain and rule number.
 */
function runChain(
  w: WorldState,
  ns: Ns,
  table: NfTableName,
  hook: Hook,
  p: Buffer,
  family: Family,
  skb: Skb,
): Verdict {
  const t = ns.nf.tables(family).get(table);
  const base = t?.get(hook);
  if (!t || !base || (base.rules.length === 0 && base.policy !== 'DROP')) return 'accept';
  const v = view(p, family);
  const dev = skb.outDev ?? skb.inDev;
  const frames: { c: NfChain; i: number }[] = [{ c: base, i: 0 }];
  const policy = (): Verdict => {
    if (base.policy === 'DROP') {
      rec(w, 'drop', ns, dev, `${table} ${hook} policy DROP`, p, family, `${table} ${hook} policy DROP`);
      return 'drop';
    }
    return 'accept';
  };
  const enter = (name: string, goto: boolean, from: string): boolean => {
    const c = t.get(name);
    if (!c) {
      rec(w, 'drop', ns, dev, `${table} ${from}`, p, family, `jump to missing chain ${name}`);
      return false;
    }
    if (goto) frames[frames.length - 1] = { c, i: 0 };
    else if (frames.length >= MAX_DEPTH) {
      rec(w, 'drop', ns, dev, `${table} ${from}`, p, family, 'too many levels of jumps');
      return false;
    } else frames.push({ c, i: 0 });
    return true;
  };
  for (;;) {
    const top = frames[frames.length - 1]!;
    if (top.i >= top.c.rules.length) {
      if (frames.length === 1) return policy();
      frames.pop();
      continue;
    }
    const r = top.c.rules[top.i++]!;
    if (!matches(w, ns, r, p, family, skb, v)) continue;
    r.packets++;
    r.bytes += p.length;
    const where = describe(table, top.c.name, top.i, r);
    const tg = r.target;
    if (!tg) {
      if (w.tr) rec(w, 'nf', ns, dev, where, p, family);
      continue;
    }
    switch (tg.kind) {
      case 'ACCEPT':
        if (w.tr) rec(w, 'nf', ns, dev, where, p, family);
        return 'accept';
      case 'DROP':
      case 'REJECT': {
        const why = ruleComment(r);
        rec(w, 'drop', ns, dev, where, p, family, why ? `${tg.kind === 'DROP' ? 'dropped' : 'rejected'}: ${why}` : `-j ${tg.kind}`);
        if (tg.kind === 'REJECT')
          w.stack.icmpErrorTo(w, ns, p, family, /prohibited|adm/.test(tg.with) ? 'prohibited' : /host|addr/.test(tg.with) ? 'host-unreachable' : /net|no-route/.test(tg.with) ? 'net-unreachable' : 'port-unreachable');
        return 'drop';
      }
      case 'RETURN':
        if (w.tr) rec(w, 'nf', ns, dev, where, p, family);
        if (frames.length === 1) return policy();
        frames.pop();
        continue;
      case 'jump':
      case 'goto':
        if (w.tr) rec(w, 'nf', ns, dev, where, p, family);
        if (!enter(tg.chain, tg.kind === 'goto', top.c.name)) return 'drop';
        continue;
      case 'MARK':
        skb.mark = ((skb.mark & ~tg.mask) ^ tg.value) >>> 0;
        if (w.tr) rec(w, 'nf', ns, dev, `${where} (mark now 0x${skb.mark.toString(16)})`, p, family);
        continue;
      case 'LOG':
      case 'NOTRACK':
        if (w.tr) rec(w, 'nf', ns, dev, where, p, family);
        continue;
      case 'VMAP': {
        const map = ns.nf.maps.get(tg.map);
        const key = mapKey(tg.key, v, p, family);
        const verdict = map?.elements.get(key);
        if (w.tr) rec(w, 'nf', ns, dev, `${where}: ${key} -> ${verdict ?? 'no element'}`, p, family);
        if (!verdict || verdict === 'member') continue;
        if (verdict === 'accept') return 'accept';
        if (verdict === 'drop') {
          rec(w, 'drop', ns, dev, where, p, family, `verdict map ${tg.map}: ${key} -> drop`);
          return 'drop';
        }
        const [kind, chain] = verdict.split(' ') as ['jump' | 'goto', string];
        if (!enter(chain, kind === 'goto', top.c.name)) return 'drop';
        continue;
      }
      case 'DNAT':
      case 'SNAT':
      case 'MASQUERADE': {
        const ct = skb.ct;
        // NAT binds the first packet of a connection; anything untracked passes the nat table as is.
        if (!ct || !ct.isNew || ct.conn.confirmed) return 'accept';
        const c = ct.conn;
        if (tg.kind === 'DNAT') {
          const port = tg.port ? tg.port.lo : c.orig.dport;
          const keepPort = v.sport < 0;
          c.dnat = true;
          c.reply = { ...c.reply, src: Uint8Array.from(tg.addr), sport: keepPort ? c.reply.sport : port };
          rewrite(p, family, 'dst', tg.addr, keepPort ? v.dport : port);
          if (w.tr) rec(w, 'nat', ns, dev, `${where}: ${formatIpBytes(c.orig.dst, 0, family)}:${c.orig.dport} -> ${formatIpBytes(tg.addr, 0, family)}:${port}`, p, family);
          return 'accept';
        }
        let to: Uint8Array | null = null;
        if (tg.kind === 'SNAT') to = tg.addr;
        else {
          const a = ns.addrs.find((x) => x.dev === skb.outDev && x.ip.family === family && x.scope === 'global');
          to = a ? a.ip.bytes : null;
        }
        if (!to) {
          rec(w, 'drop', ns, dev, where, p, family, 'MASQUERADE: no address on the output device');
          return 'drop';
        }
        const port = tg.kind === 'SNAT' && tg.port ? tg.port.lo : c.reply.dport;
        c.snat = true;
        c.reply = { ...c.reply, dst: Uint8Array.from(to), dport: port };
        rewrite(p, family, 'src', to, port);
        if (w.tr) rec(w, 'nat', ns, dev, `${where}: source -> ${formatIpBytes(to, 0, family)}`, p, family);
        return 'accept';
      }
    }
  }
}

const nfOn = (ns: Ns) => ns.nf.ruleCount > 0;
const tracked = (ns: Ns) => ns.nat.length > 0 || ns.ct.size > 0 || nfOn(ns);

/** NF_INET_PRE_ROUTING: raw, conntrack (established NAT applied), mangle, then nat for a new connection. */
export function nfPrerouting(w: WorldState, ns: Ns, p: Buffer, family: Family, inDev: Link): Skb | null {
  const skb: Skb = { ct: null, mark: 0, inDev, outDev: null };
  if (!tracked(ns)) return skb;
  if (nfOn(ns) && runChain(w, ns, 'raw', 'PREROUTING', p, family, skb) === 'drop') return null;
  skb.ct = natPre(w, ns, p, family, inDev);
  if (!nfOn(ns)) {
    if (skb.ct?.isNew) natDnatNew(w, ns, p, family, inDev, skb.ct);
    return skb;
  }
  if (runChain(w, ns, 'mangle', 'PREROUTING', p, family, skb) === 'drop') return null;
  if (skb.ct?.isNew && !skb.ct.conn.confirmed) {
    if (runChain(w, ns, 'nat', 'PREROUTING', p, family, skb) === 'drop') return null;
    if (!skb.ct.conn.dnat) natDnatNew(w, ns, p, family, inDev, skb.ct);
  }
  return skb;
}

/**
 * NF_INET_LOCAL_OUT: locally generated packets meet raw, conntrack, mangle, nat and filter OUTPUT before
 * their route is chosen (so `-o` matches nothing here). Null when a rule dropped the packet.
 */
export function nfLocalOut(w: WorldState, ns: Ns, p: Buffer, family: Family): Skb | null {
  const skb: Skb = { ct: null, mark: 0, inDev: null, outDev: null };
  if (!tracked(ns)) return skb;
  if (nfOn(ns) && runChain(w, ns, 'raw', 'OUTPUT', p, family, skb) === 'drop') return null;
  skb.ct = natPre(w, ns, p, family, null);
  if (!nfOn(ns)) {
    if (skb.ct?.isNew) natDnatNew(w, ns, p, family, null, skb.ct);
    return skb;
  }
  if (runChain(w, ns, 'mangle', 'OUTPUT', p, family, skb) === 'drop') return null;
  if (skb.ct?.isNew && !skb.ct.conn.confirmed) {
    if (runChain(w, ns, 'nat', 'OUTPUT', p, family, skb) === 'drop') return null;
    if (!skb.ct.conn.dnat) natDnatNew(w, ns, p, family, null, skb.ct);
  }
  if (runChain(w, ns, 'filter', 'OUTPUT', p, family, skb) === 'drop') return null;
  return skb;
}

/** NF_INET_FORWARD: mangle, then filter, with both devices known. False when a rule dropped the packet. */
export function nfForward(w: WorldState, ns: Ns, p: Buffer, family: Family, skb: Skb | null, out: Link | null): boolean {
  if (!skb || !nfOn(ns)) return true;
  skb.outDev = out;
  if (runChain(w, ns, 'mangle', 'FORWARD', p, family, skb) === 'drop') return false;
  return runChain(w, ns, 'filter', 'FORWARD', p, family, skb) !== 'drop';
}

/**
 * NF_INET_LOCAL_IN: mangle and filter INPUT, nat INPUT for a new connection; then the connection is
 * confirmed and replies of a DNATed one are de-DNATed. False when a rule dropped the packet.
 */
export function nfLocalIn(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, skb: Skb | null): boolean {
  if (!skb) return true;
  if (nfOn(ns)) {
    if (runChain(w, ns, 'mangle', 'INPUT', p, family, skb) === 'drop') return false;
    if (runChain(w, ns, 'filter', 'INPUT', p, family, skb) === 'drop') return false;
    if (skb.ct?.isNew && !skb.ct.conn.confirmed && runChain(w, ns, 'nat', 'INPUT', p, family, skb) === 'drop') return false;
  }
  const ct = skb.ct;
  if (!ct) return true;
  if (ct.isNew) ctConfirm(ns, ct.conn);
  // Replies of a DNATed connection that ends here are de-DNATed on input.
  else if (ct.dir === 'reply' && ct.conn.dnat) {
    const c = ct.conn;
    rewrite(p, family, 'src', c.orig.dst, c.orig.dport);
    if (w.tr) rec(w, 'nat', ns, l, `de-DNAT to ${formatIpBytes(c.orig.dst, 0, family)}:${c.orig.dport}`, p, family);
  }
  return true;
}

/**
 * NF_INET_POST_ROUTING: mangle, nat POSTROUTING for a new connection (SNAT/MASQUERADE), the simple NAT
 * rules, then confirm. False when a rule dropped the packet.
 */
export function nfPostrouting(w: WorldState, ns: Ns, p: Buffer, family: Family, out: Link, skb: Skb | null): boolean {
  if (!skb) return true;
  skb.outDev = out;
  if (nfOn(ns)) {
    if (runChain(w, ns, 'mangle', 'POSTROUTING', p, family, skb) === 'drop') return false;
    if (skb.ct?.isNew && !skb.ct.conn.confirmed && runChain(w, ns, 'nat', 'POSTROUTING', p, family, skb) === 'drop')
      return false;
  }
  if (skb.ct) natPost(w, ns, p, family, out, skb.ct);
  return true;
}

/**
 * br_netfilter: with net.bridge.bridge-nf-call-iptables=1 (or ...-ip6tables) in the bridge's namespace, an
 * IP frame the bridge forwards between two of its ports meets PREROUTING, FORWARD and POSTROUTING there,
 * with the bridge as in and out device. Kubernetes needs this: a reply from a Service's endpoint to a
 * client on the same bridge never reaches the node's IP layer otherwise, and would keep its DNATed
 * source. Returns the frame to send (rewritten by NAT) or null when a rule dropped it.
 */
export function nfBridged(w: WorldState, br: Link, frame: Buffer): Buffer | null {
  const ns = br.ns;
  const type = frame.length >= 14 ? frame.readUInt16BE(12) : 0;
  const family: Family | 0 = type === 0x0800 ? 4 : type === 0x86dd ? 6 : 0;
  if (!family || !tracked(ns)) return frame;
  const key = family === 4 ? 'net/bridge/bridge-nf-call-iptables' : 'net/bridge/bridge-nf-call-ip6tables';
  if (ns.sysctls.get(key) !== '1') return frame;
  const p = Buffer.from(frame.subarray(14));
  const skb = nfPrerouting(w, ns, p, family, br);
  if (!skb) return null;
  if (!nfForward(w, ns, p, family, skb, br)) return null;
  if (!nfPostrouting(w, ns, p, family, br, skb)) return null;
  const out = Buffer.allocUnsafe(14 + p.length);
  frame.copy(out, 0, 0, 14);
  p.copy(out, 14);
  return out;
}
