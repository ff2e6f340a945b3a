// Packet capture and tracing: the world-wide capture ring (tcpdump -i any / pcap export) and the
// hop-by-hop trace recorded while a ping, UDP send or TCP connect runs.
import { writeFileSync } from 'node:fs';
import type { Family } from '@kemu/ip';
import { ETH_P_IP, ETH_P_IPV6, ethFrame, summarizeFrame } from './packet.js';
import { type CapturedFrame, pcapBytes } from './pcap.js';
import type { HopKind } from './trace.js';
import type { Link, Ns } from './world-model.js';
import { type CaptureEntry, linkByName, nsByName, type WorldState } from './world-state.js';

/** Where frames were seen: "ns" (every device of the namespace), "ns/dev", or an object. */
export type CaptureTarget = string | { ns: string; dev?: string };

function splitTarget(s: string): { ns: string; dev?: string } {
  const i = s.lastIndexOf('/');
  return i < 0 ? { ns: s } : { ns: s.slice(0, i), dev: s.slice(i + 1) };
}

export function rec(
  w: WorldState,
  kind: HopKind,
  ns: Ns,
  dev: Link | null,
  detail: string,
  pkt?: Uint8Array,
  pktIsL3?: Family,
  reason?: string,
): void {
  if (kind === 'drop') {
    w.stats.drops++;
    if (dev) dev.stats.dropped++;
  }
  const tr = w.tr;
  if (!tr) return;
  let packet: string | undefined;
  if (pkt) {
    packet = pktIsL3
      ? summarizeFrame(
          ethFrame(new Uint8Array(6), new Uint8Array(6), pktIsL3 === 4 ? ETH_P_IP : ETH_P_IPV6, pkt),
        )
      : summarizeFrame(pkt);
  }
  tr.push({
    seq: tr.length + 1,
    timeUs: w.clockUs,
    ns: ns.name,
    dev: dev?.name ?? null,
    kind,
    detail,
    packet,
    reason,
  });
}

export function capture(w: WorldState, l: Link, frame: Buffer, dir: 'rx' | 'tx'): void {
  const lim = w.captureLimit;
  if (lim <= 0) return;
  const c: CaptureEntry = { timeUs: w.clockUs, frame, dir, link: l, ns: l.ns.name, dev: l.name };
  // One ring for the whole world: memory stays bounded however many devices there are.
  if (w.caps.length < lim) w.caps.push(c);
  else {
    w.caps[w.capHead] = c;
    w.capHead = (w.capHead + 1) % lim;
  }
}

export function captured(w: WorldState, target: CaptureTarget): CapturedFrame[] {
  const { ns, dev } =
    typeof target === 'string' ? (w.nss.has(target) ? { ns: target } : splitTarget(target)) : target;
  const n = nsByName(w, ns);
  const link = dev === undefined ? null : linkByName(n, dev);
  const out: CapturedFrame[] = [];
  const ordered = w.capHead === 0 ? w.caps : [...w.caps.slice(w.capHead), ...w.caps.slice(0, w.capHead)];
  for (const c of ordered) {
    if (link ? c.link !== link : c.ns !== ns) continue;
    out.push({ timeUs: c.timeUs, frame: c.frame, dir: c.dir, where: `${c.ns}/${c.dev}` });
  }
  return out;
}

export function pcap(w: WorldState, target: CaptureTarget): Buffer {
  return pcapBytes(captured(w, target));
}

export function writePcap(w: WorldState, target: CaptureTarget, path: string): number {
  const frames = captured(w, target);
  writeFileSync(path, pcapBytes(frames));
  return frames.length;
}

export function clearCaptures(w: WorldState): void {
  w.caps = [];
  w.capHead = 0;
}
