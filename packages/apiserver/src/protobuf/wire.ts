// Protocol-buffer wire format: a writer and a reader of varints, fixed64 and length-delimited fields, with
// bounds checked so a truncated or hostile body is a BadRequest, never a crash or a runaway allocation.
import { BadRequestError } from '@kemu/core';

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_BYTES = 2;
export const WIRE_FIXED32 = 5;

/** Grows one buffer; nested messages are written to their own writer and copied in with their length. */
export class Writer {
  private buf: Buffer;
  private len = 0;

  constructor(size = 64) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  tag(field: number, wire: number): this {
    return this.varint(field * 8 + wire);
  }

  /** An unsigned varint; negative int32/int64 values are written as 64-bit two's complement (10 bytes). */
  varint(v: number | bigint): this {
    if (typeof v === 'number' && v >= 0 && v <= 0x7fffffff) {
      // The common case, without BigInt.
      this.ensure(5);
      let x = v | 0;
      while (x > 0x7f) {
        this.buf[this.len++] = (x & 0x7f) | 0x80;
        x >>>= 7;
      }
      this.buf[this.len++] = x;
      return this;
    }
    let n = typeof v === 'bigint' ? v : BigInt(Math.trunc(v));
    if (n < 0n) n += 1n << 64n;
    this.ensure(10);
    if (n < 0x80000000n) {
      let x = Number(n);
      while (x > 0x7f) {
        this.buf[this.len++] = (x & 0x7f) | 0x80;
        x >>>= 7;
      }
      this.buf[this.len++] = x;
      return this;
    }
    while (n > 0x7fn) {
      this.buf[this.len++] = Number(n & 0x7fn) | 0x80;
      n >>= 7n;
    }
    this.buf[this.len++] = Number(n);
    return this;
  }

  double(v: number): this {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.len);
    this.len += 8;
    return this;
  }

  bytes(b: Uint8Array): this {
    this.varint(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }

  string(s: string): this {
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.ensure(n);
    this.buf.write(s, this.len, 'utf8');
    this.len += n;
    return this;
  }

  raw(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }

  /** The bytes written; the writer must not be used after. */
  finish(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

export interface FieldValue {
  field: number;
  wire: number;
  /** Varints below 2^31 as numbers, larger ones and fixed64 values as bigint; length-delimited values as bytes. */
  value: number | bigint | Buffer;
}

function bad(msg: string): BadRequestError {
  return new BadRequestError(`protobuf: ${msg}`);
}

/** Reads the fields of one message in order. */
export function* readFields(buf: Buffer): Generator<FieldValue> {
  let pos = 0;
  const small = (): number | bigint => {
    // Up to four bytes hold 28 bits: read those as a number.
    let out = 0;
    for (let i = 0; i < 4; i++) {
      if (pos >= buf.length) throw bad('truncated varint');
      const b = buf[pos++];
      out |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return out;
    }
    pos -= 4;
    return varint();
  };
  const varint = (): bigint => {
    let out = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (pos >= buf.length) throw bad('truncated varint');
      const b = buf[pos++];
      out |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return out & ((1n << 64n) - 1n);
      shift += 7n;
    }
    throw bad('varint longer than 10 bytes');
  };
  while (pos < buf.length) {
    const key = Number(small());
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (field === 0) throw bad('field number 0');
    switch (wire) {
      case WIRE_VARINT:
        yield { field, wire, value: small() };
        break;
      case WIRE_FIXED64:
        if (pos + 8 > buf.length) throw bad('truncated fixed64');
        yield { field, wire, value: buf.readBigUInt64LE(pos) };
        pos += 8;
        break;
      case WIRE_BYTES: {
        const n = Number(small());
        if (n > buf.length - pos) throw bad(`field ${field}: length ${n} runs past the end of the message`);
        yield { field, wire, value: buf.subarray(pos, pos + n) };
        pos += n;
        break;
      }
      case WIRE_FIXED32:
        if (pos + 4 > buf.length) throw bad('truncated fixed32');
        yield { field, wire, value: buf.readUInt32LE(pos) };
        pos += 4;
        break;
      default:
        throw bad(`field ${field}: unsupported wire type ${wire}`);
    }
  }
}
