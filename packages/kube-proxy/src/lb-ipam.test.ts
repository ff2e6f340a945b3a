import { createMemoryStore } from '@kemu/core';
import { describe, expect, it } from 'vitest';
import { LoadBalancerIpam } from './lb-ipam.js';
import { service } from './test-helpers.js';

describe('load-balancer addresses', () => {
  it('gives each LoadBalancer Service one pool address, reuses freed ones, and reports an empty pool', async () => {
    const store = await createMemoryStore();
    const errors: string[] = [];
    const ipam = new LoadBalancerIpam({ store, pool: '172.18.255.0/30', onError: (e) => errors.push((e as Error).message) });
    await ipam.start();
    try {
      const lb = (name: string) => service(name, { type: 'LoadBalancer', ports: [{ name: 'http', protocol: 'TCP', port: 80 }] });
      const ipOf = async (name: string) => (await store.get('Service', 'default', name)).status?.loadBalancer?.ingress?.[0]?.ip;
      await store.create(lb('a'));
      await store.create(lb('b'));
      await expect.poll(async () => [await ipOf('a'), await ipOf('b')].sort()).toEqual(['172.18.255.1', '172.18.255.2']);
      await store.create(lb('c'));
      await expect.poll(() => errors).toEqual(['no address left in load-balancer pool 172.18.255.0/30 for service default/c']);
      expect(await ipOf('c')).toBeUndefined();
      const freed = await ipOf('a');
      await store.delete('Service', 'default', 'a');
      await store.create(lb('d'));
      await expect.poll(() => ipOf('d')).toBe(freed);
      expect(() => new LoadBalancerIpam({ store, pool: 'fd00::/64' })).toThrow(/invalid load-balancer pool "fd00::\/64"/);
    } finally {
      await ipam.stop();
      await store.close();
    }
  });
});
