// DNS over TCP framing (RFC 1035 4.2.2): every message goes after a two-byte big-endian length, and one
// connection carries several.
import type net from 'node:net';

/**
 * Calls `onMessage` with each whole message arriving on `c`, in order. A message is at most 65,535 bytes,
 * so what is held back never exceeds one message and its length.
 */
export function onFramedMessages(c: net.Socket, onMessage: (msg: Buffer) => void): void {
  let pending: Buffer = Buffer.alloc(0);
  c.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 2) {
      const len = pending.readUInt16BE(0);
      if (pending.length < 2 + len) break;
      const msg = Buffer.from(pending.subarray(2, 2 + len));
      pending = pending.subarray(2 + len);
      onMessage(msg);
    }
  });
}

/** `msg` with its two-byte length in front (at most 65,535 bytes). */
export function frameMessage(msg: Uint8Array): Buffer {
  if (msg.length > 0xffff) throw new RangeError(`a DNS message over TCP holds at most 65535 bytes, not ${msg.length}`);
  const framed = Buffer.alloc(2 + msg.length);
  framed.writeUInt16BE(msg.length, 0);
  framed.set(msg, 2);
  return framed;
}
