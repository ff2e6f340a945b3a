// Virtual time, and the timers that run when it moves: each subsystem expires its own entries (bridge
// and VXLAN FDB ageing, neighbour reachability and garbage collection, conntrack idle timeouts).
import { NetsimError } from './errors.js';
import { fdbExpire } from './world-bridge.js';
import { ctExpire } from './world-conntrack.js';
import { neighExpire } from './world-neighbour.js';
import type { WorldState } from './world-state.js';
import { vxlanFdbExpire } from './world-vxlan.js';

export function advance(w: WorldState, ms: number): void {
  if (!Number.isFinite(ms) || ms < 0) throw new NetsimError('EINVAL', `advance: bad duration ${ms}`);
  w.clockUs += Math.round(ms * 1000);
  for (const ns of w.nss.values()) {
    for (const l of ns.links.values()) {
      fdbExpire(w, l);
      vxlanFdbExpire(w, l);
      neighExpire(w, l);
    }
    ctExpire(w, ns);
  }
}
