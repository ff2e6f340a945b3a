// Virtual time and the timers that run on it: FDB ageing (bridge and VXLAN), neighbour reachability and
// garbage collection, conntrack idle timeouts.
import { NetsimError } from './errors.js';
import { CT_TIMEOUT_MS } from './world-conntrack.js';
import type { WorldState } from './world-state.js';

/** Neighbour timers: REACHABLE turns STALE, and STALE/FAILED entries are collected. */
const NEIGH_REACHABLE_MS = 30_000;
const NEIGH_GC_STALE_MS = 60_000;

export function advance(w: WorldState, ms: number): void {
  if (!Number.isFinite(ms) || ms < 0) throw new NetsimError('EINVAL', `advance: bad duration ${ms}`);
  w.clockUs += Math.round(ms * 1000);
  for (const ns of w.nss.values()) {
    for (const l of ns.links.values()) {
      if (l.fdb) {
        for (const [k, e] of l.fdb) {
          if (!e.permanent && w.clockUs - e.updatedUs > l.ageingMs * 1000) l.fdb.delete(k);
        }
      }
      if (l.vxFdb) {
        for (const [k, e] of l.vxFdb) {
          if (!e.permanent && w.clockUs - e.updatedUs > l.ageingMs * 1000) l.vxFdb.delete(k);
        }
      }
      for (const [k, n] of l.neigh) {
        const age = w.clockUs - n.updatedUs;
        if (n.state === 'REACHABLE' && age > NEIGH_REACHABLE_MS * 1000) n.state = 'STALE';
        if ((n.state === 'STALE' || n.state === 'FAILED') && age > NEIGH_GC_STALE_MS * 1000)
          l.neigh.delete(k);
      }
    }
    for (const [k, e] of ns.ct) {
      if (w.clockUs - e.conn.lastUs > (CT_TIMEOUT_MS[e.conn.orig.proto] ?? 600_000) * 1000) ns.ct.delete(k);
    }
  }
}
