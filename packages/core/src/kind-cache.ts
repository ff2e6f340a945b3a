// Per-kind cache: current objects with field indexes, a bounded event history, and watch fan-out.
// Watchers are bucketed by the first `=` term of their field selector (or their namespace), so an event
// reaches only the watchers that can match it instead of every filter being evaluated per event.
import type { KubeObject } from './api-meta.js';
import { ExpiredError, type StatusError } from './errors.js';
import { type FieldSelector, everyField } from './fields.js';
import { fieldGetter, type FieldGetter, type KindInfo } from './kinds.js';
import { everything, type Selector } from './labels.js';
import type { WatchEvent } from './store.js';
import { DEFAULT_WATCH_QUEUE_LIMIT, WatchQueue } from './watch-queue.js';
import { deepFreeze } from './deep-freeze.js';
import { ObjectTable, TEXT_KINDS } from './object-table.js';


/**
 * Deep copy of a JSON value, with JSON semantics (undefined members and functions dropped, Dates and
 * Quantities via toJSON), several times faster than a JSON round trip for API objects.
 */
export function clone<T>(o: T): T {
  return copyValue(o) as T;
}

function copyValue(v: unknown): unknown {
  if (v === null || typeof v !== 'object') {
    if (typeof v === 'number' && !Number.isFinite(v)) return null;
    return v;
  }
  if (Array.isArray(v)) {
    const n = v.length;
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      const x = v[i];
      out[i] = x === undefined || typeof x === 'function' ? null : copyValue(x);
    }
    return out;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) {
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return copyValue((v as { toJSON(): unknown }).toJSON());
    return JSON.parse(JSON.stringify(v));
  }
  const out: Record<string, unknown> = {};
  for (const k in v as Record<string, unknown>) {
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined || typeof x === 'function') continue;
    out[k] = copyValue(x);
  }
  return out;
}

export function storageKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export interface WatchFilter {
  namespace?: string;
  labels: Selector;
  fields: FieldSelector;
}

type Bucket = Set<WatcherImpl>;

export interface HistoryEntry {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  obj: KubeObject;
  prev: KubeObject | undefined;
  rv: number;
  /** The event most watchers get for this change ({type, object: obj}), made once and shared by them all. */
  event?: WatchEvent;
}

/** The event of `e` for a watcher that matches its new state (and, for MODIFIED, its old one), shared. */
function sharedEvent(e: HistoryEntry): WatchEvent {
  return (e.event ??= Object.freeze({ type: e.type, object: e.obj }));
}

/**
 * Which of a change's states a watcher's bucket has already matched against its field selector: a bit
 * set of NEW_MATCHES and OLD_MATCHES, or 0 when nothing is known (evaluate the selector).
 */
const NEW_MATCHES = 1;
const OLD_MATCHES = 2;

export class WatcherImpl extends WatchQueue {
  /** Highest resourceVersion delivered, for bookmarks. */
  lastRv = 0;
  /** Events at or below this resourceVersion are already reflected (a cache may lag its backend). */
  minRv = 0;
  readonly matchFields: (o: KubeObject) => boolean;
  /** The field selector is one `field=value` term (the watcher's bucket key), so its bucket decides it. */
  readonly bucketDecidesFields: boolean;

  constructor(
    readonly filter: WatchFilter,
    info: KindInfo,
    readonly bookmarks: boolean,
    queueLimit = DEFAULT_WATCH_QUEUE_LIMIT,
  ) {
    super(queueLimit);
    this.matchFields = filter.fields.bind(info);
    const reqs = filter.fields.requirements;
    this.bucketDecidesFields = reqs.length === 1 && reqs[0].operator === '=';
  }

  matches(o: KubeObject): boolean {
    if (this.filter.namespace && o.metadata.namespace !== this.filter.namespace) return false;
    if (!this.filter.labels.empty() && !this.filter.labels.matches(o.metadata.labels)) return false;
    return this.matchFields(o);
  }

  /** Whether `o` passes the namespace and label parts of the filter. */
  private matchesMeta(o: KubeObject): boolean {
    if (this.filter.namespace && o.metadata.namespace !== this.filter.namespace) return false;
    return this.filter.labels.empty() || this.filter.labels.matches(o.metadata.labels);
  }

  /**
   * Deliver a store event, translating it by how old and new state match this watcher's filter. `known`
   * says which states the watcher's bucket has already matched against its field selector.
   */
  deliver(e: HistoryEntry, known = 0): void {
    if (e.rv <= this.minRv) return;
    const decided = known !== 0 && this.bucketDecidesFields;
    const now = this.matchesMeta(e.obj) && (decided ? (known & NEW_MATCHES) !== 0 : this.matchFields(e.obj));
    if (e.type === 'ADDED' || e.type === 'DELETED') {
      if (now) this.push(sharedEvent(e));
    } else {
      const before = e.prev !== undefined && this.matchesMeta(e.prev) && (decided ? (known & OLD_MATCHES) !== 0 : this.matchFields(e.prev));
      if (now && before) this.push(sharedEvent(e));
      else if (now) this.push({ type: 'ADDED', object: e.obj });
      else if (before) {
        // Left the selection: a DELETED carrying the last matching state at the new resourceVersion.
        const gone = clone(e.prev!);
        gone.metadata.resourceVersion = e.obj.metadata.resourceVersion;
        this.push({ type: 'DELETED', object: deepFreeze(gone) });
      }
    }
    this.lastRv = e.rv;
  }
}

interface FieldBuckets {
  get: FieldGetter;
  byValue: Map<string, Bucket>;
}

export interface KindCacheOptions {
  /** Events retained for watches from an older resourceVersion. */
  historySize: number;
  /** resourceVersion from which history is complete (events after it are retained). */
  windowStart: number;
  /** Fields with an object index for list lookups (e.g. spec.nodeName). */
  indexedFields?: string[];
  /** Undelivered events per watcher before it is ended with 410 (default 1,000,000). */
  watchQueueLimit?: number;
}

export class KindCache {
  readonly objects: ObjectTable;
  private readonly objIndexes = new Map<string, { get: FieldGetter; byValue: Map<string, Set<string>> }>();
  private history: (HistoryEntry | undefined)[];
  private histStart = 0;
  private histLen = 0;
  windowStart: number;
  lastRv: number;
  private readonly all: Bucket = new Set();
  private readonly byNamespace = new Map<string, Bucket>();
  private readonly byField = new Map<string, FieldBuckets>();
  private readonly bookmarkers = new Set<WatcherImpl>();
  watcherCount = 0;
  private readonly queueLimit: number;

  constructor(
    readonly info: KindInfo,
    opts: KindCacheOptions,
  ) {
    this.objects = new ObjectTable(TEXT_KINDS.has(info.kind));
    this.history = new Array(Math.max(1, opts.historySize));
    this.queueLimit = opts.watchQueueLimit ?? DEFAULT_WATCH_QUEUE_LIMIT;
    this.windowStart = opts.windowStart;
    this.lastRv = opts.windowStart;
    for (const f of opts.indexedFields ?? []) {
      this.objIndexes.set(f, { get: fieldGetter(info, f), byValue: new Map() });
    }
  }

  /** Apply a committed change: update objects and indexes, record history, fan out to watchers. */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject, prev: KubeObject | undefined, rv: number): void {
    this.setObject(type, obj, prev);
    const e: HistoryEntry = { type, obj, prev, rv };
    this.record(e);
    this.lastRv = rv;
    if (this.watcherCount > 0) this.dispatch(e);
  }

  /** Load state without history or events (recovery from disk). */
  restore(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject, rv: number): void {
    const key = storageKey(obj.metadata.namespace, obj.metadata.name!);
    this.setObject(type, obj, this.objects.get(key));
    if (rv > this.lastRv) this.lastRv = rv;
    if (rv > this.windowStart) this.windowStart = rv;
  }

  private setObject(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject, prev: KubeObject | undefined): void {
    const key = storageKey(obj.metadata.namespace, obj.metadata.name!);
    if (type === 'DELETED') this.objects.delete(key);
    else this.objects.set(key, obj);
    for (const idx of this.objIndexes.values()) {
      const oldV = prev ? idx.get(prev) : undefined;
      const newV = type === 'DELETED' ? undefined : idx.get(obj);
      if (oldV === newV) continue;
      if (oldV !== undefined) idx.byValue.get(oldV)?.delete(key);
      if (newV !== undefined) {
        let s = idx.byValue.get(newV);
        if (!s) {
          s = new Set();
          idx.byValue.set(newV, s);
        }
        s.add(key);
      }
    }
  }

  private record(e: HistoryEntry): void {
    const cap = this.history.length;
    if (this.histLen === cap) {
      const evicted = this.history[this.histStart]!;
      this.windowStart = evicted.rv;
      this.history[this.histStart] = e;
      this.histStart = (this.histStart + 1) % cap;
    } else {
      this.history[(this.histStart + this.histLen) % cap] = e;
      this.histLen++;
    }
  }

  /** Forget history up to `rv` (watches from before it get 410 Expired). */
  compact(rv: number): void {
    const cap = this.history.length;
    while (this.histLen > 0 && this.history[this.histStart]!.rv <= rv) {
      this.history[this.histStart] = undefined;
      this.histStart = (this.histStart + 1) % cap;
      this.histLen--;
    }
    if (rv > this.windowStart) this.windowStart = rv;
  }

  private dispatch(e: HistoryEntry): void {
    for (const w of this.all) w.deliver(e);
    const ns = e.obj.metadata.namespace;
    if (ns) {
      const b = this.byNamespace.get(ns);
      if (b) for (const w of b) w.deliver(e);
    }
    for (const fb of this.byField.values()) {
      const v = fb.get(e.obj);
      const pv = e.prev ? fb.get(e.prev) : undefined;
      // A bucket is keyed by its watchers' `field=value`: whether each state has that value is known here.
      const b = fb.byValue.get(v);
      if (b) {
        const known = NEW_MATCHES | (pv === v ? OLD_MATCHES : 0);
        for (const w of b) w.deliver(e, known);
      }
      if (e.prev && pv !== v) {
        const pb = fb.byValue.get(pv as string);
        if (pb) for (const w of pb) w.deliver(e, OLD_MATCHES);
      }
    }
  }

  /** Current objects matching a filter, using the namespace and object indexes where possible. */
  select(filter: WatchFilter): KubeObject[] {
    const matchFields = filter.fields.bind(this.info);
    let candidates: Iterable<KubeObject> = this.objects.values(filter.namespace);
    for (const [field, idx] of this.objIndexes) {
      const v = filter.fields.exactValue(field);
      if (v !== undefined) {
        const keys = idx.byValue.get(v);
        const objs: KubeObject[] = [];
        for (const k of keys ?? []) objs.push(this.objects.get(k)!);
        candidates = objs;
        break;
      }
    }
    const out: KubeObject[] = [];
    const ns = filter.namespace;
    const labels = filter.labels.empty() ? undefined : filter.labels;
    for (const o of candidates) {
      if (ns && o.metadata.namespace !== ns) continue;
      if (labels && !labels.matches(o.metadata.labels)) continue;
      if (!matchFields(o)) continue;
      out.push(o);
    }
    return out;
  }

  /**
   * Start a watcher. fromRv undefined: initial ADDED events for the current state. Otherwise replay retained
   * history after fromRv; ExpiredError when it no longer reaches back that far.
   */
  watch(
    filter: WatchFilter,
    fromRv: number | undefined,
    bookmarks: boolean,
    initialEvents: boolean,
    /** State at fromRv read from the backend, sent as ADDED events before the history after fromRv. */
    initial?: KubeObject[],
  ): WatcherImpl {
    const w = new WatcherImpl(filter, this.info, bookmarks, this.queueLimit);
    if (fromRv !== undefined && fromRv < this.windowStart) {
      throw new ExpiredError(`too old resource version: ${fromRv} (${this.windowStart + 1})`);
    }
    if (initial) for (const o of initial) if (w.matches(o)) w.push({ type: 'ADDED', object: o });
    if (fromRv === undefined || initialEvents) {
      for (const o of this.select(filter)) w.push({ type: 'ADDED', object: o });
      w.lastRv = this.lastRv;
      if (initialEvents && bookmarks) {
        w.push({
          type: 'BOOKMARK',
          object: this.bookmarkObject(this.lastRv, { 'k8s.io/initial-events-end': 'true' }),
        });
      }
    }
    if (fromRv !== undefined && !initialEvents) {
      const cap = this.history.length;
      for (let i = 0; i < this.histLen; i++) {
        const e = this.history[(this.histStart + i) % cap]!;
        if (e.rv > fromRv) w.deliver(e);
      }
      w.lastRv = Math.max(fromRv, w.lastRv);
    }
    w.minRv = fromRv !== undefined && !initialEvents ? Math.max(fromRv, w.lastRv) : this.lastRv;
    this.attach(w);
    return w;
  }

  private attach(w: WatcherImpl): void {
    const first = w.filter.fields.requirements.find((r) => r.operator === '=');
    let bucket: Bucket;
    if (first) {
      let fb = this.byField.get(first.field);
      if (!fb) {
        fb = { get: fieldGetter(this.info, first.field), byValue: new Map() };
        this.byField.set(first.field, fb);
      }
      let b = fb.byValue.get(first.value);
      if (!b) {
        b = new Set();
        fb.byValue.set(first.value, b);
      }
      bucket = b;
    } else if (w.filter.namespace) {
      let b = this.byNamespace.get(w.filter.namespace);
      if (!b) {
        b = new Set();
        this.byNamespace.set(w.filter.namespace, b);
      }
      bucket = b;
    } else bucket = this.all;
    bucket.add(w);
    this.watcherCount++;
    if (w.bookmarks) this.bookmarkers.add(w);
    w.onStop = () => {
      if (bucket.delete(w)) this.watcherCount--;
      this.bookmarkers.delete(w);
      if (bucket.size === 0 && bucket !== this.all) {
        if (first) {
          const fb = this.byField.get(first.field)!;
          fb.byValue.delete(first.value);
          if (fb.byValue.size === 0) this.byField.delete(first.field);
        } else this.byNamespace.delete(w.filter.namespace!);
      }
    };
  }

  bookmarkObject(rv: number, annotations?: Record<string, string>): KubeObject {
    return deepFreeze({
      apiVersion: this.info.apiVersion,
      kind: this.info.kind,
      metadata: { resourceVersion: String(rv), ...(annotations ? { annotations } : {}) },
    });
  }

  /** Send a BOOKMARK at `rv` to every watcher that asked for bookmarks. */
  bookmark(rv: number): void {
    if (this.bookmarkers.size === 0) return;
    const obj = this.bookmarkObject(rv);
    for (const w of this.bookmarkers) {
      if (rv >= w.lastRv) {
        w.push({ type: 'BOOKMARK', object: obj });
        w.lastRv = rv;
      }
    }
  }

  /** End every watcher with an ERROR event (e.g. the backend's watch broke). */
  failAll(err: StatusError): void {
    const status = err.toStatus();
    const all: WatcherImpl[] = [...this.all];
    for (const b of this.byNamespace.values()) all.push(...b);
    for (const fb of this.byField.values()) for (const b of fb.byValue.values()) all.push(...b);
    for (const w of all) w.fail(status);
  }

  stopAll(): void {
    const all: WatcherImpl[] = [...this.all];
    for (const b of this.byNamespace.values()) all.push(...b);
    for (const fb of this.byField.values()) for (const b of fb.byValue.values()) all.push(...b);
    for (const w of all) w.finish();
  }
}

export const matchAll: WatchFilter = { labels: everything, fields: everyField };
