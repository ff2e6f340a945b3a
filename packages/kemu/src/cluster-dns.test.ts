import { createMemoryStore, type Service } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { clusterDnsIP, dnsEndpointSlice, ensureKubeDnsService } from './cluster-dns.js';

describe('the kube-dns Service', () => {
  it('sits at the tenth address of the service range, as kubeadm puts it', () => {
    expect(clusterDnsIP()).toBe('10.96.0.10');
    expect(clusterDnsIP('10.100.0.0/16')).toBe('10.100.0.10');
    expect(clusterDnsIP('fd00:10:96::/112, 10.96.0.0/12')).toBe('fd00:10:96::a');
  });

  it('is created once, and a cluster started again over the same store keeps it', async () => {
    const store = await createMemoryStore();
    await ensureKubeDnsService(store, '10.96.0.10');
    // A second create of the same Service would be refused for its address (already allocated).
    await ensureKubeDnsService(store, '10.96.0.10');
    const svc = (await store.get('Service', 'kube-system', 'kube-dns')) as Service;
    expect(svc.spec.clusterIP).toBe('10.96.0.10');
    expect(svc.spec.ports?.map((p) => [p.name, p.port, p.protocol])).toEqual([
      ['dns', 53, 'UDP'],
      ['dns-tcp', 53, 'TCP'],
      ['metrics', 9153, 'TCP'],
    ]);
    const slice = dnsEndpointSlice('kemu-node-1', '172.18.0.10');
    expect(slice.metadata.labels?.['kubernetes.io/service-name']).toBe('kube-dns');
    expect(slice.endpoints).toEqual([{ addresses: ['172.18.0.10'], nodeName: 'kemu-node-1', conditions: { ready: true, serving: true, terminating: false } }]);
    await store.create(slice);
  });
});
