import { aborted } from './errors.js';

/**
 * Refuses a second operation on the same key while one is in flight. The spec asks for ABORTED in that
 * case so the caller retries later instead of two operations racing on one volume.
 */
export class OperationLocks {
  private readonly held = new Set<string>();

  async with<T>(keys: string[], what: string, fn: () => Promise<T>): Promise<T> {
    const uniq = [...new Set(keys)];
    for (const k of uniq) {
      if (this.held.has(k)) throw aborted(`an operation on ${k} is already in progress; retry ${what} later`);
    }
    for (const k of uniq) this.held.add(k);
    try {
      return await fn();
    } finally {
      for (const k of uniq) this.held.delete(k);
    }
  }

  get size(): number {
    return this.held.size;
  }
}
