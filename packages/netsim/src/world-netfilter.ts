// The netfilter hook points, named as the kernel names them (NF_INET_*), and the tables that run at each
// in priority order: raw, conntrack, mangle, nat (first packet of a connection only), filter. world-ip.ts
// calls these for every packet and touches nothing else of netfilter. A namespace with no iptables rules
// and no maps takes the old path (conntrack plus the simple NAT rules) at no extra cost.
import { type Family, formatIpBytes, prefixContains } from '@kemu/ip';
import { runNft } from './nf-nft-eval.js';
import { applyDnat, applySnat, ctStates, ifMatch, isLocal, MAX_DEPTH, type PktView, protoName, random, type Skb, type Verdict, view } from './nf-packet.js';
import { type NfRule, type NfTableName, ruleComment } from './nf-rule.js';
import type { NfChain } from './nf-table.js';
import { rec } from './world-capture.js';
import { ctConfirm } from './world-conntrack.js';
import type { Link, Ns } from './world-model.js';
import { natDnatNew, natPost, natPre, rewrite } from './world-nat.js';

export type { Skb };
type Hook = 'PREROUTING' | 'INPUT' | 'FORWARD' | 'OUTPUT' | 'POSTROUTING';
import type { WorldState } from './world-state.js';

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
        return applyDnat(w, ns, skb, p, family, v, tg.addr, tg.port?.lo, where);
      case 'SNAT':
      case 'MASQUERADE':
        return applySnat(w, ns, skb, p, family, tg.kind === 'SNAT' ? tg.addr : null, tg.kind === 'SNAT' ? tg.port?.lo : undefined, where);
    }
  }
}

const nfOn = (ns: Ns) => { const nf = ns.nfIfAny; return nf !== null && (nf.ruleCount > 0 || nf.nft.ruleCount > 0); };
const tracked = (ns: Ns) => ns.nat.length > 0 || ns.tracksConnections || nfOn(ns);
const HOOK_NAME: Record<Hook, string> = { PREROUTING: 'prerouting', INPUT: 'input', FORWARD: 'forward', OUTPUT: 'output', POSTROUTING: 'postrouting' };
const isNew = (skb: Skb) => !!skb.ct && skb.ct.isNew && !skb.ct.conn.confirmed;

/** The iptables tables of a hook after conntrack, with their priorities (NF_IP_PRI_*). */
const STAGES: Record<Hook, [number, NfTableName][]> = {
  PREROUTING: [[-150, 'mangle'], [-100, 'nat']],
  INPUT: [[-150, 'mangle'], [0, 'filter'], [100, 'nat']],
  FORWARD: [[-150, 'mangle'], [0, 'filter']],
  OUTPUT: [[-150, 'mangle'], [-100, 'nat'], [0, 'filter']],
  POSTROUTING: [[-150, 'mangle'], [100, 'nat']],
};

/**
 * Runs a hook's iptables tables and nftables base chains in priority order, as the kernel orders every
 * hook function: nat tables and nat-type chains see only a connection's first packet. `afterNat` runs once
 * the nat stage is past (the simple NAT rules of the older API).
 */
function runStages(w: WorldState, ns: Ns, hook: Hook, p: Buffer, family: Family, skb: Skb, afterNat?: () => void): Verdict {
  const nft = ns.nf.nft.ruleCount > 0 ? ns.nf.nft.hooks.get(`${family === 4 ? 'ip' : 'ip6'} ${HOOK_NAME[hook]}`) : undefined;
  let j = 0;
  for (const [prio, table] of STAGES[hook]) {
    // nftables base chains of a lower priority than this table run first.
    for (; nft && j < nft.length && nft[j]!.chain.base!.priority < prio; j++) {
      const e = nft[j]!;
      if ((e.chain.base!.type !== 'nat' || isNew(skb)) && runNft(w, ns, e.table, e.chain, p, family, skb) === 'drop') return 'drop';
    }
    if (table === 'nat') {
      if (isNew(skb) && ns.nf.ruleCount > 0 && runChain(w, ns, table, hook, p, family, skb) === 'drop') return 'drop';
      afterNat?.();
    } else if (ns.nf.ruleCount > 0 && runChain(w, ns, table, hook, p, family, skb) === 'drop') return 'drop';
  }
  for (; nft && j < nft.length; j++) {
    const e = nft[j]!;
    if ((e.chain.base!.type !== 'nat' || isNew(skb)) && runNft(w, ns, e.table, e.chain, p, family, skb) === 'drop') return 'drop';
  }
  return 'accept';
}

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
  const legacy = () => {
    if (isNew(skb) && !skb.ct!.conn.dnat) natDnatNew(w, ns, p, family, inDev, skb.ct!);
  };
  return runStages(w, ns, 'PREROUTING', p, family, skb, legacy) === 'drop' ? null : skb;
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
  const legacy = () => {
    if (isNew(skb) && !skb.ct!.conn.dnat) natDnatNew(w, ns, p, family, null, skb.ct!);
  };
  return runStages(w, ns, 'OUTPUT', p, family, skb, legacy) === 'drop' ? null : skb;
}

/** NF_INET_FORWARD: mangle, then filter, with both devices known. False when a rule dropped the packet. */
export function nfForward(w: WorldState, ns: Ns, p: Buffer, family: Family, skb: Skb | null, out: Link | null): boolean {
  if (!skb || !nfOn(ns)) return true;
  skb.outDev = out;
  return runStages(w, ns, 'FORWARD', p, family, skb) !== 'drop';
}

/**
 * NF_INET_LOCAL_IN: mangle and filter INPUT, nat INPUT for a new connection; then the connection is
 * confirmed and replies of a DNATed one are de-DNATed. False when a rule dropped the packet.
 */
export function nfLocalIn(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, skb: Skb | null): boolean {
  if (!skb) return true;
  if (nfOn(ns) && runStages(w, ns, 'INPUT', p, family, skb) === 'drop') return false;
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
  if (nfOn(ns) && runStages(w, ns, 'POSTROUTING', p, family, skb) === 'drop') return false;
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
