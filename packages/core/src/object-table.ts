// A kind cache's current objects by storage key. Most kinds are held as the frozen objects the store hands
// out, so a read costs nothing. Kinds that are written often, read rarely and never watched in bulk by the
// cluster's own components (Events) are held as JSON text instead: one string per object, which the garbage
// collector marks without visiting a single field, where the object form costs it some twenty objects.
// kube-apiserver makes the same trade: Events have no watch cache and every read goes to storage.
import type { KubeObject } from './api-meta.js';
import { deepFreeze } from './deep-freeze.js';

/** Kinds whose current objects are kept as JSON text. */
export const TEXT_KINDS: ReadonlySet<string> = new Set(['Event']);

export class ObjectTable {
  private readonly m = new Map<string, KubeObject | string>();

  constructor(readonly asText = false) {}

  get size(): number {
    return this.m.size;
  }

  has(key: string): boolean {
    return this.m.has(key);
  }

  /** The stored object (frozen); a text-held kind's is decoded afresh on each read. */
  get(key: string): KubeObject | undefined {
    const v = this.m.get(key);
    return typeof v === 'string' ? decode(v) : v;
  }

  set(key: string, obj: KubeObject): void {
    this.m.set(key, this.asText ? JSON.stringify(obj) : obj);
  }

  delete(key: string): boolean {
    return this.m.delete(key);
  }

  /**
   * Every object; with `namespace`, a text-held kind decodes only that namespace's (its keys start with
   * `<namespace>/`), while other kinds may still yield the rest for the caller to filter.
   */
  values(namespace?: string): IterableIterator<KubeObject> {
    if (!this.asText) return (this.m as Map<string, KubeObject>).values();
    return namespace ? decodeIn(this.m.entries(), `${namespace}/`) : decodeAll(this.m.values());
  }

  entries(): IterableIterator<[string, KubeObject]> {
    return this.asText ? decodeEntries(this.m.entries()) : (this.m as Map<string, KubeObject>).entries();
  }

  [Symbol.iterator](): IterableIterator<[string, KubeObject]> {
    return this.entries();
  }
}

function decode(text: string): KubeObject {
  return deepFreeze(JSON.parse(text) as KubeObject);
}

function* decodeAll(it: IterableIterator<KubeObject | string>): IterableIterator<KubeObject> {
  for (const v of it) yield typeof v === 'string' ? decode(v) : v;
}

function* decodeIn(it: IterableIterator<[string, KubeObject | string]>, prefix: string): IterableIterator<KubeObject> {
  for (const [k, v] of it) if (k.startsWith(prefix)) yield typeof v === 'string' ? decode(v) : v;
}

function* decodeEntries(it: IterableIterator<[string, KubeObject | string]>): IterableIterator<[string, KubeObject]> {
  for (const [k, v] of it) yield [k, typeof v === 'string' ? decode(v) : v];
}
