// Wires the upward calls of the datapath (the Stack of world-state.ts) to the modules that implement
// them; only the World façade imports this module.
import { bridgeForward, bridgeInput } from './world-bridge.js';
import { failLocal, icmpErrorTo, icmpRcv } from './world-icmp.js';
import { ipRcv } from './world-ip.js';
import { tcpRcv, udpRcv } from './world-l4.js';
import { arpRcv, neighFailed } from './world-neighbour.js';
import type { Stack } from './world-state.js';
import { vxlanXmit } from './world-vxlan.js';

/** The upward calls of the datapath, wired to the modules that implement them. */
export const stack: Stack = {
  bridgeForward,
  bridgeInput,
  vxlanXmit,
  arpRcv,
  ipRcv,
  neighFailed,
  icmpErrorTo,
  failLocal,
  icmpRcv,
  udpRcv,
  tcpRcv,
};
