/**
 * BGP-4 wire format (RFC 4271 §4): the 19-byte header and the OPEN, UPDATE, NOTIFICATION, KEEPALIVE and
 * ROUTE-REFRESH (RFC 2918) messages, with capabilities (RFC 5492), 4-octet AS numbers (RFC 6793) and
 * multiprotocol reach/unreach attributes (RFC 4760). Decoders validate exactly what RFC 4271 §6 asks and
 * throw a {@link BgpError} carrying the NOTIFICATION to send.
 */
import {
  BgpError,
  ErrorCode,
  HeaderSubcode,
  OpenSubcode,
  RouteRefreshSubcode,
  UpdateSubcode,
} from './errors.js';
import { formatIPv6, type Prefix, parseIPv4, parseIPv6 } from '@kemu/ip';
import { type Afi, internIPv4 } from './router-id.js';

export const HEADER_LENGTH = 19;
export const MAX_MESSAGE_LENGTH = 4096;
export const BGP_VERSION = 4;
/** RFC 6793: the 2-octet placeholder for a 4-octet AS number. */
export const AS_TRANS = 23456;

export const MessageType = {
  Open: 1,
  Update: 2,
  Notification: 3,
  Keepalive: 4,
  RouteRefresh: 5,
} as const;

export const AFI_IPV4 = 1;
export const AFI_IPV6 = 2;
export const SAFI_UNICAST = 1;

export const CapabilityCode = {
  Multiprotocol: 1,
  RouteRefresh: 2,
  FourOctetAs: 65,
} as const;

export const AttrType = {
  Origin: 1,
  AsPath: 2,
  NextHop: 3,
  Med: 4,
  LocalPref: 5,
  AtomicAggregate: 6,
  Aggregator: 7,
  Communities: 8,
  OriginatorId: 9,
  ClusterList: 10,
  MpReachNlri: 14,
  MpUnreachNlri: 15,
  As4Path: 17,
  As4Aggregator: 18,
} as const;

export const AttrFlag = { Optional: 0x80, Transitive: 0x40, Partial: 0x20, ExtendedLength: 0x10 } as const;

export const AsPathSegmentType = { AsSet: 1, AsSequence: 2, ConfedSequence: 3, ConfedSet: 4 } as const;

export const Origin = { Igp: 0, Egp: 1, Incomplete: 2 } as const;

export type Capability =
  | { kind: 'multiprotocol'; afi: number; safi: number }
  | { kind: 'route-refresh' }
  | { kind: 'as4'; as: number }
  | { kind: 'unknown'; code: number; value: Uint8Array };

export interface OpenMessage {
  type: 'open';
  version: number;
  /** The 2-octet "My Autonomous System" field (AS_TRANS when the real AS needs 4 octets). */
  myAs: number;
  holdTime: number;
  /** BGP Identifier as a dotted quad. */
  bgpId: string;
  capabilities: Capability[];
}

export interface AsPathSegment {
  type: number;
  asns: number[];
}

export interface UnknownAttribute {
  flags: number;
  type: number;
  value: Uint8Array;
}

export interface PathAttributes {
  origin?: number;
  asPath?: AsPathSegment[];
  nextHop?: string;
  med?: number;
  localPref?: number;
  atomicAggregate?: boolean;
  aggregator?: { as: number; address: string };
  communities?: number[];
  originatorId?: string;
  clusterList?: string[];
  mpReach?: { afi: number; safi: number; nextHops: string[]; nlri: Prefix[] };
  mpUnreach?: { afi: number; safi: number; withdrawn: Prefix[] };
  as4Path?: AsPathSegment[];
  as4Aggregator?: { as: number; address: string };
  /** Optional attributes this speaker does not interpret; transitive ones are passed on (Partial set). */
  unknown?: UnknownAttribute[];
}

export interface UpdateMessage {
  type: 'update';
  withdrawn: Prefix[];
  attributes: PathAttributes;
  nlri: Prefix[];
}

export interface NotificationMessage {
  type: 'notification';
  code: number;
  subcode: number;
  data: Uint8Array;
}

export interface KeepaliveMessage {
  type: 'keepalive';
}

export interface RouteRefreshMessage {
  type: 'route-refresh';
  afi: number;
  safi: number;
}

export type Message =
  | OpenMessage
  | UpdateMessage
  | NotificationMessage
  | KeepaliveMessage
  | RouteRefreshMessage;

/** Per-session decoding/encoding parameters negotiated in the OPEN exchange. */
export interface CodecContext {
  /** Both sides advertised the 4-octet AS capability: AS_PATH carries 4-octet ASNs. */
  as4: boolean;
}

// ---------------------------------------------------------------------------------------------------------
// Header and framing

const MARKER = Buffer.alloc(16, 0xff);
const EMPTY = Buffer.alloc(0);

function header(type: number, bodyLength: number): Buffer {
  const b = Buffer.allocUnsafe(HEADER_LENGTH + bodyLength);
  MARKER.copy(b, 0);
  b.writeUInt16BE(HEADER_LENGTH + bodyLength, 16);
  b[18] = type;
  return b;
}

function u16(n: number): Uint8Array {
  return Uint8Array.of(n >> 8, n & 0xff);
}

/** Minimum (and for KEEPALIVE / ROUTE-REFRESH exact) total lengths per message type (RFC 4271 §6.1). */
const minLength: Record<number, number> = { 1: 29, 2: 23, 3: 21, 4: 19, 5: 23 };

/**
 * Splits a byte stream into messages. `push` data as it arrives, then call `next()` until it returns
 * undefined. Header errors throw {@link BgpError} (after which the stream is unusable, as the RFC says).
 */
export class MessageReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Uint8Array): void {
    const c = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.buf = this.buf.length === 0 ? c : Buffer.concat([this.buf, c]);
  }

  get buffered(): number {
    return this.buf.length;
  }

  /** Returns the next whole message's type and body, or undefined when more bytes are needed. */
  next(): { type: number; body: Buffer } | undefined {
    if (this.buf.length < HEADER_LENGTH) return undefined;
    const b = this.buf;
    for (let i = 0; i < 16; i++) {
      if (b[i] !== 0xff) {
        throw new BgpError(
          ErrorCode.MessageHeader,
          HeaderSubcode.ConnectionNotSynchronized,
          undefined,
          'marker is not all ones',
        );
      }
    }
    const length = b.readUInt16BE(16);
    const type = b[18]!;
    if (length < HEADER_LENGTH || length > MAX_MESSAGE_LENGTH) {
      throw new BgpError(
        ErrorCode.MessageHeader,
        HeaderSubcode.BadMessageLength,
        u16(length),
        `length ${length}`,
      );
    }
    const min = minLength[type];
    if (min === undefined) {
      throw new BgpError(
        ErrorCode.MessageHeader,
        HeaderSubcode.BadMessageType,
        Uint8Array.of(type),
        `type ${type}`,
      );
    }
    if (length < min || (type === MessageType.Keepalive && length !== HEADER_LENGTH)) {
      throw new BgpError(
        ErrorCode.MessageHeader,
        HeaderSubcode.BadMessageLength,
        u16(length),
        `length ${length} for message type ${type}`,
      );
    }
    if (b.length < length) return undefined;
    if (type === MessageType.RouteRefresh && length !== 23) {
      throw new BgpError(
        ErrorCode.RouteRefreshMessage,
        RouteRefreshSubcode.InvalidMessageLength,
        b.subarray(0, length),
      );
    }
    const body = b.subarray(HEADER_LENGTH, length);
    this.buf = b.length === length ? EMPTY : b.subarray(length);
    return { type, body };
  }
}

/** Decodes one message body of a known type. */
export function decodeMessage(type: number, body: Buffer, ctx: CodecContext): Message {
  switch (type) {
    case MessageType.Open:
      return decodeOpen(body);
    case MessageType.Update:
      return decodeUpdate(body, ctx);
    case MessageType.Notification:
      return {
        type: 'notification',
        code: body[0]!,
        subcode: body[1]!,
        data: Uint8Array.from(body.subarray(2)),
      };
    case MessageType.Keepalive:
      return { type: 'keepalive' };
    case MessageType.RouteRefresh:
      return { type: 'route-refresh', afi: body.readUInt16BE(0), safi: body[3]! };
    default:
      throw new BgpError(ErrorCode.MessageHeader, HeaderSubcode.BadMessageType, Uint8Array.of(type));
  }
}

/** Decodes a single complete message (header included), e.g. a test fixture. */
export function decodeOne(bytes: Uint8Array, ctx: CodecContext = { as4: true }): Message {
  const r = new MessageReader();
  r.push(bytes);
  const m = r.next();
  if (!m || r.buffered !== 0) throw new Error(`not exactly one message (${bytes.length} bytes)`);
  return decodeMessage(m.type, m.body, ctx);
}

export function encodeMessage(m: Message, ctx: CodecContext = { as4: true }): Buffer {
  switch (m.type) {
    case 'open':
      return encodeOpen(m);
    case 'update':
      return encodeUpdate(m, ctx);
    case 'notification':
      return encodeNotification(m.code, m.subcode, m.data);
    case 'keepalive':
      return encodeKeepalive();
    case 'route-refresh':
      return encodeRouteRefresh(m.afi, m.safi);
  }
}

export function encodeKeepalive(): Buffer {
  return header(MessageType.Keepalive, 0);
}

export function encodeNotification(
  code: number,
  subcode: number,
  data: Uint8Array = new Uint8Array(0),
): Buffer {
  const b = header(MessageType.Notification, 2 + data.length);
  b[19] = code;
  b[20] = subcode;
  Buffer.from(data).copy(b, 21);
  return b;
}

export function encodeRouteRefresh(afi: number, safi: number): Buffer {
  const b = header(MessageType.RouteRefresh, 4);
  b.writeUInt16BE(afi, 19);
  b[21] = 0;
  b[22] = safi;
  return b;
}

// ---------------------------------------------------------------------------------------------------------
// OPEN

function encodeCapability(c: Capability): Buffer {
  switch (c.kind) {
    case 'multiprotocol':
      return Buffer.from([CapabilityCode.Multiprotocol, 4, c.afi >> 8, c.afi & 0xff, 0, c.safi]);
    case 'route-refresh':
      return Buffer.from([CapabilityCode.RouteRefresh, 0]);
    case 'as4': {
      const b = Buffer.from([CapabilityCode.FourOctetAs, 4, 0, 0, 0, 0]);
      b.writeUInt32BE(c.as >>> 0, 2);
      return b;
    }
    case 'unknown':
      return Buffer.concat([Buffer.from([c.code, c.value.length]), c.value]);
  }
}

export function encodeOpen(m: Omit<OpenMessage, 'type'>): Buffer {
  const caps = Buffer.concat(m.capabilities.map(encodeCapability));
  // All capabilities go in one Capabilities optional parameter (RFC 5492 §4 allows one or many).
  const params = caps.length > 0 ? Buffer.concat([Buffer.from([2, caps.length]), caps]) : Buffer.alloc(0);
  const id = parseIPv4(m.bgpId);
  if (!id) throw new Error(`BGP identifier ${m.bgpId} is not a dotted quad`);
  const b = header(MessageType.Open, 10 + params.length);
  b[19] = m.version;
  b.writeUInt16BE(m.myAs, 20);
  b.writeUInt16BE(m.holdTime, 22);
  Buffer.from(id).copy(b, 24);
  b[28] = params.length;
  params.copy(b, 29);
  return b;
}

function decodeOpen(body: Buffer): OpenMessage {
  const version = body[0]!;
  if (version !== BGP_VERSION) {
    // Data: the largest version we support, as a 2-octet number (RFC 4271 §6.2).
    throw new BgpError(
      ErrorCode.OpenMessage,
      OpenSubcode.UnsupportedVersionNumber,
      u16(BGP_VERSION),
      `version ${version}`,
    );
  }
  const myAs = body.readUInt16BE(1);
  const holdTime = body.readUInt16BE(3);
  const bgpId = internIPv4(body, 5);
  const optLen = body[9]!;
  if (10 + optLen !== body.length) {
    throw new BgpError(
      ErrorCode.MessageHeader,
      HeaderSubcode.BadMessageLength,
      u16(body.length + HEADER_LENGTH),
      'optional parameters length does not match the message length',
    );
  }
  const capabilities: Capability[] = [];
  let p = 10;
  while (p < body.length) {
    if (p + 2 > body.length)
      throw new BgpError(ErrorCode.OpenMessage, 0, undefined, 'truncated optional parameter');
    const ptype = body[p]!;
    const plen = body[p + 1]!;
    const pend = p + 2 + plen;
    if (pend > body.length)
      throw new BgpError(ErrorCode.OpenMessage, 0, undefined, 'truncated optional parameter');
    if (ptype !== 2) {
      throw new BgpError(
        ErrorCode.OpenMessage,
        OpenSubcode.UnsupportedOptionalParameter,
        undefined,
        `optional parameter type ${ptype}`,
      );
    }
    let q = p + 2;
    while (q < pend) {
      if (q + 2 > pend) throw new BgpError(ErrorCode.OpenMessage, 0, undefined, 'truncated capability');
      const code = body[q]!;
      const len = body[q + 1]!;
      if (q + 2 + len > pend) throw new BgpError(ErrorCode.OpenMessage, 0, undefined, 'truncated capability');
      const v = body.subarray(q + 2, q + 2 + len);
      if (code === CapabilityCode.Multiprotocol && len === 4) {
        capabilities.push({ kind: 'multiprotocol', afi: v.readUInt16BE(0), safi: v[3]! });
      } else if (code === CapabilityCode.RouteRefresh && len === 0) {
        capabilities.push({ kind: 'route-refresh' });
      } else if (code === CapabilityCode.FourOctetAs && len === 4) {
        capabilities.push({ kind: 'as4', as: v.readUInt32BE(0) });
      } else if (
        code === CapabilityCode.Multiprotocol ||
        code === CapabilityCode.RouteRefresh ||
        code === CapabilityCode.FourOctetAs
      ) {
        throw new BgpError(ErrorCode.OpenMessage, 0, undefined, `capability ${code} has length ${len}`);
      } else {
        capabilities.push({ kind: 'unknown', code, value: Uint8Array.from(v) });
      }
      q += 2 + len;
    }
    p = pend;
  }
  return { type: 'open', version, myAs, holdTime, bgpId, capabilities };
}

// ---------------------------------------------------------------------------------------------------------
// Prefixes (RFC 4271 §4.3 NLRI encoding: length in bits, then the minimum number of octets)

function prefixBytes(p: Prefix): number {
  return 1 + ((p.len + 7) >> 3);
}

function writePrefix(b: Buffer, off: number, p: Prefix): number {
  b[off] = p.len;
  const n = (p.len + 7) >> 3;
  for (let i = 0; i < n; i++) b[off + 1 + i] = p.bytes[i]!;
  return off + 1 + n;
}

/**
 * Decoded IPv4 prefixes, one map per prefix length keyed by the address as a signed 32-bit integer (a
 * small integer key hashes much faster than a larger number); shared, never modified.
 */
const v4Prefixes: Map<number, Prefix>[] = Array.from({ length: 33 }, () => new Map());
let v4PrefixCount = 0;

/** Network mask of an IPv4 prefix length as a signed 32-bit integer. */
function v4Mask(len: number): number {
  return len === 0 ? 0 : -1 << (32 - len);
}

function readPrefixes(
  b: Buffer,
  start: number,
  end: number,
  afi: Afi,
  subcode: number = UpdateSubcode.InvalidNetworkField,
  errData?: Uint8Array,
): Prefix[] {
  const out: Prefix[] = [];
  const max = afi === 4 ? 32 : 128;
  const size = afi === 4 ? 4 : 16;
  let p = start;
  while (p < end) {
    const len = b[p]!;
    const n = (len + 7) >> 3;
    if (len > max || p + 1 + n > end) {
      throw updateError(subcode, errData, `bad IPv${afi} prefix (length ${len})`);
    }
    if (afi === 4) {
      // The same IPv4 prefixes arrive over and over (from every peer, on every refresh): one shared,
      // read-only Prefix each instead of a fresh object and byte array per announcement.
      const ip =
        ((n > 0 ? b[p + 1]! << 24 : 0) |
          (n > 1 ? b[p + 2]! << 16 : 0) |
          (n > 2 ? b[p + 3]! << 8 : 0) |
          (n > 3 ? b[p + 4]! : 0)) &
        v4Mask(len);
      const hit = v4Prefixes[len]!.get(ip);
      if (hit) {
        out.push(hit);
        p += 1 + n;
        continue;
      }
    }
    const addr = new Uint8Array(size);
    for (let i = 0; i < n; i++) addr[i] = b[p + 1 + i]!;
    // Trailing bits beyond the prefix length are ignored on receipt, as RFC 4271 §4.3 lets us.
    if (len & 7) addr[n - 1] = addr[n - 1]! & (0xff << (8 - (len & 7))) & 0xff;
    const pfx: Prefix = { family: afi, bytes: addr, len };
    if (afi === 4 && v4PrefixCount < 1_000_000) {
      v4Prefixes[len]!.set((addr[0]! << 24) | (addr[1]! << 16) | (addr[2]! << 8) | addr[3]!, pfx);
      v4PrefixCount++;
    }
    out.push(pfx);
    p += 1 + n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// UPDATE

/** Flags a recognised attribute must carry (Optional and Transitive bits); checked on receipt. */
const expectedFlags: Record<number, number> = {
  [AttrType.Origin]: AttrFlag.Transitive,
  [AttrType.AsPath]: AttrFlag.Transitive,
  [AttrType.NextHop]: AttrFlag.Transitive,
  [AttrType.Med]: AttrFlag.Optional,
  [AttrType.LocalPref]: AttrFlag.Transitive,
  [AttrType.AtomicAggregate]: AttrFlag.Transitive,
  [AttrType.Aggregator]: AttrFlag.Optional | AttrFlag.Transitive,
  [AttrType.Communities]: AttrFlag.Optional | AttrFlag.Transitive,
  [AttrType.OriginatorId]: AttrFlag.Optional,
  [AttrType.ClusterList]: AttrFlag.Optional,
  [AttrType.MpReachNlri]: AttrFlag.Optional,
  [AttrType.MpUnreachNlri]: AttrFlag.Optional,
  [AttrType.As4Path]: AttrFlag.Optional | AttrFlag.Transitive,
  [AttrType.As4Aggregator]: AttrFlag.Optional | AttrFlag.Transitive,
};

function updateError(subcode: number, data?: Uint8Array, detail?: string): BgpError {
  return new BgpError(ErrorCode.UpdateMessage, subcode, data, detail);
}

/** The empty AS_PATH of every iBGP-originated route, shared (paths are never modified in place). */
const EMPTY_AS_PATH: AsPathSegment[] = [];

function decodeAsPath(v: Buffer, start: number, end: number, asSize: 2 | 4): AsPathSegment[] | undefined {
  if (start === end) return EMPTY_AS_PATH;
  const segs: AsPathSegment[] = [];
  let p = start;
  while (p < end) {
    if (p + 2 > end) return undefined;
    const type = v[p]!;
    const count = v[p + 1]!;
    if (type < 1 || type > 4 || count === 0) return undefined;
    if (p + 2 + count * asSize > end) return undefined;
    const asns: number[] = new Array(count);
    for (let i = 0; i < count; i++) {
      asns[i] = asSize === 4 ? v.readUInt32BE(p + 2 + i * 4) : v.readUInt16BE(p + 2 + i * 2);
    }
    segs.push({ type, asns });
    p += 2 + count * asSize;
  }
  return segs;
}

/** Fixed or modular lengths of recognised attributes (RFC 4271 §6.3 Attribute Length Error). */
function lengthOk(type: number, len: number, as4: boolean): boolean {
  switch (type) {
    case AttrType.Origin:
      return len === 1;
    case AttrType.NextHop:
    case AttrType.Med:
    case AttrType.LocalPref:
    case AttrType.OriginatorId:
      return len === 4;
    case AttrType.AtomicAggregate:
      return len === 0;
    case AttrType.Aggregator:
      return len === (as4 ? 8 : 6);
    case AttrType.Communities:
    case AttrType.ClusterList:
      return len % 4 === 0;
    default:
      return true;
  }
}

function isUsableUnicastV4(b: Buffer, off: number): boolean {
  const first = b[off]!;
  if (first === 0 || first >= 224) return false; // 0/8, multicast, class E and broadcast
  return true;
}

/** Decodes an UPDATE body, validating it in the order RFC 4271 §6.3 describes. */
/**
 * Routes reflected once all carry the same one-entry CLUSTER_LIST; they share one array (treated as
 * read-only everywhere: reflecting builds a new list) instead of holding a copy each.
 */
const oneCluster = new Map<string, string[]>();
function singleClusterList(id: string): string[] {
  let l = oneCluster.get(id);
  if (!l) {
    l = [id];
    if (oneCluster.size < 10_000) oneCluster.set(id, l);
  }
  return l;
}

export function decodeUpdate(body: Buffer, ctx: CodecContext): UpdateMessage {
  const total = body.length;
  const wl = body.readUInt16BE(0);
  if (2 + wl + 2 > total)
    throw updateError(UpdateSubcode.MalformedAttributeList, undefined, 'withdrawn routes length too large');
  const tal = body.readUInt16BE(2 + wl);
  if (4 + wl + tal > total)
    throw updateError(
      UpdateSubcode.MalformedAttributeList,
      undefined,
      'total path attribute length too large',
    );
  const withdrawn = readPrefixes(body, 2, 2 + wl, 4);
  const attributes: PathAttributes = {};
  // Attribute types seen so far: a bitmask for the usual ones, a set only for exotic types.
  let seenLow = 0;
  let seenHigh: Set<number> | undefined;
  let p = 4 + wl;
  const aend = p + tal;
  while (p < aend) {
    if (p + 3 > aend)
      throw updateError(UpdateSubcode.MalformedAttributeList, undefined, 'truncated attribute header');
    const flags = body[p]!;
    const type = body[p + 1]!;
    const ext = (flags & AttrFlag.ExtendedLength) !== 0;
    if (ext && p + 4 > aend)
      throw updateError(UpdateSubcode.MalformedAttributeList, undefined, 'truncated attribute header');
    const len = ext ? body.readUInt16BE(p + 2) : body[p + 2]!;
    const vstart = p + (ext ? 4 : 3);
    if (vstart + len > aend) {
      throw updateError(
        UpdateSubcode.MalformedAttributeList,
        undefined,
        `attribute ${type} runs past the attribute list`,
      );
    }
    const astart = p;
    p = vstart + len;
    if (type < 32) {
      if (seenLow & (1 << type))
        throw updateError(UpdateSubcode.MalformedAttributeList, undefined, `attribute ${type} repeated`);
      seenLow |= 1 << type;
    } else {
      seenHigh ??= new Set();
      if (seenHigh.has(type))
        throw updateError(UpdateSubcode.MalformedAttributeList, undefined, `attribute ${type} repeated`);
      seenHigh.add(type);
    }
    const o = vstart;
    const want = expectedFlags[type];
    if (want === undefined) {
      if ((flags & AttrFlag.Optional) === 0) {
        throw updateError(
          UpdateSubcode.UnrecognizedWellKnownAttribute,
          body.subarray(astart, p),
          `attribute type ${type}`,
        );
      }
      if (flags & AttrFlag.Transitive) {
        attributes.unknown ??= [];
        attributes.unknown.push({ flags, type, value: Uint8Array.from(body.subarray(o, o + len)) });
      }
      continue;
    }
    const partialOk = (want & AttrFlag.Optional) !== 0 && (want & AttrFlag.Transitive) !== 0;
    if (
      (flags & (AttrFlag.Optional | AttrFlag.Transitive)) !== want ||
      (!partialOk && flags & AttrFlag.Partial)
    ) {
      throw updateError(
        UpdateSubcode.AttributeFlagsError,
        body.subarray(astart, p),
        `attribute ${type} flags 0x${flags.toString(16)}`,
      );
    }
    if (!lengthOk(type, len, ctx.as4)) {
      throw updateError(
        UpdateSubcode.AttributeLengthError,
        body.subarray(astart, p),
        `attribute ${type} length ${len}`,
      );
    }
    switch (type) {
      case AttrType.Origin:
        if (body[o]! > 2)
          throw updateError(
            UpdateSubcode.InvalidOriginAttribute,
            body.subarray(astart, p),
            `origin ${body[o]}`,
          );
        attributes.origin = body[o]!;
        break;
      case AttrType.AsPath: {
        const segs = decodeAsPath(body, o, o + len, ctx.as4 ? 4 : 2);
        if (!segs) throw updateError(UpdateSubcode.MalformedAsPath);
        attributes.asPath = segs;
        break;
      }
      case AttrType.NextHop:
        if (!isUsableUnicastV4(body, o)) {
          throw updateError(
            UpdateSubcode.InvalidNextHopAttribute,
            body.subarray(astart, p),
            internIPv4(body, o),
          );
        }
        attributes.nextHop = internIPv4(body, o);
        break;
      case AttrType.Med:
        attributes.med = body.readUInt32BE(o);
        break;
      case AttrType.LocalPref:
        attributes.localPref = body.readUInt32BE(o);
        break;
      case AttrType.AtomicAggregate:
        attributes.atomicAggregate = true;
        break;
      case AttrType.Aggregator: {
        const asSize = ctx.as4 ? 4 : 2;
        attributes.aggregator = {
          as: asSize === 4 ? body.readUInt32BE(o) : body.readUInt16BE(o),
          address: internIPv4(body, o + asSize),
        };
        break;
      }
      case AttrType.Communities:
        attributes.communities = [];
        for (let i = 0; i < len; i += 4) attributes.communities.push(body.readUInt32BE(o + i));
        break;
      case AttrType.OriginatorId:
        attributes.originatorId = internIPv4(body, o);
        break;
      case AttrType.ClusterList:
        if (len === 4) {
          attributes.clusterList = singleClusterList(internIPv4(body, o));
          break;
        }
        attributes.clusterList = [];
        for (let i = 0; i < len; i += 4) attributes.clusterList.push(internIPv4(body, o + i));
        break;
      case AttrType.MpReachNlri:
        attributes.mpReach = decodeMpReach(body.subarray(o, o + len), body.subarray(astart, p));
        break;
      case AttrType.MpUnreachNlri: {
        const v = body.subarray(o, o + len);
        if (len < 3)
          throw updateError(
            UpdateSubcode.OptionalAttributeError,
            body.subarray(astart, p),
            'MP_UNREACH_NLRI too short',
          );
        const afi = v.readUInt16BE(0);
        const safi = v[2]!;
        const fam = afi === AFI_IPV4 ? 4 : afi === AFI_IPV6 ? 6 : undefined;
        const withdrawnMp = fam
          ? readPrefixes(v, 3, v.length, fam, UpdateSubcode.OptionalAttributeError, body.subarray(astart, p))
          : [];
        attributes.mpUnreach = { afi, safi, withdrawn: withdrawnMp };
        break;
      }
      case AttrType.As4Path: {
        const segs = decodeAsPath(body, o, o + len, 4);
        // RFC 6793 §6: a malformed AS4_PATH is discarded, not a session error.
        if (segs) attributes.as4Path = segs;
        break;
      }
      case AttrType.As4Aggregator:
        if (len === 8)
          attributes.as4Aggregator = { as: body.readUInt32BE(o), address: internIPv4(body, o + 4) };
        break;
    }
  }
  const nlri = readPrefixes(body, aend, total, 4);
  const hasReach = nlri.length > 0 || attributes.mpReach !== undefined;
  if (hasReach) {
    const missing =
      attributes.origin === undefined
        ? AttrType.Origin
        : attributes.asPath === undefined
          ? AttrType.AsPath
          : nlri.length > 0 && attributes.nextHop === undefined
            ? AttrType.NextHop
            : undefined;
    if (missing !== undefined) {
      throw updateError(
        UpdateSubcode.MissingWellKnownAttribute,
        Uint8Array.of(missing),
        `attribute ${missing} missing`,
      );
    }
  }
  return { type: 'update', withdrawn, attributes, nlri };
}

function decodeMpReach(v: Buffer, whole: Buffer): PathAttributes['mpReach'] {
  const err = (d: string) => updateError(UpdateSubcode.OptionalAttributeError, whole, d);
  if (v.length < 5) throw err('MP_REACH_NLRI too short');
  const afi = v.readUInt16BE(0);
  const safi = v[2]!;
  const nhLen = v[3]!;
  if (4 + nhLen + 1 > v.length) throw err('MP_REACH_NLRI next hop runs past the attribute');
  const nextHops: string[] = [];
  const fam = afi === AFI_IPV4 ? 4 : afi === AFI_IPV6 ? 6 : undefined;
  if (fam === 6) {
    if (nhLen !== 16 && nhLen !== 32) throw err(`IPv6 next hop length ${nhLen}`);
    nextHops.push(formatIPv6(v, 4));
    if (nhLen === 32) nextHops.push(formatIPv6(v, 20));
  } else if (fam === 4) {
    if (nhLen !== 4) throw err(`IPv4 next hop length ${nhLen}`);
    nextHops.push(internIPv4(v, 4));
  }
  // One reserved octet (formerly SNPA count) follows the next hop.
  const start = 4 + nhLen + 1;
  const nlri = fam ? readPrefixes(v, start, v.length, fam, UpdateSubcode.OptionalAttributeError, whole) : [];
  return { afi, safi, nextHops, nlri };
}

function encodeAsPath(segs: AsPathSegment[], asSize: 2 | 4): Buffer {
  let n = 0;
  for (const s of segs) n += 2 + s.asns.length * asSize;
  const b = Buffer.allocUnsafe(n);
  let p = 0;
  for (const s of segs) {
    b[p] = s.type;
    b[p + 1] = s.asns.length;
    p += 2;
    for (const a of s.asns) {
      if (asSize === 4) b.writeUInt32BE(a >>> 0, p);
      else b.writeUInt16BE(a > 0xffff ? AS_TRANS : a, p);
      p += asSize;
    }
  }
  return b;
}

function attr(flags: number, type: number, value: Uint8Array): Buffer {
  const ext = value.length > 255;
  const f = ext ? flags | AttrFlag.ExtendedLength : flags & ~AttrFlag.ExtendedLength;
  const b = Buffer.allocUnsafe((ext ? 4 : 3) + value.length);
  b[0] = f;
  b[1] = type;
  if (ext) b.writeUInt16BE(value.length, 2);
  else b[2] = value.length;
  Buffer.from(value.buffer, value.byteOffset, value.byteLength).copy(b, ext ? 4 : 3);
  return b;
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

function v4(s: string): Uint8Array {
  const b = parseIPv4(s);
  if (!b) throw new Error(`${s} is not an IPv4 address`);
  return b;
}

function v6(s: string): Uint8Array {
  const b = parseIPv6(s);
  if (!b) throw new Error(`${s} is not an IPv6 address`);
  return b;
}

function afiOf(afi: number): Afi {
  return afi === AFI_IPV6 ? 6 : 4;
}

/** Encodes path attributes in type-code order (RFC 4271 §5 recommends ascending order). */
export function encodeAttributes(a: PathAttributes, ctx: CodecContext): Buffer {
  const parts: Buffer[] = [];
  const T = AttrFlag.Transitive;
  const O = AttrFlag.Optional;
  if (a.origin !== undefined) parts.push(attr(T, AttrType.Origin, Uint8Array.of(a.origin)));
  if (a.asPath !== undefined) parts.push(attr(T, AttrType.AsPath, encodeAsPath(a.asPath, ctx.as4 ? 4 : 2)));
  if (a.nextHop !== undefined) parts.push(attr(T, AttrType.NextHop, v4(a.nextHop)));
  if (a.med !== undefined) parts.push(attr(O, AttrType.Med, u32(a.med)));
  if (a.localPref !== undefined) parts.push(attr(T, AttrType.LocalPref, u32(a.localPref)));
  if (a.atomicAggregate) parts.push(attr(T, AttrType.AtomicAggregate, new Uint8Array(0)));
  if (a.aggregator) {
    const asSize = ctx.as4 ? 4 : 2;
    const b = Buffer.allocUnsafe(asSize + 4);
    if (asSize === 4) b.writeUInt32BE(a.aggregator.as >>> 0, 0);
    else b.writeUInt16BE(a.aggregator.as > 0xffff ? AS_TRANS : a.aggregator.as, 0);
    Buffer.from(v4(a.aggregator.address)).copy(b, asSize);
    parts.push(attr(O | T, AttrType.Aggregator, b));
  }
  if (a.communities?.length)
    parts.push(attr(O | T, AttrType.Communities, Buffer.concat(a.communities.map(u32))));
  if (a.originatorId !== undefined) parts.push(attr(O, AttrType.OriginatorId, v4(a.originatorId)));
  if (a.clusterList?.length) {
    parts.push(attr(O, AttrType.ClusterList, Buffer.concat(a.clusterList.map((c) => Buffer.from(v4(c))))));
  }
  if (a.mpReach) {
    const r = a.mpReach;
    const fam = afiOf(r.afi);
    const nh = Buffer.concat(r.nextHops.map((h) => Buffer.from(fam === 6 ? v6(h) : v4(h))));
    const nlri = encodePrefixes(r.nlri);
    const b = Buffer.concat([
      Buffer.from([r.afi >> 8, r.afi & 0xff, r.safi, nh.length]),
      nh,
      Buffer.from([0]),
      nlri,
    ]);
    parts.push(attr(O, AttrType.MpReachNlri, b));
  }
  if (a.mpUnreach) {
    const u = a.mpUnreach;
    const b = Buffer.concat([Buffer.from([u.afi >> 8, u.afi & 0xff, u.safi]), encodePrefixes(u.withdrawn)]);
    parts.push(attr(O, AttrType.MpUnreachNlri, b));
  }
  if (a.as4Path?.length) parts.push(attr(O | T, AttrType.As4Path, encodeAsPath(a.as4Path, 4)));
  if (a.as4Aggregator) {
    const b = Buffer.allocUnsafe(8);
    b.writeUInt32BE(a.as4Aggregator.as >>> 0, 0);
    Buffer.from(v4(a.as4Aggregator.address)).copy(b, 4);
    parts.push(attr(O | T, AttrType.As4Aggregator, b));
  }
  for (const u of a.unknown ?? []) {
    // We pass optional transitive attributes we do not understand on, marked Partial (RFC 4271 §5).
    parts.push(attr(u.flags | AttrFlag.Partial, u.type, u.value));
  }
  return Buffer.concat(parts);
}

export function encodePrefixes(ps: Prefix[]): Buffer {
  let n = 0;
  for (const p of ps) n += prefixBytes(p);
  const b = Buffer.allocUnsafe(n);
  let off = 0;
  for (const p of ps) off = writePrefix(b, off, p);
  return b;
}

export function encodeUpdate(m: Omit<UpdateMessage, 'type'>, ctx: CodecContext): Buffer {
  const w = encodePrefixes(m.withdrawn);
  const a = encodeAttributes(m.attributes, ctx);
  const n = encodePrefixes(m.nlri);
  const bodyLen = 2 + w.length + 2 + a.length + n.length;
  if (HEADER_LENGTH + bodyLen > MAX_MESSAGE_LENGTH) {
    throw new Error(`UPDATE of ${HEADER_LENGTH + bodyLen} bytes exceeds ${MAX_MESSAGE_LENGTH}`);
  }
  const b = header(MessageType.Update, bodyLen);
  let p = 19;
  b.writeUInt16BE(w.length, p);
  p += 2;
  w.copy(b, p);
  p += w.length;
  b.writeUInt16BE(a.length, p);
  p += 2;
  a.copy(b, p);
  p += a.length;
  n.copy(b, p);
  return b;
}

/** Splits prefixes into chunks whose encoding fits `budget` bytes. */
export function chunkPrefixes(ps: Prefix[], budget: number): Prefix[][] {
  const out: Prefix[][] = [];
  let cur: Prefix[] = [];
  let size = 0;
  for (const p of ps) {
    const s = prefixBytes(p);
    if (size + s > budget && cur.length > 0) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(p);
    size += s;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * Encodes announcements of `nlri` (one family) sharing `attributes`, as many UPDATEs as the 4096-octet
 * limit needs. IPv4 goes in the classic NLRI field; IPv6 in MP_REACH_NLRI with `nextHop6`.
 */
export function encodeAnnouncements(
  afi: Afi,
  attributes: PathAttributes,
  nlri: Prefix[],
  ctx: CodecContext,
  nextHops6?: string[],
): Buffer[] {
  const out: Buffer[] = [];
  if (afi === 4) {
    const a = encodeAttributes(attributes, ctx);
    const budget = MAX_MESSAGE_LENGTH - HEADER_LENGTH - 4 - a.length;
    for (const chunk of chunkPrefixes(nlri, budget))
      out.push(encodeUpdate({ withdrawn: [], attributes, nlri: chunk }, ctx));
    return out;
  }
  const base = { ...attributes, nextHop: undefined };
  const a = encodeAttributes(base, ctx);
  const nhLen = (nextHops6?.length ?? 1) * 16;
  // 4 (attribute header, extended) + 5 (afi, safi, nh len, reserved) + next hop.
  const budget = MAX_MESSAGE_LENGTH - HEADER_LENGTH - 4 - a.length - 4 - 5 - nhLen;
  for (const chunk of chunkPrefixes(nlri, budget)) {
    const attrs: PathAttributes = {
      ...base,
      mpReach: { afi: AFI_IPV6, safi: SAFI_UNICAST, nextHops: nextHops6 ?? [], nlri: chunk },
    };
    out.push(encodeUpdate({ withdrawn: [], attributes: attrs, nlri: [] }, ctx));
  }
  return out;
}

/** Encodes withdrawals of `prefixes` (one family) as as many UPDATEs as needed. */
export function encodeWithdrawals(afi: Afi, prefixes: Prefix[], ctx: CodecContext): Buffer[] {
  const out: Buffer[] = [];
  if (afi === 4) {
    for (const chunk of chunkPrefixes(prefixes, MAX_MESSAGE_LENGTH - HEADER_LENGTH - 4)) {
      out.push(encodeUpdate({ withdrawn: chunk, attributes: {}, nlri: [] }, ctx));
    }
    return out;
  }
  for (const chunk of chunkPrefixes(prefixes, MAX_MESSAGE_LENGTH - HEADER_LENGTH - 4 - 4 - 3)) {
    out.push(
      encodeUpdate(
        {
          withdrawn: [],
          attributes: { mpUnreach: { afi: AFI_IPV6, safi: SAFI_UNICAST, withdrawn: chunk } },
          nlri: [],
        },
        ctx,
      ),
    );
  }
  return out;
}

/**
 * RFC 6793 §4.2.3: rebuilds the real AS path from a 2-octet AS_PATH and an AS4_PATH received from a
 * speaker that does not support 4-octet AS numbers.
 */
export function mergeAs4Path(asPath: AsPathSegment[], as4Path: AsPathSegment[] | undefined): AsPathSegment[] {
  if (!as4Path) return asPath;
  const count = (segs: AsPathSegment[]) =>
    segs.reduce(
      (n, s) =>
        n +
        (s.type === AsPathSegmentType.AsSet || s.type === AsPathSegmentType.ConfedSet
          ? 1
          : s.type === AsPathSegmentType.AsSequence
            ? s.asns.length
            : 0),
      0,
    );
  const n2 = count(asPath);
  const n4 = count(as4Path);
  if (n4 > n2) return asPath;
  // Keep the leading (n2 - n4) ASNs of AS_PATH, then append AS4_PATH.
  let keep = n2 - n4;
  const head: AsPathSegment[] = [];
  for (const s of asPath) {
    if (keep <= 0) break;
    if (s.type === AsPathSegmentType.AsSequence) {
      const take = s.asns.slice(0, keep);
      head.push({ type: s.type, asns: take });
      keep -= take.length;
    } else if (s.type === AsPathSegmentType.AsSet) {
      head.push(s);
      keep -= 1;
    } else {
      head.push(s);
    }
  }
  return [...head, ...as4Path];
}

export function isAfiSafiSupported(afi: number, safi: number): boolean {
  return (afi === AFI_IPV4 || afi === AFI_IPV6) && safi === SAFI_UNICAST;
}
