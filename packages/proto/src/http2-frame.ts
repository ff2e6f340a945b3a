// The few pieces of HTTP/2 framing (RFC 9113 section 4 and 6) the unix-socket front end reads and writes
// before node:http2 takes a connection over.

/** The client connection preface (RFC 9113 3.4). */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FRAME_HEADER_LENGTH = 9;
/** SETTINGS_MAX_FRAME_SIZE's initial value: every peer accepts frames up to this size. */
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
/** SETTINGS_HEADER_TABLE_SIZE's initial value, which node:http2 servers keep. */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const FrameFlag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const ErrorCode = {
  PROTOCOL_ERROR: 0x1,
  SETTINGS_TIMEOUT: 0x4,
} as const;

/** A frame header read at `offset`; `end` is where the frame's payload ends. */
export interface FrameHeader {
  length: number;
  type: number;
  flags: number;
  streamId: number;
  payloadStart: number;
  end: number;
}

/** The header of the frame at `offset`, or undefined when its 9 bytes have not all arrived. */
export function readFrameHeader(buf: Buffer, offset: number): FrameHeader | undefined {
  if (buf.length - offset < FRAME_HEADER_LENGTH) return undefined;
  const length = buf.readUIntBE(offset, 3);
  return {
    length,
    type: buf[offset + 3]!,
    flags: buf[offset + 4]!,
    streamId: buf.readUInt32BE(offset + 5) & 0x7fffffff,
    payloadStart: offset + FRAME_HEADER_LENGTH,
    end: offset + FRAME_HEADER_LENGTH + length,
  };
}

export function encodeFrame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + payload.length);
  out.writeUIntBE(payload.length, 0, 3);
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(streamId & 0x7fffffff, 5);
  payload.copy(out, FRAME_HEADER_LENGTH);
  return out;
}

export function goawayFrame(lastStreamId: number, errorCode: number): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(lastStreamId & 0x7fffffff, 0);
  payload.writeUInt32BE(errorCode, 4);
  return encodeFrame(FrameType.GOAWAY, 0, 0, payload);
}

/**
 * The header-block fragment of a HEADERS frame: its payload without padding and priority fields, or
 * undefined when the padding is longer than the payload (a PROTOCOL_ERROR).
 */
export function headersFragment(buf: Buffer, h: FrameHeader): { fragment: Buffer; priority?: Buffer } | undefined {
  let start = h.payloadStart;
  let end = h.end;
  if (h.flags & FrameFlag.PADDED) {
    if (h.length < 1) return undefined;
    const pad = buf[start]!;
    start += 1;
    end -= pad;
  }
  let priority: Buffer | undefined;
  if (h.flags & FrameFlag.PRIORITY) {
    priority = buf.subarray(start, start + 5);
    start += 5;
  }
  if (end < start) return undefined;
  return { fragment: buf.subarray(start, end), priority };
}

/**
 * A header block as a HEADERS frame and as many CONTINUATION frames as `maxFrameSize` requires, without
 * padding. `endStream` and `priority` carry over from the frame the block came in.
 */
export function headerBlockFrames(
  streamId: number,
  block: Buffer,
  endStream: boolean,
  priority: Buffer | undefined,
  maxFrameSize = DEFAULT_MAX_FRAME_SIZE,
): Buffer[] {
  const frames: Buffer[] = [];
  const firstRoom = maxFrameSize - (priority ? 5 : 0);
  let offset = Math.min(block.length, firstRoom);
  let flags = (endStream ? FrameFlag.END_STREAM : 0) | (priority ? FrameFlag.PRIORITY : 0);
  if (offset === block.length) flags |= FrameFlag.END_HEADERS;
  const first = priority ? Buffer.concat([priority, block.subarray(0, offset)]) : block.subarray(0, offset);
  frames.push(encodeFrame(FrameType.HEADERS, flags, streamId, first));
  while (offset < block.length) {
    const next = Math.min(block.length, offset + maxFrameSize);
    const last = next === block.length;
    frames.push(encodeFrame(FrameType.CONTINUATION, last ? FrameFlag.END_HEADERS : 0, streamId, block.subarray(offset, next)));
    offset = next;
  }
  return frames;
}
