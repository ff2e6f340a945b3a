// What ping, UDP send and TCP connect take and return (part of the package's public surface).
import type { Trace } from './trace.js';

export interface PingReply {
  seq: number;
  from: string;
  ttl: number;
}

export interface PingError {
  seq: number;
  from: string;
  /** ping(8)-style text: "Destination Host Unreachable", "Time to live exceeded", ... */
  message: string;
}

export interface PingResult {
  /** At least one echo reply came back. */
  reachable: boolean;
  transmitted: number;
  received: number;
  replies: PingReply[];
  errors: PingError[];
  /** Set when the stack refused to send (no route, no source address, ...), like ping's "connect:" errors. */
  error?: { code: string; message: string };
  trace: Trace;
}

export interface TcpConnectResult {
  state: 'established' | 'refused' | 'timeout' | 'unreachable' | 'error';
  local: { ip: string; port: number } | null;
  remote: { ip: string; port: number };
  error?: { code: string; message: string };
  trace: Trace;
}

export interface UdpSendResult {
  /** Namespace whose listener received the datagram, or null. */
  delivered: string | null;
  local: { ip: string; port: number } | null;
  /** The stack refused to send (no route, ...). */
  error?: { code: string; message: string };
  /** An ICMP error that came back, ping(8)-style text. */
  icmpError?: { from: string; message: string };
  trace: Trace;
}

export interface UdpExchangeResult extends UdpSendResult {
  /** The one reply the socket took: from the address and port the request went to (after NAT reversal). */
  reply?: { from: { ip: string; port: number }; payload: Buffer };
}

export interface SendOptions {
  /** Record the hop-by-hop trace (default true). */
  trace?: boolean;
  /** Source address to use instead of the kernel's choice. */
  src?: string;
}

export interface PingOptions extends SendOptions {
  count?: number;
  ttl?: number;
  /** ICMP payload bytes (default 56, as ping(8)). */
  size?: number;
}
