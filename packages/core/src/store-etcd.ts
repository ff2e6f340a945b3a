// The etcd backend: objects are JSON values under `<prefix><group>/<resource>/[<namespace>/]<name>`,
// resourceVersion is the etcd mod revision, writes are compare-and-swap transactions on it. Watches are
// served like the API server's watch cache: one etcd watch per kind feeds an indexed fan-out; a watch
// from before the cache's window opens its own etcd watch, which etcd refuses once compacted (410).
// Several kemu processes sharing one etcd see one cluster state.
import { Etcd3, type IOptions, Range, type Watcher } from 'etcd3';
import type { KubeObject } from './api-meta.js';
import { AlreadyExistsError, ConflictError, ExpiredError, InternalError, NotFoundError, ServiceUnavailableError } from './errors.js';
import { deepFreeze } from './deep-freeze.js';
import { type HistoryEntry, KindCache, type WatchFilter, WatcherImpl } from './kind-cache.js';
import { everyField } from './fields.js';
import type { KindInfo } from './kinds.js';
import { everything } from './labels.js';
import { type AdmissionGuard, BaseStore, type BaseStoreOptions, type RawPage, StaleAdmissionError } from './store-base.js';
import type { Watch, WatchOptions } from './store.js';

export interface EtcdStoreOptions extends BaseStoreOptions {
  /** Client URLs, e.g. `http://127.0.0.1:2379`. */
  endpoints?: string | string[];
  /** Extra etcd3 client options (credentials, auth, ...). */
  clientOptions?: Omit<IOptions, 'hosts'>;
  /** Key prefix (default `/kemu/`), so several clusters can share one etcd. */
  prefix?: string;
  /** Events kept per kind in the watch cache (default 10,000). */
  historySize?: number;
  /** Keys per etcd range request when reading many objects (default 1,000; gRPC caps messages at 4 MiB). */
  rangePageSize?: number;
  noBootstrap?: boolean;
}

const COMPACTED = /compacted/i;

function wrapEtcdError(e: unknown): Error {
  const msg = (e as Error)?.message ?? String(e);
  if (COMPACTED.test(msg)) return new ExpiredError(`too old resource version: ${msg}`);
  if (/unavailable|ECONNREFUSED|deadline|No connections/i.test(msg)) return new ServiceUnavailableError(`etcd unavailable: ${msg}`);
  return new InternalError(`etcd: ${msg}`);
}

interface KindWatch {
  cache: KindCache;
  watcher: Watcher;
}

export class EtcdStore extends BaseStore {
  readonly client: Etcd3;
  readonly prefix: string;
  private readonly historySize: number;
  private readonly page: number;
  private readonly kinds = new Map<string, Promise<KindWatch>>();
  private readonly direct = new Set<{ watcher: Watcher; w: WatcherImpl }>();

  private constructor(options: EtcdStoreOptions) {
    super(options);
    const hosts = options.endpoints ?? 'http://127.0.0.1:2379';
    this.client = new Etcd3({ ...(options.clientOptions ?? {}), hosts });
    this.prefix = options.prefix ?? '/kemu/';
    this.historySize = options.historySize ?? 10_000;
    this.page = options.rangePageSize ?? 1000;
    this.startBookmarks();
  }

  static async open(options: EtcdStoreOptions = {}): Promise<EtcdStore> {
    const s = new EtcdStore(options);
    try {
      await s.currentRv();
      if (!options.noBootstrap) await s.bootstrap();
    } catch (e) {
      await s.close();
      throw e;
    }
    return s;
  }

  private kindPrefix(info: KindInfo): string {
    return `${this.prefix}${info.group || 'core'}/${info.resource}/`;
  }

  private key(info: KindInfo, key: string): string {
    return this.kindPrefix(info) + key;
  }

  private decode(value: Buffer | string, rev: string | number): KubeObject {
    const o = JSON.parse(value.toString()) as KubeObject;
    o.metadata.resourceVersion = String(rev);
    return deepFreeze(o);
  }

  private encode(obj: KubeObject): string {
    // The revision is the resourceVersion; storing it would only go stale.
    const { resourceVersion: _rv, ...meta } = obj.metadata;
    return JSON.stringify({ ...obj, metadata: meta });
  }

  protected async rawGet(info: KindInfo, key: string): Promise<KubeObject | undefined> {
    let res: Awaited<ReturnType<ReturnType<Etcd3['get']>['exec']>>;
    try {
      res = await this.client.get(this.key(info, key)).exec();
    } catch (e) {
      throw wrapEtcdError(e);
    }
    const kv = res.kvs[0];
    return kv ? this.decode(kv.value, kv.mod_revision) : undefined;
  }

  protected override async admissionGet(info: KindInfo, key: string): Promise<KubeObject | undefined> {
    const { cache } = await this.kindWatch(info);
    return cache.objects.get(key) ?? this.rawGet(info, key);
  }

  protected override async allOfKind(info: KindInfo): Promise<KubeObject[]> {
    const { cache } = await this.kindWatch(info);
    return [...cache.objects.values()];
  }

  protected async rawList(info: KindInfo, filter: WatchFilter, limit: number | undefined, after: string | undefined, atRv?: number): Promise<RawPage> {
    const base = this.kindPrefix(info) + (filter.namespace ? `${filter.namespace}/` : '');
    const end = Range.prefix(base).end;
    const matchFields = filter.fields.bind(info);
    const matches = (o: KubeObject) => filter.labels.matches(o.metadata.labels) && matchFields(o);
    const trivial = filter.labels.empty() && filter.fields.empty();
    const items: KubeObject[] = [];
    let start = after !== undefined ? `${this.kindPrefix(info)}${after}\0` : base;
    let rev = atRv;
    for (;;) {
      // Page through etcd at one revision: a single huge range would exceed gRPC's message limit.
      const batch = limit === undefined ? this.page : Math.min(Math.max(limit - items.length + 1, 256), this.page);
      let b = this.client.getAll().inRange(new Range(start, end)).limit(batch);
      if (rev !== undefined) b = b.revision(rev);
      let res: Awaited<ReturnType<typeof b.exec>>;
      try {
        res = await b.exec();
      } catch (e) {
        const err = wrapEtcdError(e);
        if (err instanceof ExpiredError) {
          throw new ExpiredError(
            'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
          );
        }
        throw err;
      }
      rev ??= Number(res.header.revision);
      let lastKey = '';
      for (const kv of res.kvs) {
        lastKey = kv.key.toString();
        const o = this.decode(kv.value, kv.mod_revision);
        if (!matches(o)) continue;
        items.push(o);
        if (limit !== undefined && items.length === limit) {
          const consumedAll = kv === res.kvs[res.kvs.length - 1] && !res.more;
          if (consumedAll) return { items, rv: rev };
          const nextKey = lastKey.slice(this.kindPrefix(info).length);
          const remaining = trivial ? Number(res.count) - res.kvs.indexOf(kv) - 1 : undefined;
          return { items, rv: rev, nextKey, remaining: remaining && remaining > 0 ? remaining : undefined };
        }
      }
      if (!res.more || res.kvs.length === 0) return { items, rv: rev };
      start = `${lastKey}\0`;
    }
  }

  protected async rawCreate(info: KindInfo, key: string, obj: KubeObject, guard?: AdmissionGuard): Promise<KubeObject> {
    const k = this.key(info, key);
    let res: Awaited<ReturnType<ReturnType<Etcd3['if']>['commit']>>;
    try {
      let txn = this.client.if(k, 'Create', '==', 0);
      if (guard) txn = txn.and(this.key(guard.info, guard.key), 'Mod', '==', Number(guard.rv));
      res = await txn.then(this.client.put(k).value(this.encode(obj))).else(this.client.get(k)).commit();
    } catch (e) {
      throw wrapEtcdError(e);
    }
    if (!res.succeeded) {
      if (res.responses[0]?.response_range?.kvs?.length) throw new AlreadyExistsError(this.ref(info, obj.metadata.name!));
      throw new StaleAdmissionError(`${guard?.info.kind} ${guard?.key} changed during admission`);
    }
    obj.metadata.resourceVersion = String(res.header.revision);
    return deepFreeze(obj);
  }

  protected async rawUpdate(info: KindInfo, key: string, obj: KubeObject, expectedRv: string): Promise<KubeObject> {
    const k = this.key(info, key);
    let res: Awaited<ReturnType<ReturnType<Etcd3['if']>['commit']>>;
    try {
      res = await this.client
        .if(k, 'Mod', '==', Number(expectedRv))
        .then(this.client.put(k).value(this.encode(obj)))
        .else(this.client.get(k))
        .commit();
    } catch (e) {
      throw wrapEtcdError(e);
    }
    if (!res.succeeded) {
      const found = res.responses[0]?.response_range?.kvs?.length;
      throw found ? new ConflictError(this.ref(info, obj.metadata.name!)) : new NotFoundError(this.ref(info, obj.metadata.name!));
    }
    obj.metadata.resourceVersion = String(res.header.revision);
    return deepFreeze(obj);
  }

  protected async rawDelete(info: KindInfo, key: string, expectedRv: string, last: KubeObject): Promise<KubeObject> {
    const k = this.key(info, key);
    let res: Awaited<ReturnType<ReturnType<Etcd3['if']>['commit']>>;
    try {
      res = await this.client
        .if(k, 'Mod', '==', Number(expectedRv))
        .then(this.client.delete().key(k))
        .else(this.client.get(k))
        .commit();
    } catch (e) {
      throw wrapEtcdError(e);
    }
    if (!res.succeeded) {
      const found = res.responses[0]?.response_range?.kvs?.length;
      throw found ? new ConflictError(this.ref(info, last.metadata.name!)) : new NotFoundError(this.ref(info, last.metadata.name!));
    }
    const gone = JSON.parse(JSON.stringify(last)) as KubeObject;
    gone.metadata.resourceVersion = String(res.header.revision);
    return deepFreeze(gone);
  }

  /** Translate one etcd watch event into a cache event. */
  private toEntry(kv: { key: Buffer; value: Buffer; mod_revision: string }, prev: { value: Buffer; mod_revision: string } | undefined, isDelete: boolean, cache?: KindCache): HistoryEntry | undefined {
    const rv = Number(kv.mod_revision);
    const prevObj = prev ? this.decode(prev.value, prev.mod_revision) : undefined;
    if (isDelete) {
      const last = prevObj ?? cache?.objects.get(kv.key.toString().slice(this.prefix.length).split('/').slice(2).join('/'));
      if (!last) return undefined;
      const gone = JSON.parse(JSON.stringify(last)) as KubeObject;
      gone.metadata.resourceVersion = String(rv);
      return { type: 'DELETED', obj: deepFreeze(gone), prev: last, rv };
    }
    const obj = this.decode(kv.value, rv);
    return { type: prevObj ? 'MODIFIED' : 'ADDED', obj, prev: prevObj, rv };
  }

  /** The kind's watch cache, started on first use: list at revision R, then watch from R+1. */
  private kindWatch(info: KindInfo): Promise<KindWatch> {
    let p = this.kinds.get(info.kind);
    if (!p) {
      p = this.startKindWatch(info);
      this.kinds.set(info.kind, p);
      p.catch(() => this.kinds.delete(info.kind));
    }
    return p;
  }

  private async startKindWatch(info: KindInfo): Promise<KindWatch> {
    const prefix = this.kindPrefix(info);
    const all = await this.rawList(info, { labels: everything, fields: everyField }, undefined, undefined);
    const rev = all.rv;
    const cache = new KindCache(info, { historySize: this.historySize, windowStart: rev });
    for (const o of all.items) cache.restore('ADDED', o, rev);
    cache.windowStart = rev;
    cache.lastRv = rev;
    const watcher = await this.client
      .watch()
      .prefix(prefix)
      .startRevision(String(rev + 1))
      .withPreviousKV()
      .create();
    watcher.on('data', (r) => {
      for (const ev of r.events) {
        const e = this.toEntry(ev.kv, ev.prev_kv ?? undefined, ev.type === 'Delete', cache);
        if (e) cache.apply(e.type, e.obj, e.prev, e.rv);
      }
      const hr = Number(r.header.revision);
      if (hr > cache.lastRv && r.events.length === 0) cache.lastRv = hr;
    });
    watcher.on('error', async (err) => {
      // The shared watch broke (e.g. compacted while disconnected): watchers must relist.
      this.kinds.delete(info.kind);
      const why = (await this.probeRevision(cache.lastRv)) ?? wrapEtcdError(err);
      cache.failAll(why instanceof ExpiredError ? why : new ExpiredError(`watch ended: ${why.message}`));
      watcher.cancel().catch(() => undefined);
    });
    return { cache, watcher };
  }

  protected async rawWatch(info: KindInfo, filter: WatchFilter, fromRv: number | undefined, opts: WatchOptions): Promise<Watch> {
    const { cache } = await this.kindWatch(info);
    const bookmarks = opts.allowBookmarks === true;
    if (fromRv === undefined || opts.sendInitialEvents) {
      // Consistent initial state: read etcd now, then follow the cache from that revision.
      const page = await this.rawList(info, filter, undefined, undefined);
      const at = fromRv === undefined ? page.rv : fromRv;
      const initial = fromRv === undefined ? page.items : (await this.rawList(info, filter, undefined, undefined, fromRv)).items;
      const w = cache.watch(filter, at, bookmarks, false, initial);
      if (opts.sendInitialEvents && bookmarks) {
        w.push({ type: 'BOOKMARK', object: cache.bookmarkObject(at, { 'k8s.io/initial-events-end': 'true' }) });
      }
      return w;
    }
    if (fromRv >= cache.windowStart) return cache.watch(filter, fromRv, bookmarks, false);
    return this.directWatch(info, filter, fromRv, bookmarks);
  }

  /** Classify a failed etcd watch from `fromRv`: compacted history is 410 Expired. */
  private async probeRevision(fromRv: number): Promise<Error | undefined> {
    try {
      await this.client.get(`${this.prefix}\0revision-probe`).revision(fromRv + 1).exec();
      return undefined;
    } catch (e) {
      const err = wrapEtcdError(e);
      if (err instanceof ExpiredError) return new ExpiredError(`too old resource version: ${fromRv} (etcd history is compacted)`);
      // A revision in the future is fine for a watch: it waits for it.
      return /future revision/.test((e as Error).message) ? undefined : err;
    }
  }

  /** A watch from before the cache window: its own etcd watch (etcd says if it was compacted). */
  private async directWatch(info: KindInfo, filter: WatchFilter, fromRv: number, bookmarks: boolean): Promise<Watch> {
    const early = await this.probeRevision(fromRv);
    if (early) throw early;
    const w = new WatcherImpl(filter, info, bookmarks);
    w.minRv = fromRv;
    let watcher: Watcher;
    try {
      watcher = await this.client.watch().prefix(this.kindPrefix(info)).startRevision(String(fromRv + 1)).withPreviousKV().create();
    } catch (e) {
      throw wrapEtcdError(e);
    }
    const entry = { watcher, w };
    this.direct.add(entry);
    watcher.on('error', async (err) => {
      // etcd cancels a watch whose start was compacted meanwhile without saying so: ask etcd.
      const why = (await this.probeRevision(w.lastRv || fromRv)) ?? wrapEtcdError(err);
      w.fail((why as ExpiredError).toStatus?.() ?? new InternalError(why.message).toStatus());
      this.direct.delete(entry);
    });
    watcher.on('data', (r) => {
      for (const ev of r.events) {
        const e = this.toEntry(ev.kv, ev.prev_kv ?? undefined, ev.type === 'Delete');
        if (e) w.deliver(e);
      }
    });
    w.onStop = () => {
      this.direct.delete(entry);
      watcher.cancel().catch(() => undefined);
    };
    return w;
  }

  protected async currentRv(): Promise<number> {
    try {
      const res = await this.client.get(`${this.prefix}\0revision-probe`).exec();
      return Number(res.header.revision);
    } catch (e) {
      throw wrapEtcdError(e);
    }
  }

  protected sendBookmarks(): void {
    for (const p of this.kinds.values()) p.then((k) => k.cache.bookmark(k.cache.lastRv)).catch(() => undefined);
  }

  /** Compact etcd history up to `rv` (watches and continues from before it get 410). */
  async compact(rv: number): Promise<void> {
    try {
      await this.client.kv.compact({ revision: String(rv), physical: true });
    } catch (e) {
      throw wrapEtcdError(e);
    }
    // This process's watch caches honour the compaction too (other processes' caches keep their window).
    for (const p of this.kinds.values()) (await p.catch(() => undefined))?.cache.compact(rv);
  }

  override async close(): Promise<void> {
    if (this.closed) return;
    await super.close();
    for (const p of this.kinds.values()) {
      const k = await p.catch(() => undefined);
      if (k) {
        k.cache.stopAll();
        await k.watcher.cancel().catch(() => undefined);
      }
    }
    for (const d of this.direct) {
      d.w.finish();
      await d.watcher.cancel().catch(() => undefined);
    }
    this.client.close();
  }
}

/** Connect to etcd (system namespaces are created if missing). */
export function createEtcdStore(options: EtcdStoreOptions = {}): Promise<EtcdStore> {
  return EtcdStore.open(options);
}

