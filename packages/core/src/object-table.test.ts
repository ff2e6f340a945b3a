import { describe, expect, it } from 'vitest';
import type { KubeObject } from './api-meta.js';
import { MemoryStore } from './store-memory.js';
import { ObjectTable, TEXT_KINDS } from './object-table.js';

const ev = (name: string, count = 1): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Event', metadata: { name, namespace: 'default', resourceVersion: '7' }, reason: 'Started', count }) as KubeObject;

describe('ObjectTable', () => {
  it('hands back the very object for kinds held as objects', () => {
    const t = new ObjectTable();
    const o = ev('a');
    t.set('default/a', o);
    expect(t.get('default/a')).toBe(o);
    expect([...t.values()][0]).toBe(o);
  });

  it('holds a text kind as JSON and decodes a frozen copy on each read', () => {
    const t = new ObjectTable(true);
    t.set('default/a', ev('a', 3));
    t.set('default/b', ev('b'));
    const a = t.get('default/a')!;
    expect(a).toEqual(ev('a', 3));
    expect(Object.isFrozen(a) && Object.isFrozen(a.metadata)).toBe(true);
    expect(t.get('default/a')).not.toBe(a);
    expect([...t.values()].map((o) => o.metadata.name)).toEqual(['a', 'b']);
    t.set('other/c', { ...ev('c'), metadata: { name: 'c', namespace: 'other' } });
    expect([...t.values('other')].map((o) => o.metadata.name)).toEqual(['c']);
    t.delete('other/c');
    expect([...t].map(([k, o]) => `${k}=${(o as unknown as { count: number }).count}`)).toEqual(['default/a=3', 'default/b=1']);
    expect(t.delete('default/a')).toBe(true);
    expect(t.has('default/a')).toBe(false);
    expect(t.size).toBe(1);
  });

  it('is what the memory store keeps Events in, and reads, lists and patches of them work', async () => {
    expect(TEXT_KINDS.has('Event')).toBe(true);
    const store = await MemoryStore.open();
    await store.create({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'p.1', namespace: 'default' }, involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' }, reason: 'Pulled', message: 'm', count: 1 } as KubeObject);
    const patched = await store.patch('Event', 'default', 'p.1', { count: 2 }, 'merge');
    expect((patched as unknown as { count: number }).count).toBe(2);
    const got = await store.get('Event', 'default', 'p.1');
    expect((got as unknown as { count: number }).count).toBe(2);
    expect(got.metadata.resourceVersion).toBe(patched.metadata.resourceVersion);
    const list = await store.list('Event', { namespace: 'default', fieldSelector: 'involvedObject.name=p' });
    expect(list.items.map((o) => o.metadata.name)).toEqual(['p.1']);
    await store.delete('Event', 'default', 'p.1');
    await expect(store.get('Event', 'default', 'p.1')).rejects.toThrow(/not found/);
  });
});
