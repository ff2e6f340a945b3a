import { createMemoryStore } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { LEASE_NAMESPACE, leaseSubnet, subnetLeaseName } from './agent.js';

const node = (name: string, podCIDR?: string) => ({ apiVersion: 'v1' as const, kind: 'Node' as const, metadata: { name }, spec: podCIDR ? { podCIDR } : {} });

describe('subnet leases', () => {
  it('gives nodes leasing at the same time distinct subnets, and keeps a preset podCIDR', async () => {
    const store = await createMemoryStore();
    await store.create(node('preset', '10.244.0.0/24'));
    const names = Array.from({ length: 8 }, (_, i) => `n${i}`);
    for (const n of names) await store.create(node(n));
    const got = await Promise.all(names.map((n) => leaseSubnet(store, n)));
    expect(new Set(got).size).toBe(8);
    expect(got).not.toContain('10.244.0.0/24');
    expect(got.every((c) => /^10\.244\.([1-8])\.0\/24$/.test(c))).toBe(true);
    expect(await leaseSubnet(store, 'preset')).toBe('10.244.0.0/24');
    // Asking again returns the same subnet.
    expect(await leaseSubnet(store, 'n3')).toBe(got[3]);
    const lease = await store.get('Lease', LEASE_NAMESPACE, subnetLeaseName(got[3]!));
    expect(lease.spec?.holderIdentity).toBe('n3');
  });

  it('reuses the subnet of a node that was deleted, and says when the network is full', async () => {
    const store = await createMemoryStore();
    for (const n of ['a', 'b']) await store.create(node(n));
    const a = await leaseSubnet(store, 'a', '10.50.0.0/23', 24);
    const b = await leaseSubnet(store, 'b', '10.50.0.0/23', 24);
    expect([a, b]).toEqual(['10.50.0.0/24', '10.50.1.0/24']);
    await store.create(node('c'));
    await expect(leaseSubnet(store, 'c', '10.50.0.0/23', 24)).rejects.toThrow('no free /24 subnet left in 10.50.0.0/23');
    await store.delete('Node', '', 'a');
    expect(await leaseSubnet(store, 'c', '10.50.0.0/23', 24)).toBe('10.50.0.0/24');
    expect((await store.get('Lease', LEASE_NAMESPACE, subnetLeaseName('10.50.0.0/24'))).spec?.holderIdentity).toBe('c');
    await store.create(node('d'));
    await expect(leaseSubnet(store, 'd', 'fd00::/64', 24)).rejects.toThrow('network "fd00::/64": must be an IPv4 CIDR');
    await expect(leaseSubnet(store, 'd', '10.60.0.0/16', 31)).rejects.toThrow('subnetLen 31: must be between 16 and 30');
  });
});
