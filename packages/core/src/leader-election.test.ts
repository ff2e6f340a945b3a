import { describe, expect, it } from 'vitest';
import type { Lease } from './api-misc.js';
import { LeaderElector } from './leader-election.js';
import { MemoryStore } from './store-memory.js';

async function until(cond: () => boolean, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function contender(store: MemoryStore, identity: string, events: string[], release = true) {
  const el = new LeaderElector({
    store,
    name: 'kemu-test',
    identity,
    leaseDurationMs: 1000,
    renewDeadlineMs: 600,
    retryPeriodMs: 100,
    releaseOnCancel: release,
    callbacks: {
      onStartedLeading: () => {
        events.push(`start:${identity}`);
      },
      onStoppedLeading: () => {
        events.push(`stop:${identity}`);
      },
    },
  });
  const done = el.run();
  return { el, done };
}

describe('LeaderElector', () => {
  it('two contenders: exactly one leads; the other takes over after the lease expires', async () => {
    const store = await MemoryStore.open();
    const events: string[] = [];
    const a = contender(store, 'a', events, false);
    await until(() => a.el.isLeader());
    const b = contender(store, 'b', events, false);
    await new Promise((r) => setTimeout(r, 400));
    expect(a.el.isLeader()).toBe(true);
    expect(b.el.isLeader()).toBe(false);
    expect(b.el.getLeader()).toBe('a');
    // "a" dies without releasing: "b" must wait for the lease to expire, then take over.
    const t0 = Date.now();
    a.el.stop();
    await a.done;
    await until(() => b.el.isLeader());
    expect(Date.now() - t0).toBeGreaterThanOrEqual(800);
    const lease = (await store.get('Lease', 'kube-system', 'kemu-test')) as Lease;
    expect(lease.spec?.holderIdentity).toBe('b');
    expect(lease.spec?.leaseTransitions).toBe(1);
    expect(lease.spec?.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    b.el.stop();
    await b.done;
    expect(events).toEqual(['start:a', 'stop:a', 'start:b', 'stop:b']);
    await store.close();
  });

  it('a released lease is taken over at once', async () => {
    const store = await MemoryStore.open();
    const events: string[] = [];
    const a = contender(store, 'a', events);
    await until(() => a.el.isLeader());
    const b = contender(store, 'b', events);
    await new Promise((r) => setTimeout(r, 150));
    const t0 = Date.now();
    a.el.stop();
    await a.done;
    await until(() => b.el.isLeader());
    expect(Date.now() - t0).toBeLessThan(800);
    b.el.stop();
    await b.done;
    await store.close();
  });

  it('a leader that cannot renew steps down', async () => {
    const store = await MemoryStore.open();
    const events: string[] = [];
    const a = contender(store, 'a', events, false);
    await until(() => a.el.isLeader());
    // Someone else forcibly takes the lease.
    const lease = (await store.get('Lease', 'kube-system', 'kemu-test')) as Lease;
    await store.update({ ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', renewTime: lease.spec?.renewTime } });
    await a.done;
    expect(a.el.isLeader()).toBe(false);
    expect(events).toEqual(['start:a', 'stop:a']);
    await store.close();
  });
});
