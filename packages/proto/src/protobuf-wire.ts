// The protobuf wire-format checks protobufjs leaves out. Its Node reader reads a string whose length runs
// past the end of the message as the bytes that are there, lets a field run past the end of the message it
// is nested in, and accepts field number 0 or a known field under a different wire type — so a truncated
// request was accepted by some methods and refused by others. Every message is walked here first, as the
// Go and C++ runtimes parse it, and refused whole when it is malformed.
import { isUtf8 } from 'node:buffer';
import protobuf from 'protobufjs';

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;

/** Nesting deeper than this is refused rather than recursed into. */
const MAX_DEPTH = 100;

interface FieldRule {
  name: string;
  wireType: number;
  /** A repeated scalar: also accepted packed (length-delimited). */
  packable: boolean;
  /** Checked as a nested message (a message field, or a map field's entry). */
  message?: MessageRule;
  /** A proto3 string: must be valid UTF-8. */
  utf8: boolean;
}

type MessageRule = Map<number, FieldRule>;

/** Thrown for malformed wire data; its message says what and where. */
export class WireFormatError extends Error {
  override name = 'WireFormatError';
}

const rules = new WeakMap<protobuf.Type, MessageRule>();

function scalarRule(name: string, type: string, resolved: protobuf.ReflectionObject | null, repeated: boolean, utf8: boolean): FieldRule {
  if (resolved instanceof protobuf.Type) return { name, wireType: LENGTH_DELIMITED, packable: false, message: ruleOf(resolved), utf8: false };
  if (resolved instanceof protobuf.Enum) return { name, wireType: VARINT, packable: repeated, utf8: false };
  const wireType = (protobuf.types.basic as Record<string, number>)[type] ?? LENGTH_DELIMITED;
  return { name, wireType, packable: repeated && wireType !== LENGTH_DELIMITED, utf8: utf8 && type === 'string' };
}

function ruleOf(type: protobuf.Type): MessageRule {
  let rule = rules.get(type);
  if (rule) return rule;
  rule = new Map();
  // Set before the fields are filled in, so recursive message types refer to this same rule.
  rules.set(type, rule);
  for (const field of type.fieldsArray) {
    field.resolve();
    // proto3 (and editions' VERIFY) strings must be UTF-8; protobufjs keeps the resolved feature here.
    const utf8 = (field as unknown as { _features?: { utf8_validation?: string } })._features?.utf8_validation === 'VERIFY';
    if (field instanceof protobuf.MapField) {
      const entry: MessageRule = new Map([
        [1, scalarRule(`${field.name} key`, field.keyType, null, false, utf8)],
        [2, scalarRule(`${field.name} value`, field.type, field.resolvedType, false, utf8)],
      ]);
      rule.set(field.id, { name: field.name, wireType: LENGTH_DELIMITED, packable: false, message: entry, utf8: false });
    } else {
      rule.set(field.id, scalarRule(field.name, field.type, field.resolvedType, field.repeated, utf8));
    }
  }
  return rule;
}

/** Reads a varint at `pos`; returns [value, next position]. Values past 2^53 lose precision, not validity. */
function varint(buf: Uint8Array, pos: number, end: number, what: string): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) throw new WireFormatError(`truncated varint in ${what}`);
    const byte = buf[pos++]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, pos];
    scale *= 128;
  }
  throw new WireFormatError(`varint longer than 10 bytes in ${what}`);
}

function checkPacked(buf: Uint8Array, pos: number, end: number, field: FieldRule): void {
  if (field.wireType === FIXED64 || field.wireType === FIXED32) {
    const size = field.wireType === FIXED64 ? 8 : 4;
    if ((end - pos) % size !== 0) throw new WireFormatError(`packed field ${field.name} is not a whole number of ${size}-byte values`);
    return;
  }
  while (pos < end) pos = varint(buf, pos, end, `packed field ${field.name}`)[1];
}

/** Checks the fields in buf[pos, end); returns where it stopped (`end`, or after a matching END_GROUP). */
function checkFields(buf: Uint8Array, pos: number, end: number, rule: MessageRule | undefined, depth: number, group?: number): number {
  if (depth > MAX_DEPTH) throw new WireFormatError(`message nested deeper than ${MAX_DEPTH} levels`);
  while (pos < end) {
    let tag: number;
    [tag, pos] = varint(buf, pos, end, 'a field tag');
    const wireType = tag % 8;
    const number = Math.floor(tag / 8);
    if (number === 0 || number > 0x1fffffff) throw new WireFormatError(`invalid field number ${number}`);
    const field = rule?.get(number);
    if (field && wireType !== field.wireType && !(field.packable && wireType === LENGTH_DELIMITED))
      throw new WireFormatError(`field ${field.name} (${number}) has wire type ${wireType}, expected ${field.wireType}`);
    const what = field ? `field ${field.name} (${number})` : `field ${number}`;
    switch (wireType) {
      case VARINT:
        pos = varint(buf, pos, end, what)[1];
        break;
      case FIXED64:
      case FIXED32: {
        const size = wireType === FIXED64 ? 8 : 4;
        if (pos + size > end) throw new WireFormatError(`truncated ${size}-byte value in ${what}`);
        pos += size;
        break;
      }
      case LENGTH_DELIMITED: {
        let length: number;
        [length, pos] = varint(buf, pos, end, what);
        if (length > end - pos) throw new WireFormatError(`${what} has length ${length}, past the end of its message`);
        const stop = pos + length;
        if (field?.message) checkFields(buf, pos, stop, field.message, depth + 1);
        else if (field?.packable && field.wireType !== LENGTH_DELIMITED) checkPacked(buf, pos, stop, field);
        else if (field?.utf8 && !isUtf8(buf.subarray(pos, stop))) throw new WireFormatError(`${what} is not valid UTF-8`);
        pos = stop;
        break;
      }
      case START_GROUP:
        pos = checkFields(buf, pos, end, undefined, depth + 1, number);
        break;
      case END_GROUP:
        if (group !== number) throw new WireFormatError(`unexpected end of group ${number}`);
        return pos;
      default:
        throw new WireFormatError(`invalid wire type ${wireType} in ${what}`);
    }
  }
  if (group !== undefined) throw new WireFormatError(`group ${group} is not closed`);
  return pos;
}

/** Throws a {@link WireFormatError} when `bytes` is not a well-formed encoding of a `type` message. */
export function checkWireFormat(type: protobuf.Type, bytes: Uint8Array): void {
  checkFields(bytes, 0, bytes.length, ruleOf(type), 0);
}
