// Shared informers: list, then watch from the list's resourceVersion into an indexed cache, calling event
// handlers; relist when the watch reports 410 (history compacted), back off on other errors, resync
// handlers periodically. One informer per kind and selector is shared through an InformerFactory.
// Every failed list or watch is reported (`failed to list *v1.Node: ...`, once per backoff step, as a
// reflector logs it), and a cache still unsynced while someone waits for it is reported with its last error.
import { type KubeObject, objectKey } from './api-meta.js';
import { isGone, isStatusError, StatusError } from './errors.js';
import { type IndexFunc, Indexer, Lister } from './indexer.js';
import { lookupKind, type ObjectOf } from './kinds.js';
import type { SelectorInput, Store, Watch } from './store.js';

export interface EventHandler<T> {
  /** `initialList` is true for objects delivered by a (re)list rather than a watch event. */
  onAdd?(obj: T, initialList: boolean): void;
  /** Also called with old === new on resync. */
  onUpdate?(oldObj: T, newObj: T): void;
  /** `finalStateUnknown`: the deletion was detected by a relist; `obj` is the last state seen. */
  onDelete?(obj: T, finalStateUnknown: boolean): void;
}

export interface InformerOptions {
  namespace?: string;
  labelSelector?: SelectorInput;
  fieldSelector?: string;
  /** Call onUpdate(obj, obj) for every cached object this often (0 = never). */
  resyncPeriodMs?: number;
  /** Page size of the initial list (0 = one request). */
  pageSize?: number;
  /**
   * Called for handler exceptions and list/watch failures; the informer retries. Default: the handler set
   * for its store with setInformerErrorHandler, else ignored.
   */
  onError?(err: unknown): void;
  /** While a waitForSync is pending, report the unsynced cache and its last error this often (default 30 s; 0 = never). */
  syncReportMs?: number;
}

const SYNC_REPORT_MS = 30_000;
const errorHandlers = new WeakMap<Store, (err: unknown) => void>();

/**
 * Where informers reading through `store` report their failures when not given an onError of their own: the
 * component whose identity the store carries, so a list refused for a missing RBAC rule names that component.
 */
export function setInformerErrorHandler(store: Store, onError: (err: unknown) => void): void {
  errorHandlers.set(store, onError);
}

/** The Go type a reflector names in its messages: `*v1.Node`, `*v1.VolumeAttachment`. */
function typeName(kind: string): string {
  const version = lookupKind(kind)?.version;
  return version ? `*${version}.${kind}` : `*${kind}`;
}

/** A list/watch failure as a reflector reports it, keeping a Status error's reason and code. */
function listWatchError(verb: 'list' | 'watch', kind: string, err: unknown): Error {
  const message = `failed to ${verb} ${typeName(kind)}: ${err instanceof Error ? err.message : String(err)}`;
  if (isStatusError(err)) return new StatusError(err.reason, err.code, message, err.details);
  return new Error(message, { cause: err });
}

interface Registration<T> {
  handler: EventHandler<T>;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

export class SharedInformer<K extends string = string, T extends KubeObject = ObjectOf<K>> {
  readonly indexer: Indexer<T>;
  readonly lister: Lister<T>;
  private readonly handlers = new Set<Registration<T>>();
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private abort: AbortController | undefined;
  private watch: Watch | undefined;
  private running: Promise<void> | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  /** resourceVersion of the last list or event processed. */
  lastSyncResourceVersion = '';
  /** Number of full lists done (1 after the first sync; more after 410 relists). */
  listCount = 0;
  /** The last list or watch failure as reported (undefined once a list succeeds). */
  lastError: Error | undefined;
  private syncReportTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly store: Store,
    readonly kind: K,
    readonly options: InformerOptions = {},
  ) {
    this.indexer = new Indexer<T>();
    this.lister = new Lister(this.indexer);
  }

  addIndexers(indexers: Record<string, IndexFunc<T>>): void {
    this.indexer.addIndexers(indexers);
  }

  /** Register handlers; if the cache is already filled, onAdd is called for every cached object. */
  addEventHandler(handler: EventHandler<T>): { remove(): void } {
    const reg = { handler };
    this.handlers.add(reg);
    if (this.synced) for (const o of this.indexer.list()) this.call(() => handler.onAdd?.(o, true));
    return { remove: () => this.handlers.delete(reg) };
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves true once the first list is in the cache, false if stopped (or the signal aborts) first. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.synced) return Promise.resolve(true);
    this.armSyncReport();
    return new Promise((resolve) => {
      const onAbort = () => resolve(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve(this.synced);
      });
    });
  }

  /** Start list+watch in the background (idempotent). */
  start(): void {
    if (this.running) return;
    this.abort = new AbortController();
    this.running = this.loop(this.abort.signal);
    const every = this.options.resyncPeriodMs ?? 0;
    if (every > 0) {
      this.resyncTimer = setInterval(() => this.resync(), every);
      this.resyncTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.abort?.abort();
    this.watch?.stop();
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.disarmSyncReport();
    await this.running;
    this.running = undefined;
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private report(err: unknown): void {
    (this.options.onError ?? errorHandlers.get(this.store))?.(err);
  }

  private failed(verb: 'list' | 'watch', err: unknown): void {
    this.lastError = listWatchError(verb, this.kind, err);
    this.report(this.lastError);
  }

  /** Upstream's WaitForCacheSync blocks in silence; here a wait that lasts says which cache and why. */
  private armSyncReport(): void {
    const every = this.options.syncReportMs ?? SYNC_REPORT_MS;
    if (every <= 0 || this.syncReportTimer) return;
    const since = Date.now();
    this.syncReportTimer = setInterval(() => {
      if (this.synced) return this.disarmSyncReport();
      const waited = Math.round((Date.now() - since) / 1000);
      const why = this.lastError ? `last error: ${this.lastError.message}` : 'no list has answered yet';
      this.report(new Error(`waiting for caches to sync: ${typeName(this.kind)} has not synced after ${waited}s (${why})`));
    }, every);
    this.syncReportTimer.unref();
  }

  private disarmSyncReport(): void {
    if (this.syncReportTimer) clearInterval(this.syncReportTimer);
    this.syncReportTimer = undefined;
  }

  private call(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.report(e);
    }
  }

  private resync(): void {
    if (!this.synced) return;
    for (const o of this.indexer.list()) for (const r of this.handlers) this.call(() => r.handler.onUpdate?.(o, o));
  }

  private async list(): Promise<{ items: T[]; rv: string }> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.store.list(this.kind, {
        namespace: this.options.namespace,
        labelSelector: this.options.labelSelector,
        fieldSelector: this.options.fieldSelector,
        limit: this.options.pageSize || undefined,
        continue: cont,
      });
      items.push(...(page.items as unknown as T[]));
      cont = page.metadata.continue;
      rv ||= page.metadata.resourceVersion ?? '';
    } while (cont);
    return { items, rv };
  }

  /** Replace the cache with a fresh list, emitting the differences. */
  private replace(items: T[]): void {
    const seen = new Set<string>();
    for (const o of items) {
      const key = objectKey(o);
      seen.add(key);
      const old = this.indexer.upsert(o);
      if (!old) for (const r of this.handlers) this.call(() => r.handler.onAdd?.(o, true));
      else if (old.metadata.resourceVersion !== o.metadata.resourceVersion) {
        for (const r of this.handlers) this.call(() => r.handler.onUpdate?.(old, o));
      }
    }
    for (const key of this.indexer.keys()) {
      if (seen.has(key)) continue;
      const old = this.indexer.remove(key)!;
      for (const r of this.handlers) this.call(() => r.handler.onDelete?.(old, true));
    }
  }

  private async loop(signal: AbortSignal): Promise<void> {
    let backoff = 100;
    while (!signal.aborted) {
      try {
        const { items, rv } = await this.list();
        if (signal.aborted) break;
        this.replace(items);
        this.listCount++;
        this.lastSyncResourceVersion = rv;
        this.lastError = undefined;
        if (!this.synced) {
          this.synced = true;
          this.disarmSyncReport();
          for (const w of this.syncWaiters.splice(0)) w();
        }
        backoff = 100;
        await this.watchLoop(signal);
      } catch (e) {
        if (signal.aborted) break;
        if (isGone(e)) {
          this.report(e);
          continue; // relist at once
        }
        this.failed('list', e); // watchLoop throws only a 410
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 30_000);
      }
    }
  }

  /** Watch from lastSyncResourceVersion until a 410 (throws, to relist) or stop. */
  private async watchLoop(signal: AbortSignal): Promise<void> {
    let backoff = 100;
    while (!signal.aborted) {
      let w: Watch;
      try {
        w = await this.store.watch(this.kind, {
          namespace: this.options.namespace,
          labelSelector: this.options.labelSelector,
          fieldSelector: this.options.fieldSelector,
          resourceVersion: this.lastSyncResourceVersion,
          allowBookmarks: true,
        });
      } catch (e) {
        if (isGone(e) || signal.aborted) throw e;
        this.failed('watch', e);
        await sleep(backoff, signal);
        backoff = Math.min(backoff * 2, 30_000);
        continue;
      }
      this.watch = w;
      if (signal.aborted) {
        w.stop();
        return;
      }
      let ended = false;
      for await (const ev of w) {
        if (ev.type === 'ERROR') {
          const err = ev.object.code ? new StatusError(ev.object.reason, ev.object.code, ev.object.message) : new Error('watch error');
          if (isStatusError(err) && err.code === 410) throw err;
          this.failed('watch', err);
          ended = true;
          break;
        }
        const obj = ev.object as unknown as T;
        const rv = obj.metadata.resourceVersion;
        if (ev.type === 'BOOKMARK') {
          if (rv) this.lastSyncResourceVersion = rv;
          continue;
        }
        const key = objectKey(obj);
        if (ev.type === 'DELETED') {
          const old = this.indexer.remove(key);
          for (const r of this.handlers) this.call(() => r.handler.onDelete?.(old ?? obj, false));
        } else {
          const old = this.indexer.upsert(obj);
          if (old) for (const r of this.handlers) this.call(() => r.handler.onUpdate?.(old, obj));
          else for (const r of this.handlers) this.call(() => r.handler.onAdd?.(obj, false));
        }
        if (rv) this.lastSyncResourceVersion = rv;
      }
      if (!ended) {
        backoff = 100;
        continue;
      }
      // A watch that ends in an error is retried with backoff, so a refused watch is one line per step.
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, 30_000);
    }
  }
}

/** Shares one informer per (kind, namespace, selectors) among controllers. */
export class InformerFactory {
  private readonly informers = new Map<string, SharedInformer<string, KubeObject>>();
  private started = false;

  constructor(
    readonly store: Store,
    readonly defaults: Pick<InformerOptions, 'resyncPeriodMs' | 'onError' | 'pageSize'> = {},
  ) {}

  informer<K extends string>(kind: K, opts: Omit<InformerOptions, 'resyncPeriodMs'> = {}): SharedInformer<K> {
    const id = JSON.stringify([kind, opts.namespace ?? '', String(opts.labelSelector ?? ''), opts.fieldSelector ?? '']);
    let inf = this.informers.get(id);
    if (!inf) {
      inf = new SharedInformer(this.store, kind, { ...this.defaults, ...opts }) as unknown as SharedInformer<string, KubeObject>;
      this.informers.set(id, inf);
      if (this.started) inf.start();
    }
    return inf as unknown as SharedInformer<K>;
  }

  start(): void {
    this.started = true;
    for (const i of this.informers.values()) i.start();
  }

  async waitForCacheSync(signal?: AbortSignal): Promise<boolean> {
    const r = await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
    return r.every(Boolean);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.started = false;
  }
}
