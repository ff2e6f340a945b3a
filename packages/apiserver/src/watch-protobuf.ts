// Protobuf watch streams, as kube-apiserver writes them for `Accept: application/vnd.kubernetes.protobuf`
// (client-go's default for built-in kinds): each event is one frame, a 4-byte big-endian length and then a
// meta/v1 WatchEvent message in plain protobuf (the stream serializer adds no envelope) whose `object`
// (a RawExtension, field 2) holds the object as a protobuf body of its own: "k8s\0" and a runtime.Unknown
// naming its apiVersion and kind. ERROR events carry a meta/v1 Status that way too.
import type { WatchEvent } from '@kemu/core';
import { WIRE_BYTES, Writer } from './protobuf/wire.js';
import type { RequestContext } from './request-context.js';
import { sharedEncoder, type WatchEncoder } from './watch.js';

/** The Content-Type of a protobuf watch response. */
export const PROTOBUF_WATCH_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf;stream=watch';

const LENGTH_PREFIX = Buffer.alloc(4);

/** One frame: the length prefix and a WatchEvent whose object is the already enveloped `objectBytes`. */
export function watchEventFrame(type: string, objectBytes: Buffer): Buffer {
  // WatchEvent{1: type, 2: RawExtension{1: raw}}, written once into the frame behind its length.
  const rawLen = 1 + varintSize(objectBytes.length) + objectBytes.length;
  const typeLen = Buffer.byteLength(type);
  const eventLen = 1 + varintSize(typeLen) + typeLen + 1 + varintSize(rawLen) + rawLen;
  const frame = new Writer(4 + eventLen).raw(LENGTH_PREFIX).tag(1, WIRE_BYTES).string(type).tag(2, WIRE_BYTES).varint(rawLen).tag(1, WIRE_BYTES).bytes(objectBytes).finish();
  frame.writeUInt32BE(eventLen, 0);
  return frame;
}

function varintSize(n: number): number {
  let size = 1;
  while (n > 0x7f) {
    n >>>= 7;
    size++;
  }
  return size;
}

/** Frames shared by every watcher of one change, as for JSON (watch.ts). */
const frames = new WeakMap<(obj: unknown) => Buffer, (ev: WatchEvent) => Buffer>();

/** The encoder for a watch that negotiated protobuf, or undefined when it did not. */
export function protobufWatchEncoder(ctx: RequestContext): WatchEncoder | undefined {
  const encodeObject = ctx.renderers.protobufEncode;
  if (ctx.rendering.kind !== 'object' || ctx.rendering.media !== 'protobuf' || !encodeObject) return undefined;
  let encode = frames.get(encodeObject);
  if (!encode) frames.set(encodeObject, (encode = sharedEncoder((ev) => watchEventFrame(ev.type, encodeObject(ev.object)))));
  return { contentType: PROTOBUF_WATCH_CONTENT_TYPE, encode };
}
