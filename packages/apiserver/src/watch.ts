// Watch over HTTP: newline-delimited JSON events on a chunked response, as kube-apiserver streams them.
// `timeoutSeconds` (or a random 30-60 minutes, as upstream) ends the stream; a resourceVersion older than
// the store's history is a 200 with one ERROR event carrying 410 Expired (the client relists); one newer
// than the store is answered within seconds with upstream's 504 "Too large resource version"; the WatchList
// protocol (sendInitialEvents) is checked as upstream validates it.
import { isGone, StatusError, type Store, type WatchEvent } from '@kemu/core';
import { InvalidError } from '@kemu/core';
import { queryBool } from './request-info.js';
import type { RequestContext } from './request-context.js';
import { toStatus } from './responses.js';
import { protobufWatchEncoder } from './watch-protobuf.js';

/** How long a read at a resourceVersion the store has not reached yet waits before the 504 (upstream: 3 s). */
export const FRESHNESS_WAIT_MS = 3000;
const MIN_REQUEST_TIMEOUT_S = 1800;

export function tooLargeResourceVersion(wanted: number, current: number): StatusError {
  return new StatusError('Timeout', 504, `Too large resource version: ${wanted}, current: ${current}`, {
    causes: [{ reason: 'ResourceVersionTooLarge' as never, message: 'Too large resource version', field: '' }],
  });
}

/** Waits until the store's resourceVersion reaches `rv`; the 504 above after FRESHNESS_WAIT_MS. */
export async function waitForResourceVersion(store: Store, rv: string | null): Promise<void> {
  if (!rv || rv === '0' || !/^\d+$/.test(rv)) return;
  const wanted = Number(rv);
  const deadline = Date.now() + FRESHNESS_WAIT_MS;
  for (;;) {
    const current = Number(await store.resourceVersion());
    if (current >= wanted) return;
    if (Date.now() >= deadline) throw tooLargeResourceVersion(wanted, current);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function invalidListOptions(field: string, value: unknown, message: string): InvalidError {
  return new InvalidError('ListOptions', '', 'meta.k8s.io', [
    { field, type: 'FieldValueForbidden', message: `Forbidden: ${message}` },
  ]);
}

export interface WatchEncoder {
  /** One event as the bytes to write (JSON plus newline, or a Table event). */
  encode(ev: WatchEvent): string | Buffer;
  /** The response's Content-Type (default application/json). */
  contentType?: string;
}

export async function serveWatch(ctx: RequestContext, namespace: string | undefined, encoder?: WatchEncoder): Promise<void> {
  const { store, query: q, kind, req, res } = ctx;
  encoder ??= protobufWatchEncoder(ctx);
  const rv = q.get('resourceVersion');
  const sendInitialEvents = q.get('sendInitialEvents');
  const allowBookmarks = queryBool(q, 'allowWatchBookmarks');
  if (sendInitialEvents !== null) {
    if (q.get('resourceVersionMatch') !== 'NotOlderThan')
      throw invalidListOptions('resourceVersionMatch', q.get('resourceVersionMatch'), "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
    if (!allowBookmarks) throw invalidListOptions('allowWatchBookmarks', false, 'sendInitialEvents requires allowWatchBookmarks=true');
  } else if (q.get('resourceVersionMatch')) {
    throw invalidListOptions('resourceVersionMatch', q.get('resourceVersionMatch'), 'resourceVersionMatch is forbidden for watch');
  }
  const timeoutParam = q.get('timeoutSeconds');
  let timeoutS = MIN_REQUEST_TIMEOUT_S * (1 + Math.random());
  if (timeoutParam !== null) {
    if (!/^\d+$/.test(timeoutParam)) throw new StatusError('BadRequest', 400, `timeoutSeconds: Invalid value: "${timeoutParam}": must be a non-negative integer`);
    timeoutS = Number(timeoutParam);
  }
  await waitForResourceVersion(store, rv);
  const initial = sendInitialEvents === null ? undefined : queryBool(q, 'sendInitialEvents');
  let watch;
  try {
    watch = await store.watch(kind.kind, {
      namespace,
      labelSelector: q.get('labelSelector') ?? undefined,
      fieldSelector: q.get('fieldSelector') ?? undefined,
      // sendInitialEvents=true without a resourceVersion starts from the current state.
      resourceVersion: initial && !rv ? undefined : (rv ?? undefined),
      allowBookmarks,
      sendInitialEvents: initial,
    });
  } catch (err) {
    if (!isGone(err)) throw err;
    // Upstream establishes the watch and reports the expiry as its only event.
    writeHead(res, encoder?.contentType);
    const gone = { type: 'ERROR', object: toStatus(err) } as WatchEvent;
    res.end(encoder ? encoder.encode(gone) : `${JSON.stringify(gone)}\n`);
    return;
  }
  writeHead(res, encoder?.contentType);
  const out = res as import('node:http').ServerResponse;
  const encode = encoder?.encode ?? encodeEvent;
  await new Promise<void>((resolve) => {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      req.off('close', end);
      res.off('close', end);
      res.off('drain', resume);
      watch.stop();
      if (!res.writableEnded) res.end();
      resolve();
    };
    const resume = () => watch.resume();
    const timer = setTimeout(end, timeoutS * 1000);
    timer.unref();
    req.on('close', end);
    res.on('close', end);
    res.on('drain', resume);
    // The store calls this synchronously as it commits each change: one write per event, no promise per
    // watcher. When the response's buffer is full the watch pauses (its queue holds what comes meanwhile,
    // bounded: a watcher that far behind gets a 410 and relists) and resumes on 'drain', so a slow client
    // neither holds up the others nor grows the server's memory without bound.
    watch.subscribe({
      event(ev) {
        if (res.writableEnded || res.destroyed) {
          end();
          return false;
        }
        return out.write(encode(ev));
      },
      end,
    });
  });
}

/**
 * An encoder that encodes each change once for all its watchers: the store hands every watcher of a change
 * the same frozen object, so its bytes are kept by object identity, one slot per event type (one change can
 * be a MODIFIED for some watchers and an ADDED or DELETED for others whose selectors it entered or left).
 * Unfrozen objects (ERROR Statuses) are encoded each time.
 */
export function sharedEncoder(encode: (ev: WatchEvent) => Buffer): (ev: WatchEvent) => Buffer {
  const cache = new WeakMap<object, Partial<Record<WatchEvent['type'], Buffer>>>();
  return (ev) => {
    const obj = ev.object as object;
    let slots = cache.get(obj);
    const hit = slots?.[ev.type];
    if (hit) return hit;
    const bytes = encode(ev);
    if (Object.isFrozen(obj)) {
      if (!slots) cache.set(obj, (slots = {}));
      slots[ev.type] = bytes;
    }
    return bytes;
  };
}

/** One watch event as a line of JSON (bytes, shared by every watcher that gets the same change). */
export const encodeEvent = sharedEncoder((ev) => Buffer.from(`{"type":${JSON.stringify(ev.type)},"object":${JSON.stringify(ev.object)}}\n`));

function writeHead(res: RequestContext['res'], contentType = 'application/json') {
  (res as import('node:http').ServerResponse).writeHead(200, {
    'content-type': contentType,
    'cache-control': 'no-cache, private',
  });
  // The client counts the watch as established once the headers arrive.
  (res as import('node:http').ServerResponse).flushHeaders?.();
}
