// @kemu/netsim: a simulated Linux datapath. This file is the package's whole public surface.
export {
  World,
  World as Netsim,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
  type CaptureTarget,
  type LinkJSON,
  type NsJSON,
  type PingError,
  type PingOptions,
  type PingReply,
  type PingResult,
  type RouteJSON,
  type SendOptions,
  type TcpConnectResult,
  type UdpExchangeResult,
  type UdpSendResult,
  type WorldJSON,
  type WorldOptions,
} from './world.js';
export type { UdpAnswer } from './world-udp-answer.js';
export { NetsimError, errnoOf, isNetsimError, type ErrnoCode } from './errors.js';
export { formatTrace, type HopKind, type Trace, type TraceHop } from './trace.js';
export type { NfTableName } from './nf-rule.js';
export { pcapBytes, LINKTYPE_ETHERNET, type CapturedFrame } from './pcap.js';
export {
  decodeFrame,
  summarizeFrame,
  type DecodedFrame,
  VXLAN_PORT,
} from './packet.js';
export { formatMac, parseCidr, parseMac } from './addr.js';
export type * from './types.js';
