import { createMemoryStore, type KubeObject } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { makeEnvironmentVariables } from './container-env.js';
import { storeObjectSource } from './object-source.js';

const svc = (namespace: string, name: string, clusterIP: string): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { clusterIP, ports: [{ port: 80, protocol: 'TCP' }] } }) as KubeObject;

describe('storeObjectSource services', () => {
  it('gives a pod the Services of its own namespace and default/kubernetes, never another namespace\'s', async () => {
    const store = await createMemoryStore();
    for (const ns of ['ns1', 'ns2']) await store.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await store.create(svc('default', 'kubernetes', '10.96.0.1'));
    await store.create(svc('default', 'other', '10.96.0.2'));
    await store.create(svc('ns1', 'web', '10.96.1.1'));
    await store.create(svc('ns2', 'db', '10.96.2.1'));
    const src = storeObjectSource(store, 'node-1');
    expect((await src.services('ns1')).map((s) => `${s.metadata.namespace}/${s.metadata.name}`).sort()).toEqual(['default/kubernetes', 'ns1/web']);
    expect((await src.services('default')).map((s) => s.metadata.name).sort()).toEqual(['kubernetes', 'other']);
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns1' }, spec: { containers: [{ name: 'c', image: 'i' }] } } as never;
    const { env } = await makeEnvironmentVariables(pod, { name: 'c', image: 'i' }, src, { podIPs: ['10.244.0.5'], hostIPs: ['172.18.0.10'] });
    const names = env.map((e) => e.name);
    expect(names).toContain('WEB_SERVICE_HOST');
    expect(names).toContain('KUBERNETES_SERVICE_HOST');
    expect(names).not.toContain('DB_SERVICE_HOST');
    expect(names).not.toContain('OTHER_SERVICE_HOST');
  });
});
