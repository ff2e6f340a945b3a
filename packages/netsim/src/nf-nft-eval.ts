// Runs an nftables base chain for a packet: each rule's expressions left to right (a comparison that
// fails ends the rule), verdict maps and sets looked up by key in one step (so finding a Service costs the
// same with 10 or 10,000 of them), jumps and gotos on a stack, and the chain policy at the end. Every
// matched rule is a trace hop naming family, table, chain and rule number.
import { type Family, formatIpBytes, prefixContains } from '@kemu/ip';
import { type NftExpr, type NftField, type NftRule, type NftVerdict, PROTO_NAME, verdictText } from './nf-nft-rule.js';
import type { NftChain, NftTable } from './nf-nft-table.js';
import { applyDnat, applySnat, ctStates, isLocal, MAX_DEPTH, type PktView, random, type Skb, type Verdict, view } from './nf-packet.js';
import { rec } from './world-capture.js';
import type { Ns } from './world-model.js';
import type { WorldState } from './world-state.js';

const hex8 = (n: number) => `0x${(n >>> 0).toString(16).padStart(8, '0')}`;

/** The packet's value of one field, as element keys print it; undefined when the packet has none. */
function fieldOf(f: NftField, ns: Ns, p: Buffer, family: Family, v: PktView, skb: Skb): string | undefined {
  switch (f) {
    case 'ip saddr':
    case 'ip6 saddr':
      return formatIpBytes(p, v.sOff, family);
    case 'ip daddr':
    case 'ip6 daddr':
      return formatIpBytes(p, v.dOff, family);
    case 'meta l4proto':
      return PROTO_NAME[v.proto] ?? String(v.proto);
    case 'meta mark':
      return hex8(skb.mark);
    case 'th dport':
      return v.dport < 0 ? undefined : String(v.dport);
    case 'th sport':
      return v.sport < 0 ? undefined : String(v.sport);
    case 'fib daddr type':
      return isLocal(ns, p, v.dOff, family) ? 'local' : 'unicast';
    case 'fib saddr type':
      return isLocal(ns, p, v.sOff, family) ? 'local' : 'unicast';
    default: {
      // tcp/udp/sctp dport and sport: only for that protocol.
      const [proto, which] = f.split(' ');
      if (PROTO_NAME[v.proto] !== proto || v.sport < 0) return undefined;
      return String(which === 'dport' ? v.dport : v.sport);
    }
  }
}

function keyOf(fields: NftField[], ns: Ns, p: Buffer, family: Family, v: PktView, skb: Skb): string | undefined {
  if (fields.length === 1) return fieldOf(fields[0]!, ns, p, family, v, skb);
  const parts: string[] = [];
  for (const f of fields) {
    const x = fieldOf(f, ns, p, family, v, skb);
    if (x === undefined) return undefined;
    parts.push(x);
  }
  return parts.join(' . ');
}

function cmp(e: Extract<NftExpr, { kind: 'cmp' }>, ns: Ns, p: Buffer, family: Family, v: PktView, skb: Skb): boolean {
  let hit = false;
  if (e.field === 'ct state') {
    const st = ctStates(skb, v, p, family);
    hit = e.values.some((x) => x.kind === 'name' && st.includes(x.s.toUpperCase()));
  } else if (e.field === 'meta mark' && e.mask !== undefined) {
    hit = e.values.some((x) => x.kind === 'num' && ((skb.mark & e.mask!) >>> 0) === x.n);
  } else {
    for (const x of e.values) {
      if (x.kind === 'prefix') {
        const off = e.field.endsWith('saddr') ? v.sOff : v.dOff;
        if (x.p.family === family && prefixContains(x.p, p, off)) hit = true;
      } else {
        const have = fieldOf(e.field, ns, p, family, v, skb);
        if (have === undefined) return false;
        const want = x.kind === 'num' ? (e.field === 'meta l4proto' ? (PROTO_NAME[x.n] ?? String(x.n)) : e.field === 'meta mark' ? hex8(x.n) : String(x.n)) : x.s;
        if (have === want) hit = true;
      }
      if (hit) break;
    }
  }
  return hit !== e.neg;
}

/** What one packet's walk through a base chain carries (module-level helpers, no closures per packet). */
interface Walk {
  w: WorldState;
  ns: Ns;
  t: NftTable;
  base: NftChain;
  p: Buffer;
  family: Family;
  dev: Skb['inDev'];
  frames: { c: NftChain; i: number }[];
  /** The comment of the last map element the packet went through (the Service it was sent for). */
  via?: string;
}

const hop = (k: Walk, c: NftChain, n: number, r: NftRule) => `nft ${k.t.family} ${k.t.name} ${c.name} rule ${n}: ${r.text}`;

function policy(k: Walk): Verdict {
  if (k.base.base!.policy === 'drop') {
    const where = `nft ${k.t.family} ${k.t.name} ${k.base.name} policy drop`;
    rec(k.w, 'drop', k.ns, k.dev, where, k.p, k.family, where);
    return 'drop';
  }
  return 'accept';
}

/** Applies a verdict: 'next' when evaluation goes on (a jump, a goto, a return to the caller). */
function follow(k: Walk, vd: NftVerdict, where: string): Verdict | 'next' {
  switch (vd.kind) {
    case 'accept':
      return 'accept';
    case 'drop':
      rec(k.w, 'drop', k.ns, k.dev, where, k.p, k.family, k.via ? `dropped: ${k.via}` : `dropped by ${where}`);
      return 'drop';
    case 'return':
      if (k.frames.length === 1) return policy(k);
      k.frames.pop();
      return 'next';
    default: {
      const c = k.t.chains.get(vd.chain);
      if (!c) {
        rec(k.w, 'drop', k.ns, k.dev, where, k.p, k.family, `jump to missing chain ${vd.chain}`);
        return 'drop';
      }
      if (vd.kind === 'goto') k.frames[k.frames.length - 1] = { c, i: 0 };
      else if (k.frames.length >= MAX_DEPTH) {
        rec(k.w, 'drop', k.ns, k.dev, where, k.p, k.family, 'too many levels of jumps');
        return 'drop';
      } else k.frames.push({ c, i: 0 });
      return 'next';
    }
  }
}

export function runNft(w: WorldState, ns: Ns, t: NftTable, base: NftChain, p: Buffer, family: Family, skb: Skb): Verdict {
  const v = view(p, family);
  const k: Walk = { w, ns, t, base, p, family, dev: skb.outDev ?? skb.inDev, frames: [{ c: base, i: 0 }] };
  const frames = k.frames;
  for (;;) {
    const top = frames[frames.length - 1]!;
    if (top.i >= top.c.rules.length) {
      if (frames.length === 1) return policy(k);
      frames.pop();
      continue;
    }
    const c = top.c;
    const r: NftRule = c.rules[top.i++]!;
    // The hop's text is built only when a trace or a drop needs it (not per rule per packet).
    const n = top.i;
    let verdict: NftVerdict | undefined = r.verdict;
    let matched = true;
    let done: Verdict | undefined;
    let note = '';
    for (const e of r.exprs) {
      if (e.kind === 'cmp') {
        if (!cmp(e, ns, p, family, v, skb)) matched = false;
      } else if (e.kind === 'lookup') {
        const key = keyOf(e.fields, ns, p, family, v, skb);
        const el = key === undefined ? undefined : t.sets.get(e.set)?.elements.get(key);
        const live = !!el && (el.expiresUs === undefined || el.expiresUs > w.clockUs);
        if (live === e.neg) matched = false;
      } else if (e.kind === 'vmap') {
        const key = e.mod !== undefined ? String(Math.floor(random(w) * e.mod)) : keyOf(e.fields, ns, p, family, v, skb);
        const el = key === undefined ? undefined : (e.map ? t.sets.get(e.map)?.elements : e.elements)?.get(key);
        if (!el?.verdict) matched = false;
        else {
          verdict = el.verdict;
          if (el.comment !== undefined) k.via = `${el.comment} (@${e.map ?? 'anonymous'})`;
          if (w.tr) note = `: ${key} -> ${verdictText(el.verdict)}`;
        }
      } else if (e.kind === 'mark-set') {
        skb.mark = (e.op === '|' ? skb.mark | e.value : e.op === '^' ? skb.mark ^ e.value : e.op === '&' ? skb.mark & e.value : e.value) >>> 0;
        if (w.tr) note = ` (mark now 0x${skb.mark.toString(16)})`;
      } else if (e.kind === 'update') {
        const set = t.sets.get(e.set);
        const key = keyOf(e.fields, ns, p, family, v, skb);
        if (set && key !== undefined) set.elements.set(key, { key, expiresUs: set.timeoutS !== undefined ? w.clockUs + set.timeoutS * 1e6 : undefined });
      } else if (e.kind === 'dnat') {
        if (skb.ct?.conn.dnat) done = 'accept';
        else done = applyDnat(w, ns, skb, p, family, v, e.addr, e.port, w.tr ? hop(k, c, n, r) : '');
      } else if (e.kind === 'masquerade') {
        done = applySnat(w, ns, skb, p, family, null, undefined, hop(k, c, n, r));
      } else if (e.kind === 'reject') {
        rec(w, 'drop', ns, k.dev, hop(k, c, n, r), p, family, `rejected: ${k.via ?? r.comment ?? `nft ${t.family} ${t.name} ${c.name}`}`);
        w.stack.icmpErrorTo(w, ns, p, family, 'port-unreachable');
        return 'drop';
      }
      if (!matched || done) break;
    }
    if (!matched) continue;
    if (done) return done;
    if (!verdict) {
      if (w.tr) rec(w, 'nf', ns, k.dev, `${hop(k, c, n, r)}${note}`, p, family);
      continue;
    }
    if (w.tr && verdict.kind !== 'drop') rec(w, 'nf', ns, k.dev, `${hop(k, c, n, r)}${note}`, p, family);
    const out = follow(k, verdict, verdict.kind === 'drop' || w.tr ? `${hop(k, c, n, r)}${note}` : '');
    if (out !== 'next') return out;
  }
}
