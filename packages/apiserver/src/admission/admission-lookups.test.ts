import { createMemoryStore, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InformerAdmissionLookups, storeLookups } from './admission-lookups.js';

describe('admission lookups', () => {
  let store: Store;
  let lookups: InformerAdmissionLookups;
  beforeEach(async () => {
    store = await createMemoryStore();
    await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a', labels: { team: 'x' } } });
    await store.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'a' } });
    await store.create({ apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr', namespace: 'a' }, spec: { limits: [{ type: 'Container', defaultRequest: { cpu: '100m' } }] } });
    await store.create({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'high' }, value: 1000, globalDefault: true });
    await store.create({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fast' }, provisioner: 'x' });
    lookups = new InformerAdmissionLookups(store);
  });
  afterEach(() => lookups.stop());

  const answers = async (l: ReturnType<typeof storeLookups>) => ({
    namespace: (await l.namespace('a'))?.metadata.labels,
    missingNamespace: await l.namespace('nope'),
    serviceAccount: (await l.serviceAccount('a', 'default'))?.metadata.name,
    missingServiceAccount: await l.serviceAccount('a', 'nope'),
    limitRanges: (await l.limitRanges('a')).map((o) => o.metadata.name),
    otherLimitRanges: (await l.limitRanges('b')).map((o) => o.metadata.name),
    priorityClass: (await l.priorityClass('high'))?.value,
    missingPriorityClass: await l.priorityClass('nope'),
    priorityClasses: (await l.priorityClasses()).map((o) => o.metadata.name).sort(),
    storageClasses: (await l.storageClasses()).map((o) => o.metadata.name).sort(),
  });

  it('answers from its caches what the store answers', async () => {
    await lookups.start();
    const live = await answers(storeLookups(store));
    expect(live).toMatchObject({ namespace: { team: 'x' }, serviceAccount: 'default', limitRanges: ['lr'], priorityClass: 1000, storageClasses: ['fast'] });
    expect(live.priorityClasses).toContain('high');
    expect(await answers(lookups)).toEqual(live);
  });

  it('reads the store for a namespace, ServiceAccount, LimitRange or PriorityClass its caches have not seen yet', async () => {
    // Not started: every cache is empty, as it is for objects whose watch events are still on the way.
    expect(await lookups.namespace('a')).toMatchObject({ metadata: { name: 'a' } });
    expect(await lookups.serviceAccount('a', 'default')).toMatchObject({ metadata: { name: 'default' } });
    expect((await lookups.limitRanges('a')).map((o) => o.metadata.name)).toEqual(['lr']);
    expect(await lookups.priorityClass('high')).toMatchObject({ value: 1000 });
    expect(await lookups.serviceAccount('a', 'nope')).toBeUndefined();
  });
});
