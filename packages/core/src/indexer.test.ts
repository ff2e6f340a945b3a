import { describe, expect, it } from 'vitest';
import type { KubeObject } from './api-meta.js';
import { Indexer, NAMESPACE_INDEX } from './indexer.js';

const pod = (name: string, labels: Record<string, string>, rv: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ns', labels, resourceVersion: rv },
});
const byLabel = (o: KubeObject) => Object.entries(o.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`);
const names = (objs: KubeObject[]) => objs.map((o) => o.metadata.name).sort();

describe('Indexer', () => {
  it('keeps every index in step with updates that change some values, none, or all, and with removal', () => {
    const ix = new Indexer<KubeObject>({ labels: byLabel });
    ix.upsert(pod('a', { app: 'web', tier: 'front' }, '1'));
    ix.upsert(pod('b', { app: 'web' }, '2'));
    // A status-like update: same index values, the newest object is what the index returns.
    const a2 = pod('a', { app: 'web', tier: 'front' }, '3');
    expect(ix.upsert(a2)?.metadata.resourceVersion).toBe('1');
    expect(ix.byIndex('labels', 'tier=front')).toEqual([a2]);
    // One value changes, one stays, one is new.
    ix.upsert(pod('a', { app: 'web', tier: 'back', zone: 'z1' }, '4'));
    expect(names(ix.byIndex('labels', 'app=web'))).toEqual(['a', 'b']);
    expect(ix.byIndex('labels', 'tier=front')).toEqual([]);
    expect(ix.indexValues('labels').sort()).toEqual(['app=web', 'tier=back', 'zone=z1']);
    ix.upsert(pod('b', {}, '5'));
    expect(names(ix.byIndex('labels', 'app=web'))).toEqual(['a']);
    ix.remove('ns/a');
    expect(ix.indexValues('labels')).toEqual([]);
    expect(names(ix.byIndex(NAMESPACE_INDEX, 'ns'))).toEqual(['b']);
  });

  it('indexes what it already holds when an index is added later', () => {
    const ix = new Indexer<KubeObject>();
    ix.upsert(pod('a', { app: 'web' }, '1'));
    ix.addIndexers({ labels: byLabel });
    expect(names(ix.byIndex('labels', 'app=web'))).toEqual(['a']);
    ix.upsert(pod('a', { app: 'db' }, '2'));
    expect(ix.byIndex('labels', 'app=web')).toEqual([]);
    expect(names(ix.byIndex('labels', 'app=db'))).toEqual(['a']);
  });
});
