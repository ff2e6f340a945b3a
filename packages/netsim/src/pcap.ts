// Classic libpcap file format (microsecond timestamps, LINKTYPE_ETHERNET), readable by tshark/tcpdump.

export const LINKTYPE_ETHERNET = 1;

export interface CapturedFrame {
  timeUs: number;
  frame: Uint8Array;
  dir: 'rx' | 'tx';
  /** "ns/dev" where the frame was seen. */
  where: string;
}

export function pcapBytes(frames: readonly CapturedFrame[], snaplen = 262144): Buffer {
  const hdr = Buffer.alloc(24);
  hdr.writeUInt32LE(0xa1b2c3d4, 0);
  hdr.writeUInt16LE(2, 4);
  hdr.writeUInt16LE(4, 6);
  hdr.writeInt32LE(0, 8);
  hdr.writeUInt32LE(0, 12);
  hdr.writeUInt32LE(snaplen, 16);
  hdr.writeUInt32LE(LINKTYPE_ETHERNET, 20);
  const parts: Buffer[] = [hdr];
  for (const f of frames) {
    const rec = Buffer.alloc(16);
    const incl = Math.min(f.frame.length, snaplen);
    rec.writeUInt32LE(Math.floor(f.timeUs / 1e6), 0);
    rec.writeUInt32LE(f.timeUs % 1e6, 4);
    rec.writeUInt32LE(incl, 8);
    rec.writeUInt32LE(f.frame.length, 12);
    parts.push(rec, Buffer.from(f.frame.buffer, f.frame.byteOffset, incl));
  }
  return Buffer.concat(parts);
}
