// The embedded default backend: objects live in per-kind caches in this process. One global
// resourceVersion counter orders every change, as etcd's revision does.
import type { KubeObject } from './api-meta.js';
import { AlreadyExistsError, ConflictError, ExpiredError, NotFoundError } from './errors.js';
import { deepFreeze } from './deep-freeze.js';
import { KindCache, storageKey, type WatchFilter } from './kind-cache.js';
import { type KindInfo, kindInfo } from './kinds.js';
import { type AdmissionGuard, BaseStore, type BaseStoreOptions, type RawPage, StaleAdmissionError } from './store-base.js';
import type { Watch, WatchOptions } from './store.js';

export interface MemoryStoreOptions extends BaseStoreOptions {
  /** Events kept per kind for watches that resume from an older resourceVersion. Default 10,000. */
  historySize?: number;
  /** Skip creating the system namespaces and priority classes. */
  noBootstrap?: boolean;
  /** Undelivered events a watch may accumulate before it is ended with 410 (default 1,000,000). */
  watchQueueLimit?: number;
}

/** Fields with an object index for lists (the kubelet lists its pods by spec.nodeName). */
const INDEXED_FIELDS: Record<string, string[]> = { Pod: ['spec.nodeName'] };

export interface CommitRecord {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  kind: string;
  key: string;
  rv: number;
  /** The stored object (for DELETED, its last state). */
  obj: KubeObject;
}

export class MemoryStore extends BaseStore {
  protected rv = 0;
  protected readonly caches = new Map<string, KindCache>();
  /** owner uid -> `${kind}\0${key}` of dependents. */
  private readonly owners = new Map<string, Set<string>>();
  protected readonly historySize: number;

  constructor(protected readonly options: MemoryStoreOptions = {}) {
    super(options);
    this.historySize = options.historySize ?? 10_000;
    this.startBookmarks();
  }

  /** A ready memory store with the system namespaces and priority classes. */
  static async open(options: MemoryStoreOptions = {}): Promise<MemoryStore> {
    const s = new MemoryStore(options);
    if (!options.noBootstrap) await s.bootstrap();
    return s;
  }

  protected cache(info: KindInfo): KindCache {
    let c = this.caches.get(info.kind);
    if (!c) {
      c = new KindCache(info, {
        historySize: this.historySize,
        windowStart: this.windowBase(),
        indexedFields: INDEXED_FIELDS[info.kind],
        watchQueueLimit: this.options.watchQueueLimit,
      });
      this.caches.set(info.kind, c);
    }
    return c;
  }

  /** resourceVersion from which a new kind cache's history is complete. */
  protected windowBase(): number {
    return 0;
  }

  /** Durability hook: the file backend returns a promise that settles once the record is on disk. */
  protected persist(_rec: CommitRecord): Promise<void> | undefined {
    return undefined;
  }

  /** Apply one change in memory (synchronously, so later operations see it) and persist it. */
  protected commit(info: KindInfo, type: CommitRecord['type'], key: string, obj: KubeObject, prev: KubeObject | undefined): Promise<void> | undefined {
    const rv = ++this.rv;
    obj.metadata.resourceVersion = String(rv);
    deepFreeze(obj);
    this.cache(info).apply(type, obj, prev, rv);
    this.indexOwners(info.kind, key, type === 'DELETED' ? undefined : obj, prev);
    return this.persist({ type, kind: info.kind, key, rv, obj });
  }

  /** Load one object during recovery (no events, no history). */
  protected restoreObject(info: KindInfo, type: CommitRecord['type'], key: string, obj: KubeObject, rv: number): void {
    const prev = this.caches.get(info.kind)?.objects.get(key);
    deepFreeze(obj);
    this.cache(info).restore(type, obj, rv);
    this.indexOwners(info.kind, key, type === 'DELETED' ? undefined : obj, prev);
    if (rv > this.rv) this.rv = rv;
  }

  private indexOwners(kind: string, key: string, obj: KubeObject | undefined, prev: KubeObject | undefined): void {
    const before = prev?.metadata.ownerReferences;
    const after = obj?.metadata.ownerReferences;
    if (!before && !after) return;
    const id = `${kind}\0${key}`;
    for (const r of before ?? []) this.owners.get(r.uid)?.delete(id);
    for (const r of after ?? []) {
      let s = this.owners.get(r.uid);
      if (!s) {
        s = new Set();
        this.owners.set(r.uid, s);
      }
      s.add(id);
    }
  }

  protected override async findDependents(uid: string): Promise<KubeObject[]> {
    const out: KubeObject[] = [];
    for (const id of this.owners.get(uid) ?? []) {
      const [kind, key] = id.split('\0');
      const o = this.caches.get(kind)?.objects.get(key);
      if (o) out.push(o);
    }
    return out;
  }

  protected override async allOfKind(info: KindInfo): Promise<KubeObject[]> {
    return [...(this.caches.get(info.kind)?.objects.values() ?? [])];
  }

  protected async rawGet(info: KindInfo, key: string): Promise<KubeObject | undefined> {
    return this.caches.get(info.kind)?.objects.get(key);
  }

  protected async rawList(info: KindInfo, filter: WatchFilter, limit: number | undefined, after: string | undefined, atRv?: number): Promise<RawPage> {
    const c = this.cache(info);
    if (atRv !== undefined && atRv < c.windowStart) {
      throw new ExpiredError(
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
      );
    }
    let items = c.select(filter);
    if (limit === undefined && after === undefined) return { items, rv: this.rv };
    const keyed = items.map((o) => [storageKey(o.metadata.namespace, o.metadata.name!), o] as const);
    keyed.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    let start = 0;
    if (after !== undefined) {
      // First key strictly greater than `after` (binary search).
      let lo = 0;
      let hi = keyed.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (keyed[mid][0] <= after) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
    const end = limit === undefined ? keyed.length : Math.min(keyed.length, start + limit);
    items = keyed.slice(start, end).map((k) => k[1]);
    const more = end < keyed.length;
    return { items, rv: this.rv, nextKey: more ? keyed[end - 1][0] : undefined, remaining: more ? keyed.length - end : undefined };
  }

  protected async rawCreate(info: KindInfo, key: string, obj: KubeObject, guard?: AdmissionGuard): Promise<KubeObject> {
    if (this.caches.get(info.kind)?.objects.has(key)) throw new AlreadyExistsError(this.ref(info, obj.metadata.name!));
    if (guard && this.caches.get(guard.info.kind)?.objects.get(guard.key)?.metadata.resourceVersion !== guard.rv) {
      throw new StaleAdmissionError(`${guard.info.kind} ${guard.key} changed during admission`);
    }
    const p = this.commit(info, 'ADDED', key, obj, undefined);
    if (p) await p;
    return obj;
  }

  protected async rawUpdate(info: KindInfo, key: string, obj: KubeObject, expectedRv: string): Promise<KubeObject> {
    const cur = this.caches.get(info.kind)?.objects.get(key);
    if (!cur) throw new NotFoundError(this.ref(info, obj.metadata.name!));
    if (cur.metadata.resourceVersion !== expectedRv) throw new ConflictError(this.ref(info, obj.metadata.name!));
    const p = this.commit(info, 'MODIFIED', key, obj, cur);
    if (p) await p;
    return obj;
  }

  protected async rawDelete(info: KindInfo, key: string, expectedRv: string, last: KubeObject): Promise<KubeObject> {
    const cur = this.caches.get(info.kind)?.objects.get(key);
    if (!cur) throw new NotFoundError(this.ref(info, last.metadata.name!));
    if (cur.metadata.resourceVersion !== expectedRv) throw new ConflictError(this.ref(info, last.metadata.name!));
    const gone = JSON.parse(JSON.stringify(last)) as KubeObject;
    const p = this.commit(info, 'DELETED', key, gone, cur);
    if (p) await p;
    return gone;
  }

  protected async rawWatch(info: KindInfo, filter: WatchFilter, fromRv: number | undefined, opts: WatchOptions): Promise<Watch> {
    return this.cache(info).watch(filter, fromRv, opts.allowBookmarks === true, fromRv !== undefined && opts.sendInitialEvents === true);
  }

  protected async currentRv(): Promise<number> {
    return this.rv;
  }

  protected sendBookmarks(): void {
    for (const c of this.caches.values()) c.bookmark(this.rv);
  }

  /** Drop watch history up to `rv`: later watches from an older resourceVersion get 410 Expired. */
  compact(rv: number = this.rv): void {
    for (const c of this.caches.values()) c.compact(rv);
  }

  /** Number of stored objects of a kind (cheap; for tests and benchmarks). */
  count(kind: string): number {
    return this.caches.get(kindInfo(kind).kind)?.objects.size ?? 0;
  }

  override async close(): Promise<void> {
    await super.close();
    for (const c of this.caches.values()) c.stopAll();
  }
}

/** Create a ready memory store (system namespaces and priority classes included). */
export function createMemoryStore(options: MemoryStoreOptions = {}): Promise<MemoryStore> {
  return MemoryStore.open(options);
}
