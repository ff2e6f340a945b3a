import { createMemoryStore, type EndpointSlice, type Endpoints, type Service, type Store } from '@kemu/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { advertiseAddress, KubernetesServiceReconciler } from './kubernetes-service.js';

describe('the kubernetes Service reconciler', () => {
  let store: Store;
  beforeEach(async () => {
    store = await createMemoryStore();
  });
  afterEach(() => store.close());

  it('creates the Service at the first address of the service CIDR, and Endpoints and an EndpointSlice at the API server', async () => {
    await new KubernetesServiceReconciler({ store, address: '192.0.2.7', port: 6443 }).reconcile();
    const svc = (await store.get('Service', 'default', 'kubernetes')) as Service;
    expect(svc.metadata.labels).toEqual({ component: 'apiserver', provider: 'kubernetes' });
    expect(svc.spec).toMatchObject({ type: 'ClusterIP', clusterIP: '10.96.0.1', sessionAffinity: 'None', ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }] });
    const ep = (await store.get('Endpoints', 'default', 'kubernetes')) as Endpoints;
    expect(ep.metadata.labels).toEqual({ 'endpointslice.kubernetes.io/skip-mirror': 'true' });
    expect(ep.subsets).toEqual([{ addresses: [{ ip: '192.0.2.7' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }]);
    const slice = (await store.get('EndpointSlice', 'default', 'kubernetes')) as EndpointSlice;
    expect(slice.metadata.labels).toEqual({ 'kubernetes.io/service-name': 'kubernetes' });
    expect(slice).toMatchObject({ addressType: 'IPv4', endpoints: [{ addresses: ['192.0.2.7'], conditions: { ready: true } }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] });
  });

  it('recreates what was deleted and repairs what was changed, and follows a new API server port', async () => {
    await new KubernetesServiceReconciler({ store, address: '192.0.2.7', port: 6443 }).reconcile();
    await store.delete('Service', 'default', 'kubernetes');
    await store.patch('Endpoints', 'default', 'kubernetes', { subsets: [{ addresses: [{ ip: '192.0.2.99' }], ports: [{ name: 'https', port: 1, protocol: 'TCP' }] }] }, 'merge');
    // The API server came back on another port (kemu up picks a free one each time).
    const r = new KubernetesServiceReconciler({ store, address: '192.0.2.7', port: 7443, intervalMs: 20 });
    await r.start();
    try {
      expect(((await store.get('Service', 'default', 'kubernetes')) as Service).spec.ports).toEqual([{ name: 'https', port: 443, protocol: 'TCP', targetPort: 7443 }]);
      expect(((await store.get('Endpoints', 'default', 'kubernetes')) as Endpoints).subsets).toEqual([{ addresses: [{ ip: '192.0.2.7' }], ports: [{ name: 'https', port: 7443, protocol: 'TCP' }] }]);
      expect(((await store.get('EndpointSlice', 'default', 'kubernetes')) as EndpointSlice).ports).toEqual([{ name: 'https', port: 7443, protocol: 'TCP' }]);
      // Deleted while running: back within an interval.
      await store.delete('EndpointSlice', 'default', 'kubernetes');
      const end = Date.now() + 5000;
      let back = false;
      while (!back && Date.now() < end) {
        back = await store.get('EndpointSlice', 'default', 'kubernetes').then(() => true, () => false);
        await new Promise((res) => setTimeout(res, 20));
      }
      expect(back).toBe(true);
    } finally {
      await r.stop();
    }
  });

  it('advertises a non-loopback address as kube-apiserver resolves its bind address', () => {
    const ifaces = { lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }], eth0: [{ address: '192.0.2.10', family: 'IPv4', internal: false }] } as never;
    expect(advertiseAddress('10.1.2.3', '172.18.0.1', ifaces)).toBe('10.1.2.3');
    expect(advertiseAddress('127.0.0.1', '172.18.0.1', ifaces)).toBe('192.0.2.10');
    expect(advertiseAddress('0.0.0.0', '172.18.0.1', ifaces)).toBe('192.0.2.10');
    expect(advertiseAddress('127.0.0.1', '172.18.0.1', { lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }] } as never)).toBe('172.18.0.1');
  });
});
