import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ETCD_BIN, type EtcdServer, program, requirePeers, startEtcd } from '@kemu/test-peers';
import type { KubeObject } from './api-meta.js';
import { NODE_NAME_INDEX, nodeNameIndexFunc } from './indexer.js';
import { SharedInformer } from './informer.js';
import { storeContract } from './store-contract.suite.js';
import { EtcdStore } from './store-etcd.js';

describe.runIf(requirePeers('the etcd backend tests', [program(ETCD_BIN, 'etcd-server')]))('etcd backend', () => {
  let etcd: EtcdServer;
  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  storeContract('etcd', async () => {
    const store = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/contract/', bookmarkIntervalMs: 100 });
    return { store, compact: (rv) => store.compact(Number(rv)), cleanup: () => store.close() };
  });

  it('two stores on one etcd share state and see each other through watches', async () => {
    const a = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/shared/' });
    const b = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/shared/' });
    const w = await b.watch('ConfigMap', { namespace: 'default', resourceVersion: await b.resourceVersion() });
    const created = await a.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { k: 'v' } });
    const got = await b.get('ConfigMap', 'default', 'x');
    expect(got).toEqual(created);
    const it1 = w[Symbol.asyncIterator]();
    const ev = (await it1.next()).value!;
    expect(ev.type).toBe('ADDED');
    expect((ev.object as KubeObject).metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    // Optimistic concurrency across processes: b's stale copy loses.
    await a.update({ ...created, data: { k: 'a' } });
    await expect(b.update({ ...got, data: { k: 'b' } })).rejects.toMatchObject({ reason: 'Conflict', code: 409 });
    w.stop();
    await a.close();
    await b.close();
  });

  it('resourceVersion is the etcd mod revision; etcd compaction makes older watches 410', async () => {
    const a = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/compact/' });
    const first = await a.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c1' } });
    const kv = await a.client.get('/compact/core/configmaps/default/c1').exec();
    expect(first.metadata.resourceVersion).toBe(String(kv.kvs[0].mod_revision));
    await a.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c2' } });
    const third = await a.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c3' } });
    await a.client.kv.compact({ revision: third.metadata.resourceVersion!, physical: true });
    // A fresh process has no watch cache reaching back: etcd itself refuses the old revision.
    const b = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/compact/', noBootstrap: true });
    const err = await b.watch('ConfigMap', { resourceVersion: first.metadata.resourceVersion }).catch((e) => e);
    expect(err.code).toBe(410);
    expect(err.reason).toBe('Expired');
    expect(err.message).toMatch(/too old resource version/);
    // From the compaction point on, history is still there.
    const ok = await b.watch('ConfigMap', { resourceVersion: String(Number(third.metadata.resourceVersion) - 1) });
    const [ev] = [(await ok[Symbol.asyncIterator]().next()).value!];
    expect(ev.type).toBe('ADDED');
    expect((ev.object as KubeObject).metadata.name).toBe('c3');
    ok.stop();
    await a.close();
    await b.close();
  });

  it('reads large kinds in pages at one revision (lists, watch cache start, pagination)', async () => {
    const a = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/paged/', rangePageSize: 7 });
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => a.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `m${String(i).padStart(2, '0')}`, labels: { odd: String(i % 2) } } })),
    );
    const all = await a.list('ConfigMap', { namespace: 'default' });
    expect(all.items).toHaveLength(40);
    const odd = await a.list('ConfigMap', { labelSelector: 'odd=1', limit: 15 });
    expect(odd.items).toHaveLength(15);
    const rest = await a.list('ConfigMap', { labelSelector: 'odd=1', limit: 15, continue: odd.metadata.continue });
    expect([...odd.items, ...rest.items].map((i) => i.metadata.name)).toEqual(Array.from({ length: 20 }, (_, i) => `m${String(2 * i + 1).padStart(2, '0')}`));
    expect(rest.metadata.continue).toBeUndefined();
    const w = await a.watch('ConfigMap', { namespace: 'default' });
    let added = 0;
    for await (const ev of w) {
      if (ev.type === 'ADDED') added++;
      if (added === 40) break;
    }
    expect(added).toBe(40);
    await a.close();
  });

  it('an informer in one process follows writes made by another', async () => {
    const writer = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/informer/' });
    const reader = await EtcdStore.open({ endpoints: etcd.endpoint, prefix: '/informer/' });
    await writer.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a' }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } });
    const inf = new SharedInformer(reader, 'Pod');
    inf.addIndexers({ [NODE_NAME_INDEX]: nodeNameIndexFunc });
    const log: string[] = [];
    inf.addEventHandler({
      onAdd: (p) => log.push(`add:${p.metadata.name}`),
      onUpdate: (_o, n) => log.push(`update:${n.metadata.name}:${n.spec.nodeName ?? ''}`),
      onDelete: (p) => log.push(`delete:${p.metadata.name}`),
    });
    inf.start();
    expect(await inf.waitForSync()).toBe(true);
    await writer.bind({ apiVersion: 'v1', kind: 'Binding', metadata: { name: 'a', namespace: 'default' }, target: { kind: 'Node', name: 'n1' } });
    await writer.delete('Pod', 'default', 'a', { gracePeriodSeconds: 0 });
    const end = Date.now() + 10_000;
    while (log.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual(['add:a', 'update:a:n1', 'delete:a']);
    expect(inf.lister.byIndex(NODE_NAME_INDEX, 'n1')).toEqual([]);
    await inf.stop();
    await writer.close();
    await reader.close();
  });

  it('reports an unreachable etcd as ServiceUnavailable', async () => {
    const err = await EtcdStore.open({ endpoints: 'http://127.0.0.1:1', clientOptions: { dialTimeout: 500 } }).catch((e) => e);
    expect(err.code).toBe(503);
  });
});
