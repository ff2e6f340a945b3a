// A thread-safe-by-construction (single-threaded) object cache with named secondary indexes, and the
// listers that read it: the shape client-go's Indexer/Lister gives controllers.
import { type KubeObject, objectKey } from './api-meta.js';
import { type Selector, toSelector } from './labels.js';
import type { SelectorInput } from './store.js';

/** Values an object is indexed under (e.g. its spec.nodeName). Return [] to leave it out. */
export type IndexFunc<T> = (obj: T) => string[];

export const NAMESPACE_INDEX = 'namespace';
export const namespaceIndexFunc: IndexFunc<KubeObject> = (o) => [o.metadata.namespace ?? ''];
/** Pods by the node they are bound to (unbound pods are not indexed). */
export const NODE_NAME_INDEX = 'spec.nodeName';
export const nodeNameIndexFunc: IndexFunc<KubeObject> = (o) => (o.spec?.nodeName ? [o.spec.nodeName] : []);

export class Indexer<T extends KubeObject = KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexers = new Map<string, IndexFunc<T>>();
  private readonly indices = new Map<string, Map<string, Set<string>>>();
  /** The indexes as a list, for the per-change loop. */
  private all: { fn: IndexFunc<T>; idx: Map<string, Set<string>> }[] = [];

  constructor(indexers: Record<string, IndexFunc<T>> = {}) {
    this.addIndexers({ [NAMESPACE_INDEX]: namespaceIndexFunc as IndexFunc<T>, ...indexers });
  }

  /** Add indexes; existing items are indexed immediately. */
  addIndexers(indexers: Record<string, IndexFunc<T>>): void {
    for (const [name, fn] of Object.entries(indexers)) {
      if (this.indexers.has(name) && this.indexers.get(name) !== fn) throw new Error(`indexer "${name}" already exists`);
      this.indexers.set(name, fn);
      const idx = new Map<string, Set<string>>();
      this.indices.set(name, idx);
      for (const [key, obj] of this.items) this.addKey(idx, key, fn(obj));
    }
    this.all = [...this.indexers].map(([name, fn]) => ({ fn, idx: this.indices.get(name)! }));
  }

  private addKey(idx: Map<string, Set<string>>, key: string, values: string[]): void {
    for (const v of values) {
      let s = idx.get(v);
      if (!s) {
        s = new Set();
        idx.set(v, s);
      }
      s.add(key);
    }
  }

  private removeKey(idx: Map<string, Set<string>>, key: string, values: string[]): void {
    for (const v of values) {
      const s = idx.get(v);
      if (!s) continue;
      s.delete(key);
      if (s.size === 0) idx.delete(v);
    }
  }

  /** Insert or replace; returns the previous object. An index whose values did not change is left alone. */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    for (const { fn, idx } of this.all) {
      const values = fn(obj);
      if (old) {
        const before = fn(old);
        if (sameValues(before, values)) continue;
        this.removeKey(idx, key, before);
      }
      this.addKey(idx, key, values);
    }
    this.items.set(key, obj);
    return old;
  }

  /** Remove by key; returns the removed object. */
  remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    for (const { fn, idx } of this.all) this.removeKey(idx, key, fn(old));
    this.items.delete(key);
    return old;
  }

  getByKey(key: string): T | undefined {
    return this.items.get(key);
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.items.get(namespace ? `${namespace}/${name}` : name);
  }

  list(): T[] {
    return [...this.items.values()];
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  get size(): number {
    return this.items.size;
  }

  /** Objects whose index function returned `value` for index `name`. */
  byIndex(name: string, value: string): T[] {
    const idx = this.indices.get(name);
    if (!idx) throw new Error(`index "${name}" does not exist`);
    const out: T[] = [];
    for (const k of idx.get(value) ?? []) out.push(this.items.get(k)!);
    return out;
  }

  indexKeys(name: string, value: string): string[] {
    const idx = this.indices.get(name);
    if (!idx) throw new Error(`index "${name}" does not exist`);
    return [...(idx.get(value) ?? [])];
  }

  /** All values present in an index. */
  indexValues(name: string): string[] {
    const idx = this.indices.get(name);
    if (!idx) throw new Error(`index "${name}" does not exist`);
    return [...idx.keys()];
  }

  clear(): void {
    this.items.clear();
    for (const idx of this.indices.values()) idx.clear();
  }
}

function sameValues(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Read-only view over an Indexer with selector filtering (client-go's Lister). */
export class Lister<T extends KubeObject = KubeObject> {
  constructor(private readonly indexer: Indexer<T>) {}

  /** All objects, optionally filtered by a label selector. */
  list(selector?: SelectorInput): T[] {
    const sel: Selector = toSelector(selector);
    const all = this.indexer.list();
    return sel.empty() ? all : all.filter((o) => sel.matches(o.metadata.labels));
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.indexer.get(namespace, name);
  }

  byIndex(name: string, value: string): T[] {
    return this.indexer.byIndex(name, value);
  }

  /** Lister restricted to one namespace. */
  namespace(ns: string): { list(selector?: SelectorInput): T[]; get(name: string): T | undefined } {
    return {
      list: (selector) => {
        const sel = toSelector(selector);
        return this.indexer.byIndex(NAMESPACE_INDEX, ns).filter((o) => sel.matches(o.metadata.labels));
      },
      get: (name) => this.indexer.get(ns, name),
    };
  }
}
