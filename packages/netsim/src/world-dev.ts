// The device layer (net/core/dev.c): the FIFO of frame deliveries driven to quiescence, device transmit
// (veth, loopback, dummy here; bridge and VXLAN through their own transmit) and receive up to the bridge
// port handler or the ethertype handlers.
import { formatMac, isMulticastMac, macKeyAt } from './addr.js';
import { ETH_P_ARP, ETH_P_IP, ETH_P_IPV6 } from './packet.js';
import { capture, rec } from './world-capture.js';
import type { Link } from './world-model.js';
import type { WorldState } from './world-state.js';

/** Frames one exchange may process before it is called a forwarding loop. */
const MAX_FRAMES_PER_RUN = 1_000_000;

export function enqueue(w: WorldState, dev: Link, frame: Buffer): void {
  w.qDev.push(dev);
  w.qFrame.push(frame);
}

/** Delivers queued frames until none are left; then fails unanswered neighbour resolutions. */
export function run(w: WorldState): void {
  for (;;) {
    let budget = MAX_FRAMES_PER_RUN;
    while (w.qHead < w.qDev.length) {
      if (--budget < 0) {
        // Without STP a bridge loop floods forever; stop and say so instead of hanging.
        const dev = w.qDev[w.qHead]!;
        rec(
          w,
          'drop',
          dev.ns,
          dev,
          'run',
          undefined,
          undefined,
          `more than ${MAX_FRAMES_PER_RUN} frames in one exchange: forwarding loop`,
        );
        w.stats.drops += w.qDev.length - w.qHead - 1;
        break;
      }
      const dev = w.qDev[w.qHead]!;
      const f = w.qFrame[w.qHead]!;
      w.qHead++;
      devRx(w, dev, f);
    }
    w.qDev = [];
    w.qFrame = [];
    w.qHead = 0;
    if (w.pendingNeigh.length === 0) return;
    const pend = w.pendingNeigh;
    w.pendingNeigh = [];
    for (const { dev, entry } of pend) w.stack.neighFailed(w, dev, entry);
  }
}

export function tick(w: WorldState): void {
  w.clockUs++;
  w.stats.hops++;
}

export function devXmit(w: WorldState, l: Link, frame: Buffer): void {
  if (!l.up) {
    rec(w, 'drop', l.ns, l, 'transmit', frame, undefined, 'link down');
    return;
  }
  tick(w);
  w.stats.frames++;
  l.stats.txPackets++;
  l.stats.txBytes += frame.length;
  capture(w, l, frame, 'tx');
  if (w.tr) rec(w, 'tx', l.ns, l, `${l.kind} transmit`, frame);
  switch (l.kind) {
    case 'loopback':
      enqueue(w, l, frame);
      return;
    case 'veth': {
      const p = l.peer;
      if (!p || !p.up) {
        rec(w, 'drop', l.ns, l, 'veth transmit', frame, undefined, 'peer down (NO-CARRIER)');
        return;
      }
      enqueue(w, p, frame);
      return;
    }
    case 'bridge':
      w.stack.bridgeForward(w, l, null, frame);
      return;
    case 'vxlan':
      w.stack.vxlanXmit(w, l, frame);
      return;
    case 'dummy':
      rec(w, 'drop', l.ns, l, 'dummy device', frame, undefined, 'dummy devices discard what they send');
      return;
  }
}

export function devRx(w: WorldState, l: Link, frame: Buffer): void {
  if (!l.up || !l.alive) {
    rec(w, 'drop', l.ns, l, 'receive', frame, undefined, 'link down');
    return;
  }
  tick(w);
  l.stats.rxPackets++;
  l.stats.rxBytes += frame.length;
  capture(w, l, frame, 'rx');
  if (w.tr) rec(w, 'rx', l.ns, l, `${l.kind} receive`, frame);
  if (l.master) {
    w.stack.bridgeInput(w, l.master, l, frame);
    return;
  }
  netifReceive(w, l, frame);
}

export function netifReceive(w: WorldState, l: Link, frame: Buffer): void {
  if (frame.length < 14) {
    rec(w, 'drop', l.ns, l, 'receive', frame, undefined, 'runt frame');
    return;
  }
  if (l.kind !== 'loopback' && !isMulticastMac(frame, 0) && macKeyAt(frame, 0) !== l.macKey) {
    rec(
      w,
      'drop',
      l.ns,
      l,
      'receive',
      frame,
      undefined,
      `frame for ${formatMac(frame, 0)} is not addressed to this device`,
    );
    return;
  }
  const type = (frame[12]! << 8) | frame[13]!;
  if (type === ETH_P_ARP) w.stack.arpRcv(w, l, frame);
  else if (type === ETH_P_IP) w.stack.ipRcv(w, l, frame, 4);
  else if (type === ETH_P_IPV6) w.stack.ipRcv(w, l, frame, 6);
  else rec(w, 'drop', l.ns, l, 'receive', frame, undefined, `unknown ethertype 0x${type.toString(16)}`);
}
