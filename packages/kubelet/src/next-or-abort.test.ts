import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { nextOrAbort } from './next-or-abort.js';

async function* counter(n: number) {
  for (let i = 0; i < n; i++) yield i;
  await new Promise(() => {}); // then quiet forever, like an idle event stream
}

describe('nextOrAbort', () => {
  it('reads items without leaving a listener behind per item', async () => {
    const abort = new AbortController();
    const it = counter(500)[Symbol.asyncIterator]();
    const seen: number[] = [];
    for (let i = 0; i < 500; i++) {
      const r = await nextOrAbort(it, abort.signal);
      if (r === 'aborted' || r.done) break;
      seen.push(r.value);
    }
    expect(seen).toHaveLength(500);
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
  });

  it('answers aborted while the iterator is quiet, and at once when already aborted', async () => {
    const abort = new AbortController();
    const it = counter(0)[Symbol.asyncIterator]();
    const waiting = nextOrAbort(it, abort.signal);
    abort.abort();
    expect(await waiting).toBe('aborted');
    expect(await nextOrAbort(it, abort.signal)).toBe('aborted');
  });

  it('passes an iterator failure on', async () => {
    const failing: AsyncIterator<number> = { next: () => Promise.reject(new Error('stream reset')) };
    await expect(nextOrAbort(failing, new AbortController().signal)).rejects.toThrow('stream reset');
  });
});
