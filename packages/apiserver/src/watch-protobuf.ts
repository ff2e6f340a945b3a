// Protobuf watch streams, as kube-apiserver writes them for `Accept: application/vnd.kubernetes.protobuf`
// (client-go's default for built-in kinds): each event is one frame, a 4-byte big-endian length and then a
// meta/v1 WatchEvent message in plain protobuf (the stream serializer adds no envelope) whose `object`
// (a RawExtension, field 2) holds the object as a protobuf body of its own: "k8s\0" and a runtime.Unknown
// naming its apiVersion and kind. ERROR events carry a meta/v1 Status that way too.
import type { WatchEvent } from '@kemu/core';
import { WIRE_BYTES, Writer } from './protobuf/wire.js';
import type { RequestContext } from './request-context.js';
import type { WatchEncoder } from './watch.js';

/** The Content-Type of a protobuf watch response. */
export const PROTOBUF_WATCH_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf;stream=watch';

/** One frame: the length prefix and a WatchEvent whose object is the already enveloped `objectBytes`. */
export function watchEventFrame(type: string, objectBytes: Buffer): Buffer {
  const raw = new Writer(objectBytes.length + 8).tag(1, WIRE_BYTES).bytes(objectBytes).finish();
  const event = new Writer(raw.length + type.length + 16).tag(1, WIRE_BYTES).string(type).tag(2, WIRE_BYTES).bytes(raw).finish();
  const frame = Buffer.allocUnsafe(4 + event.length);
  frame.writeUInt32BE(event.length, 0);
  event.copy(frame, 4);
  return frame;
}

/**
 * Frames by object identity, as for JSON (watch.ts): every watcher of one change gets the same frozen
 * object, which is encoded once.
 */
const framed = new WeakMap<object, { type: string; frame: Buffer }>();

/** The encoder for a watch that negotiated protobuf, or undefined when it did not. */
export function protobufWatchEncoder(ctx: RequestContext): WatchEncoder | undefined {
  const encodeObject = ctx.renderers.protobufEncode;
  if (ctx.rendering.kind !== 'object' || ctx.rendering.media !== 'protobuf' || !encodeObject) return undefined;
  return {
    contentType: PROTOBUF_WATCH_CONTENT_TYPE,
    encode(ev: WatchEvent): Buffer {
      const obj = ev.object as object;
      const hit = framed.get(obj);
      if (hit && hit.type === ev.type) return hit.frame;
      const frame = watchEventFrame(ev.type, encodeObject(obj));
      if (Object.isFrozen(obj)) framed.set(obj, { type: ev.type, frame });
      return frame;
    },
  };
}
