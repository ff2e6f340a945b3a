// The life of a packet, hop by hop: structured records plus a fixed-width text rendering.

export type HopKind =
  | 'tx' // frame transmitted on a device
  | 'rx' // frame received on a device
  | 'fdb' // bridge / vxlan forwarding-database decision
  | 'route' // route lookup result
  | 'neigh' // neighbour (ARP/NDP) resolution
  | 'nat' // DNAT / SNAT / MASQUERADE / de-NAT
  | 'nf' // a netfilter rule matched (table, chain, rule number and text)
  | 'encap' // VXLAN encapsulation
  | 'decap' // VXLAN decapsulation
  | 'forward' // IP forwarding in a namespace
  | 'local' // delivered to the namespace's own stack
  | 'reply' // the stack answered (echo reply, SYN-ACK, ARP reply, ...)
  | 'drop'; // packet dropped: `reason` says why

export interface TraceHop {
  /** Position within the trace, from 1. */
  seq: number;
  /** Virtual time in microseconds since the world started. */
  timeUs: number;
  ns: string;
  dev: string | null;
  kind: HopKind;
  /** What was decided, e.g. "hit 02:00:00:00:00:05 -> port veth1". */
  detail: string;
  /** One-line summary of the packet at this point (after any rewrite). */
  packet?: string;
  /** For drops: why the packet went no further. */
  reason?: string;
}

export type Trace = TraceHop[];

/** Renders a trace as aligned text, one hop per line. */
export function formatTrace(trace: Trace): string {
  if (trace.length === 0) return '(no packets)\n';
  const t0 = trace[0]!.timeUs;
  const where = trace.map((h) => (h.dev ? `${h.ns}/${h.dev}` : h.ns));
  const w = Math.min(32, Math.max(...where.map((s) => s.length)));
  const lines = trace.map((h, i) => {
    const dt = `+${h.timeUs - t0}us`;
    const detail = h.kind === 'drop' ? `${h.detail}${h.reason ? ` (${h.reason})` : ''}` : h.detail;
    const pkt = h.packet ? `  | ${h.packet}` : '';
    return `${String(h.seq).padStart(3)} ${dt.padStart(8)}  ${where[i]!.padEnd(w)}  ${h.kind.padEnd(7)} ${detail}${pkt}`;
  });
  return `${lines.join('\n')}\n`;
}
