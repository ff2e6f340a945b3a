// The netfilter hook points, named as the kernel names them (NF_INET_*). world-ip.ts calls these for
// every packet and touches nothing else of netfilter: PRE_ROUTING on receive, LOCAL_OUT for locally
// generated packets, LOCAL_IN before local delivery, POST_ROUTING once the output device is known.
// FORWARD has no rules yet, so world-ip.ts only marks where it would run. Today every hook is conntrack
// plus NAT (a packet no connection tracks carries a null CtRef); filter tables and chains belong here,
// in front of or behind those calls.
import { type Family, formatIpBytes } from '@kemu/ip';
import { rec } from './world-capture.js';
import { ctConfirm } from './world-conntrack.js';
import type { CtRef, Link, Ns } from './world-model.js';
import { natPost, natPre, rewrite } from './world-nat.js';
import type { WorldState } from './world-state.js';

/** NF_INET_PRE_ROUTING: conntrack, then DNAT of a new connection (or the established mapping). */
export function nfPrerouting(w: WorldState, ns: Ns, p: Buffer, family: Family, inDev: Link): CtRef | null {
  return ns.nat.length || ns.ct.size ? natPre(w, ns, p, family, inDev) : null;
}

/** NF_INET_LOCAL_OUT: locally generated packets meet conntrack and DNAT before their route is chosen. */
export function nfLocalOut(w: WorldState, ns: Ns, p: Buffer, family: Family): CtRef | null {
  return ns.nat.length || ns.ct.size ? natPre(w, ns, p, family, null) : null;
}

/** NF_INET_LOCAL_IN: a new connection is confirmed; replies of a DNATed one are de-DNATed. */
export function nfLocalIn(w: WorldState, ns: Ns, l: Link, p: Buffer, family: Family, ct: CtRef | null): void {
  if (!ct) return;
  if (ct.isNew) ctConfirm(ns, ct.conn);
  // Replies of a DNATed connection that ends here are de-DNATed on input.
  else if (ct.dir === 'reply' && ct.conn.dnat) {
    const c = ct.conn;
    rewrite(p, family, 'src', c.orig.dst, c.orig.dport);
    if (w.tr)
      rec(w, 'nat', ns, l, `de-DNAT to ${formatIpBytes(c.orig.dst, 0, family)}:${c.orig.dport}`, p, family);
  }
}

/** NF_INET_POST_ROUTING: SNAT/MASQUERADE of a new connection (or the established mapping), then confirm. */
export function nfPostrouting(
  w: WorldState,
  ns: Ns,
  p: Buffer,
  family: Family,
  out: Link,
  ct: CtRef | null,
): void {
  if (ct) natPost(w, ns, p, family, out, ct);
}
