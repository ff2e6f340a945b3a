import { describe, expect, it } from 'vitest';
import type { Pod } from './api-core.js';
import { Controller } from './controller.js';
import { NODE_NAME_INDEX, nodeNameIndexFunc } from './indexer.js';
import { InformerFactory, SharedInformer } from './informer.js';
import { ItemExponentialFailureRateLimiter } from './rate-limiter.js';
import { MemoryStore } from './store-memory.js';
import { RateLimitingQueue } from './workqueue.js';

const pod = (name: string, labels?: Record<string, string>): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', ...(labels ? { labels } : {}) },
  spec: { containers: [{ name: 'c', image: 'busybox:1' }] },
});
const bind = (s: MemoryStore, name: string, node: string) =>
  s.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name, namespace: 'default' }, target: { kind: 'Node', name: node } });

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('SharedInformer', () => {
  it('lists then watches into an indexed cache and calls handlers', async () => {
    const store = await MemoryStore.open();
    await store.create(pod('a'));
    await bind(store, 'a', 'n1');
    const inf = new SharedInformer(store, 'Pod');
    inf.addIndexers({ [NODE_NAME_INDEX]: nodeNameIndexFunc });
    const log: string[] = [];
    inf.addEventHandler({
      onAdd: (p, initial) => log.push(`add:${p.metadata.name}:${initial}`),
      onUpdate: (o, n) => log.push(`update:${n.metadata.name}:${o.spec.nodeName ?? ''}->${n.spec.nodeName ?? ''}`),
      onDelete: (p) => log.push(`delete:${p.metadata.name}`),
    });
    inf.start();
    expect(await inf.waitForSync()).toBe(true);
    expect(log).toEqual(['add:a:true']);
    await store.create(pod('b'));
    await bind(store, 'b', 'n2');
    await store.delete('Pod', 'default', 'a', { gracePeriodSeconds: 0 });
    await until(() => log.length === 4);
    expect(log.slice(1)).toEqual(['add:b:false', 'update:b:->n2', 'delete:a']);
    expect(inf.lister.byIndex(NODE_NAME_INDEX, 'n2').map((p) => p.metadata.name)).toEqual(['b']);
    expect(inf.lister.byIndex(NODE_NAME_INDEX, 'n1')).toEqual([]);
    expect(inf.lister.namespace('default').get('b')?.spec.nodeName).toBe('n2');
    expect(inf.lister.list('app=none')).toEqual([]);
    // A late handler gets the current state as adds.
    const late: string[] = [];
    inf.addEventHandler({ onAdd: (p) => late.push(p.metadata.name!) });
    expect(late).toEqual(['b']);
    await inf.stop();
    await store.close();
  });

  it('relists after a 410 and reports what changed while it was away', async () => {
    const store = await MemoryStore.open({ historySize: 3 });
    await store.create(pod('keep'));
    await store.create(pod('gone'));
    const inf = new SharedInformer(store, 'Pod', { namespace: 'default' });
    const log: string[] = [];
    inf.addEventHandler({
      onAdd: (p, initial) => log.push(`add:${p.metadata.name}:${initial}`),
      onDelete: (p, unknown) => log.push(`delete:${p.metadata.name}:${unknown}`),
    });
    inf.start();
    await inf.waitForSync();
    // Simulate a watch that broke and must resume from a compacted resourceVersion.
    await inf.stop();
    await store.delete('Pod', 'default', 'gone');
    for (let i = 0; i < 5; i++) await store.create(pod(`new-${i}`));
    store.compact();
    inf.start();
    await until(() => inf.listCount >= 2 && inf.indexer.size === 6);
    expect(log).toContain('delete:gone:true');
    expect(log).toContain('add:new-4:true');
    await inf.stop();
    await store.close();
  });

  it('resyncs handlers periodically', async () => {
    const store = await MemoryStore.open();
    await store.create(pod('a'));
    const inf = new SharedInformer(store, 'Pod', { resyncPeriodMs: 30 });
    let resyncs = 0;
    inf.addEventHandler({ onUpdate: (o, n) => o === n && resyncs++ });
    inf.start();
    await until(() => resyncs >= 2);
    await inf.stop();
    await store.close();
  });

  it('the factory shares one informer per kind and selector', async () => {
    const store = await MemoryStore.open();
    const f = new InformerFactory(store);
    expect(f.informer('Pod')).toBe(f.informer('Pod'));
    expect(f.informer('Pod', { namespace: 'x' })).not.toBe(f.informer('Pod'));
    f.start();
    expect(await f.waitForCacheSync()).toBe(true);
    await f.stop();
    await store.close();
  });
});

describe('Controller', () => {
  it('reconciles keys from informer events, retrying failures with backoff', async () => {
    const store = await MemoryStore.open();
    const inf = new SharedInformer(store, 'Pod');
    const attempts = new Map<string, number>();
    const ctl = new Controller({
      name: 'test',
      workers: 2,
      informers: [inf],
      queue: new RateLimitingQueue(new ItemExponentialFailureRateLimiter(5, 50)),
      reconcile: async (key) => {
        const n = (attempts.get(key) ?? 0) + 1;
        attempts.set(key, n);
        if (key === 'default/flaky' && n < 3) throw new Error('not yet');
        return undefined;
      },
    });
    inf.addEventHandler(ctl.handler());
    await store.create(pod('ok'));
    await store.create(pod('flaky'));
    await ctl.start();
    await until(() => (attempts.get('default/flaky') ?? 0) >= 3 && attempts.has('default/ok'));
    expect(ctl.stats.failed).toBe(2);
    expect(ctl.queue.numRequeues('default/flaky')).toBe(0); // forgotten after success
    await ctl.stop();
    await inf.stop();
    await store.close();
  });

  it('drops a key after maxRetries and honours requeueAfter', async () => {
    const store = await MemoryStore.open();
    let always = 0;
    let later = 0;
    const ctl = new Controller({
      name: 'drop',
      maxRetries: 2,
      queue: new RateLimitingQueue(new ItemExponentialFailureRateLimiter(1, 5)),
      reconcile: (key) => {
        if (key === 'bad') {
          always++;
          throw new Error('boom');
        }
        later++;
        return later < 3 ? { requeueAfterMs: 10 } : undefined;
      },
    });
    await ctl.start();
    ctl.enqueue('bad');
    ctl.enqueue('later');
    await until(() => ctl.stats.dropped === 1 && later === 3);
    expect(always).toBe(3);
    await ctl.stop();
    await store.close();
  });

  it('lets timers run between reconciles while a backlog drains', async () => {
    // Components of a composed cluster share one event loop: a worker that went from key to key on
    // promises alone would hold every timer (lease renewals, resyncs) back until its queue was empty.
    let reconciled = 0;
    const busy = (ms: number) => {
      const end = performance.now() + ms;
      while (performance.now() < end);
    };
    // Each reconcile takes 0.2 ms, so the backlog (100 ms) outlasts any time slice.
    const ctl = new Controller({ name: 'backlog', reconcile: async () => void (busy(0.2), reconciled++) });
    for (let i = 0; i < 500; i++) ctl.enqueue(`k${i}`);
    let atTimer = -1;
    const timer = new Promise<void>((r) => setTimeout(() => r(void (atTimer = reconciled)), 0));
    await ctl.start();
    await timer;
    expect(atTimer).toBeLessThan(500);
    await until(() => reconciled === 500);
    await ctl.stop();
  });
});
